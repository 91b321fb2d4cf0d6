/* iohwrap.h - wrap a save/restore fd behind the iohelper process when needed
 *
 * Contract of libwrap (prefix ioh_wrap_; pkg-config name iohwrap; #include <iohwrap.h>
 * with the flags from `pkg-config --cflags iohwrap`). Management code opens the image
 * file, calls ioh_wrap_new() and hands QEMU whatever fd comes back in *fd: the file
 * itself when no helper is needed, else the caller's end of a 1 MiB pipe whose other end
 * is served by an `iohelper` child process. When the migration is over it calls
 * ioh_wrap_finish() (or ioh_wrap_finish_async()) and ioh_wrap_free().
 *
 * Library code here never prints and never aborts on misuse: every error is a GError
 * in the IOH_WRAP_ERROR domain (or G_IO_ERROR / G_SPAWN_ERROR passed through).
 *
 * The process that uses a wrap must ignore SIGPIPE (as every daemon does): when a helper
 * dies, writes to the pipe fail with EPIPE instead of killing the writer. The library
 * does not change signal dispositions itself.
 *
 * Threads: all functions may be called from any thread; one wrap is used by one owner at
 * a time (do not free it while another thread finishes it).
 *
 * Changes to the first contract (see docs/libwrap.md):
 *  - an fd that has O_DIRECT set always gets a helper (as if IOH_WRAP_DIRECT): QEMU
 *    cannot write its unaligned stream to it. O_DIRECT with IOH_WRAP_FADVISE is refused.
 *  - IohWrapParams.offset 0 means "where the fd stands now" (libvirt writes its header
 *    and hands the fd over positioned after it); a non-zero offset is applied on both
 *    paths (without a helper, by seeking the fd), so both place the stream alike.
 *  - the original fd is taken over by the wrap and closed at the latest by
 *    ioh_wrap_free(); the caller must not use that number after a spawn.
 *  - without a helper, finishing a save fdatasyncs the file: TRUE is durable either way.
 *  - the finish closes the caller's end only if that number still names the pipe.
 */
#pragma once

#include <glib.h>
#include <gio/gio.h>

G_BEGIN_DECLS

#define IOH_WRAP_ERROR (ioh_wrap_error_quark())
GQuark ioh_wrap_error_quark(void);

/**
 * IohWrapError:
 * @IOH_WRAP_ERROR_INVALID: bad flags or arguments, or a finish already pending.
 * @IOH_WRAP_ERROR_BADFD: the fd is not open, is opened read-write, or cannot be seeked.
 * @IOH_WRAP_ERROR_NOHELPER: the helper binary is missing or not executable.
 * @IOH_WRAP_ERROR_FAILED: the helper reported a failure; the message is its own stderr
 *     line without the "iohelper: " prefix, e.g. "write /x.save: No space left on device".
 * @IOH_WRAP_ERROR_KILLED: the helper was killed by a signal: "helper killed by signal N".
 *
 * A cancelled ioh_wrap_finish_async(), or a wrap freed while its helper ran, gives
 * G_IO_ERROR_CANCELLED instead.
 */
typedef enum {
    IOH_WRAP_ERROR_INVALID,
    IOH_WRAP_ERROR_BADFD,
    IOH_WRAP_ERROR_NOHELPER,
    IOH_WRAP_ERROR_FAILED,
    IOH_WRAP_ERROR_KILLED,
} IohWrapError;

/**
 * IohWrapFlags:
 * @IOH_WRAP_NONE: keep the page cache; no helper unless another flag needs one.
 * @IOH_WRAP_DIRECT: bypass the page cache with O_DIRECT (needs a helper).
 * @IOH_WRAP_FADVISE: bypass the page cache with sync_file_range + fadvise (needs a helper).
 * @IOH_WRAP_POLLABLE: the caller needs a pollable fd, e.g. for a live guest: QEMU must
 *     never block on a regular file (needs a helper).
 *
 * DIRECT and FADVISE are mutually exclusive. With none of the three flags no helper is
 * spawned and the fd is left alone: a paused guest saved straight to the file was
 * measured at 42 s against 2 min 06 s through a helper (90 GB guest).
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
 *          IOH_WRAP_DIRECT). 0 means the fd's current position (a plain image opened
 *          just now starts at 0). A non-zero offset is applied on both paths: without
 *          a helper libwrap seeks the fd there. A save truncates nothing: open the
 *          file with O_TRUNC (or ftruncate it to @offset) when it may be longer.
 * @length: restore only: deliver exactly this many bytes of stream; 0 means to EOF.
 *          A file shorter than that fails the restore. Ignored on save and without a
 *          helper. Pass it when the file has bytes past the stream: else the helper
 *          fails with EPIPE when QEMU closes the pipe before the file's end.
 * @progress_interval_ms: how often the helper reports progress; 0 means 1000; values
 *          are clamped to 10..3600000.
 *
 * Zero-initialise it (`IohWrapParams p = { 0 };`): fields may be added at the end.
 */
typedef struct {
    guint64 offset;
    guint64 length;
    guint progress_interval_ms;
} IohWrapParams;

/**
 * IohWrapProgressFunc:
 * @bytes_written: bytes the helper has written to the file (save) or to the pipe (restore).
 * @bytes_synced: bytes that have left the page cache (save): IOH_WRAP_DIRECT and
 *     IOH_WRAP_FADVISE advance it as they go, a buffered save (IOH_WRAP_POLLABLE alone)
 *     reports 0 until its final fdatasync. Equals @bytes_written on restore.
 * @user_data: as given to ioh_wrap_set_progress_func().
 *
 * Called in the GMainContext that was thread-default when ioh_wrap_new() ran, each time
 * the helper reports new figures (every IohWrapParams.progress_interval_ms) and once
 * more after the finish with the final figures: on success both equal the stream size.
 * Values never decrease. These are bytes the helper has moved, not bytes QEMU pushed into
 * the pipe.
 */
typedef void (*IohWrapProgressFunc)(guint64 bytes_written, guint64 bytes_synced,
                                    gpointer user_data);

typedef struct _IohWrap IohWrap;

/**
 * ioh_wrap_new:
 * @fd: (inout): the open image file. Its access mode gives the direction: O_WRONLY is a
 *      save, O_RDONLY a restore; O_RDWR is refused. When a helper is spawned, *fd is
 *      replaced by the caller's end of the pipe (blocking, O_CLOEXEC, raised to 1 MiB
 *      capped by /proc/sys/fs/pipe-max-size) and the original fd now belongs to the wrap
 *      (closed by ioh_wrap_finish()/ioh_wrap_free() at the latest); otherwise *fd is left
 *      untouched and stays the caller's.
 * @path: (nullable): the file's path, used in messages only (NULL: "fd N").
 * @flags: what the caller needs.
 * @params: (nullable): stream placement and progress period; NULL for defaults.
 * @error: return location for a #GError.
 *
 * Spawns `iohelper` only when @flags ask for it (or the fd has O_DIRECT set). The helper
 * is $IOHELPER_PATH when that is set and not empty, else IOHELPER_LIBEXECDIR/iohelper.
 * It gets exactly four fds: the pipe end and the file as its stdin/stdout, a stderr pipe
 * and a status pipe (fd 3); nothing else of this process leaks into it.
 * Progress sources are attached to the thread-default GMainContext.
 *
 * Returns: (transfer full): a new wrap, even when no helper was needed; NULL with
 *     @error set on failure, and then *fd is untouched.
 */
IohWrap *ioh_wrap_new(int *fd, const char *path, IohWrapFlags flags,
                      const IohWrapParams *params, GError **error);

/**
 * ioh_wrap_is_spawned:
 * @wrap: (nullable): a wrap.
 *
 * Returns: TRUE when a helper process serves the fd.
 */
gboolean ioh_wrap_is_spawned(IohWrap *wrap);

/**
 * ioh_wrap_get_pid:
 * @wrap: (nullable): a wrap.
 *
 * Returns: the PID of the helper, or 0 when none was spawned. The library reaps it; do
 *     not waitpid() it yourself (kill() is fine: the finish then reports the signal).
 */
GPid ioh_wrap_get_pid(IohWrap *wrap);

/**
 * ioh_wrap_set_progress_func:
 * @wrap: a wrap.
 * @func: (nullable): the callback, NULL to stop callbacks.
 * @user_data: passed to @func.
 * @notify: (nullable): frees @user_data when the callback is replaced or the wrap freed.
 *
 * Registers a progress callback (replaces any previous one). It runs only while the
 * GMainContext captured by ioh_wrap_new() is iterated (or inside ioh_wrap_finish() when
 * the calling thread owns that context). Never called for a wrap without a helper.
 */
void ioh_wrap_set_progress_func(IohWrap *wrap, IohWrapProgressFunc func,
                                gpointer user_data, GDestroyNotify notify);

/**
 * ioh_wrap_get_progress:
 * @wrap: (nullable): a wrap.
 * @ret_written: (out) (optional): bytes written by the helper.
 * @ret_synced: (out) (optional): bytes that have left the page cache (durable once
 *   ioh_wrap_finish() returned TRUE).
 *
 * Latest progress the helper reported, without a main loop: reads what is pending on
 * the status pipe, never blocks. 0 and 0 for a wrap without a helper.
 */
void ioh_wrap_get_progress(IohWrap *wrap, guint64 *ret_written, guint64 *ret_synced);

/**
 * ioh_wrap_finish:
 * @wrap: a wrap.
 * @error: return location for a #GError.
 *
 * Closes the caller's end of the pipe if that fd number still names the pipe (the
 * caller must not use it afterwards; closing it first is fine), waits for the helper
 * (that is, until QEMU too has closed its copy of a save pipe) and returns TRUE only when
 * it exited 0: every byte written and durable. On failure the GError message is the
 * helper's own stderr line (IOH_WRAP_ERROR_FAILED), or "helper killed by signal N"
 * (IOH_WRAP_ERROR_KILLED). Without a helper it closes nothing, and a save's file is
 * fdatasync'ed (through the wrap's own reference to it, so the caller may have closed
 * its fd already): TRUE means durable on both paths.
 * Idempotent: later calls (and ioh_wrap_finish_async()) return the first result again.
 *
 * Returns: TRUE when the stream was copied completely and made durable.
 */
gboolean ioh_wrap_finish(IohWrap *wrap, GError **error);

/**
 * ioh_wrap_finish_async:
 * @wrap: a wrap.
 * @cancellable: (nullable): cancelling it kills the helper (SIGKILL); the result is
 *     then G_IO_ERROR_CANCELLED unless the helper had already succeeded.
 * @callback: runs in the thread-default GMainContext of the calling thread.
 * @user_data: passed to @callback.
 *
 * The same as ioh_wrap_finish() for GMainLoop code: closes the caller's end, watches the
 * helper with a child-watch source, and calls @callback once it has exited (without a
 * helper, the fdatasync of a save runs in a GTask worker thread, not in the loop). Call
 * ioh_wrap_finish_finish() from @callback. Freeing the wrap while this is pending kills
 * the helper and completes the call with G_IO_ERROR_CANCELLED (the wrap stays valid for
 * ioh_wrap_finish_finish() inside @callback).
 */
void ioh_wrap_finish_async(IohWrap *wrap, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data);

/**
 * ioh_wrap_finish_finish:
 * @wrap: the wrap given to ioh_wrap_finish_async().
 * @result: the #GAsyncResult given to the callback.
 * @error: return location for a #GError.
 *
 * Returns: as ioh_wrap_finish().
 */
gboolean ioh_wrap_finish_finish(IohWrap *wrap, GAsyncResult *result, GError **error);

/**
 * ioh_wrap_free:
 * @wrap: (nullable): a wrap.
 *
 * Frees @wrap. A helper still running is killed (SIGKILL) and reaped; the caller's end
 * of the pipe is closed as by ioh_wrap_finish(). The progress callback is not called
 * again; its notify runs.
 */
void ioh_wrap_free(IohWrap *wrap);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohWrap, ioh_wrap_free)

G_END_DECLS
