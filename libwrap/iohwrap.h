/* iohwrap.h - wrap a save/restore fd behind the iohelper process when needed
 *
 * Contract of libwrap (prefix ioh_wrap_). Management code opens the image file, calls
 * ioh_wrap_new() and hands QEMU whatever fd comes back in *fd: the file itself when no
 * helper is needed, else the caller's end of a 1 MiB pipe whose other end is served by
 * an `iohelper` child process.
 *
 * Library code here never prints and never aborts on misuse: every error is a GError
 * in the IOH_WRAP_ERROR domain (or G_IO_ERROR / G_SPAWN_ERROR passed through).
 */
#pragma once

#include <glib.h>
#include <gio/gio.h>

G_BEGIN_DECLS

#define IOH_WRAP_ERROR (ioh_wrap_error_quark())
GQuark ioh_wrap_error_quark(void);

typedef enum {
    IOH_WRAP_ERROR_INVALID,   /* bad flags or arguments */
    IOH_WRAP_ERROR_BADFD,     /* fd not open, or opened read-write */
    IOH_WRAP_ERROR_NOHELPER,  /* helper binary missing or not executable */
    IOH_WRAP_ERROR_FAILED,    /* the helper reported a failure (message is its stderr line) */
    IOH_WRAP_ERROR_KILLED,    /* the helper was killed by a signal */
} IohWrapError;

/**
 * IohWrapFlags:
 * @IOH_WRAP_NONE: keep the page cache; no helper unless another flag needs one.
 * @IOH_WRAP_DIRECT: bypass the page cache with O_DIRECT (needs a helper).
 * @IOH_WRAP_FADVISE: bypass the page cache with sync_file_range + fadvise (needs a helper).
 * @IOH_WRAP_POLLABLE: the caller needs a pollable fd, e.g. for a live guest (needs a helper).
 *
 * DIRECT and FADVISE are mutually exclusive.
 */
typedef enum {
    IOH_WRAP_NONE = 0,
    IOH_WRAP_DIRECT = 1 << 0,
    IOH_WRAP_FADVISE = 1 << 1,
    IOH_WRAP_POLLABLE = 1 << 2,
} IohWrapFlags;

/**
 * IohWrapParams:
 * @offset: byte offset in the file where the stream starts (a multiple of 4096 with
 *          IOH_WRAP_DIRECT); 0 for a plain image.
 * @length: restore only: deliver exactly this many bytes of stream; 0 means to EOF.
 * @progress_interval_ms: how often the helper reports progress; 0 means 1000.
 */
typedef struct {
    guint64 offset;
    guint64 length;
    guint progress_interval_ms;
} IohWrapParams;

/**
 * IohWrapProgressFunc:
 * @bytes_written: bytes the helper has written to the file (save) or to the pipe (restore).
 * @bytes_synced: bytes known durable on the file (save); equals @bytes_written on restore.
 *
 * Called in the GMainContext that was thread-default when ioh_wrap_new() ran.
 */
typedef void (*IohWrapProgressFunc)(guint64 bytes_written, guint64 bytes_synced,
                                    gpointer user_data);

typedef struct _IohWrap IohWrap;

/**
 * ioh_wrap_new:
 * @fd: (inout): the open image file. Its access mode gives the direction: O_WRONLY is a
 *      save, O_RDONLY a restore; O_RDWR is refused. When a helper is spawned, *fd is
 *      replaced by the caller's end of the pipe (O_CLOEXEC) and the original fd is
 *      closed in this process; otherwise *fd is left untouched.
 * @path: the file's path, used in messages only.
 * @flags: what the caller needs.
 * @params: (nullable): stream placement and progress period; NULL for defaults.
 *
 * Spawns `iohelper` (found at the installed libexec path, or $IOHELPER_PATH) only when
 * @flags ask for it. Returns NULL and sets @error on failure (fd then untouched).
 */
IohWrap *ioh_wrap_new(int *fd, const char *path, IohWrapFlags flags,
                      const IohWrapParams *params, GError **error);

/* TRUE when a helper process serves the fd. */
gboolean ioh_wrap_is_spawned(IohWrap *wrap);

/* PID of the helper, or 0 when none was spawned. */
GPid ioh_wrap_get_pid(IohWrap *wrap);

/* Register a progress callback (replaces any previous one). */
void ioh_wrap_set_progress_func(IohWrap *wrap, IohWrapProgressFunc func,
                                gpointer user_data, GDestroyNotify notify);

/* Latest progress the helper reported, without a main loop (reads what is pending). */
void ioh_wrap_get_progress(IohWrap *wrap, guint64 *ret_written, guint64 *ret_synced);

/**
 * ioh_wrap_finish:
 * Closes the caller's end of the pipe if the caller has not (the caller must not use
 * that fd afterwards), waits for the helper and returns TRUE only when it exited 0:
 * every byte written and durable. On failure the GError message is the helper's own
 * stderr line, or "helper killed by signal N". Without a helper, returns TRUE.
 * Idempotent: later calls return the first result again.
 */
gboolean ioh_wrap_finish(IohWrap *wrap, GError **error);

/* The same for GMainLoop code: @callback runs in the thread-default context. */
void ioh_wrap_finish_async(IohWrap *wrap, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data);
gboolean ioh_wrap_finish_finish(IohWrap *wrap, GAsyncResult *result, GError **error);

/* Frees @wrap (NULL allowed). A helper still running is killed (SIGKILL) and reaped. */
void ioh_wrap_free(IohWrap *wrap);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohWrap, ioh_wrap_free)

G_END_DECLS
