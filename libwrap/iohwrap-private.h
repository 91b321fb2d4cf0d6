/* iohwrap-private.h - the wrap object, shared by the files of libwrap
 *
 * The files in layers; a file calls only the ones below it, never back up:
 *   iohwrap.c           the public entry points: three constructors, accessors, free
 *   iohwrap-uri.c       ioh_wrap_new_uri(): a wrap of a URI (NBD), where no file fd exists
 *   iohwrap-start.c     the one path of every constructor: the helper (spawned, then its
 *                       ready line awaited) or the path without one
 *   iohwrap-finish.c    waiting for the helper: the result, sync and async
 *   iohwrap-nohelper.c  the path without a helper: the fd as it is, fdatasync at the end
 *   iohwrap-progress.c  the progress callback's delivery in the wrap's context
 *   iohwrap-spawn.c     spawning the helper with its four fds
 *   iohwrap-object.c    the object: its state, references, the progress callback
 *   iohwrap-monitor.c   reading the helper's status pipe (the protocol) and stderr
 *   iohwrap-options.c   IohWrapOptions: checksum (and what later releases add)
 *   iohwrap-check.c     what ioh_wrap_new() refuses before anything is done
 *   iohwrap-error.c     the error domain (IOH_WRAP_ERROR)
 *
 * Threads: the wrap is reference counted inside (sources, pending GTask and idle
 * deliveries each hold a reference); @lock guards the state, the monitor, the result and
 * the fields below it. Functions named *_locked are called with @lock held.
 */
#pragma once

#include <sys/types.h>

#include "iohwrap.h"
#include "iohwrap-check.h"

#include "ioh-protocol.h"

G_BEGIN_DECLS

/* ---- iohwrap-monitor.c: what the helper says ------------------------------------ */

/* The read ends of the helper's status and stderr pipes (non-blocking, owned) and what
 * was read from them. Not locked itself: the wrap's lock guards it. */
typedef struct {
    char *path;                /* the wrap's path, for debug messages */
    gboolean save;

    int status_fd;
    gboolean status_eof;
    IohProtocolReader *reader;
    guint64 written, synced;   /* the latest counters (never decreasing) */
    gboolean got_ready;        /* the ready line (or a progress line) was read: the copy
                                * started */
    gboolean got_result;       /* a result line was read */
    gboolean got_final;        /* a final line (result or error) was read */
    GError *final_error;       /* the error line, as IOH_WRAP_ERROR_FAILED */
    char *checksum;            /* the result line's checksum (hex), NULL without one */
    char *encryption;          /* the result line's encryption ("age"), NULL without */
    guint64 stored;            /* the storage side's counter (compressed bytes) */

    int err_fd;
    gboolean err_eof;
    GString *err_text;         /* the tail of the helper's stderr, for g_debug only */
} IohwMonitor;

/* Takes @status_fd and @err_fd. */
IohwMonitor *iohw_monitor_new(const char *path, gboolean save, int status_fd, int err_fd);
void iohw_monitor_free(IohwMonitor *monitor);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohwMonitor, iohw_monitor_free)

/* Read what is pending, never blocking. */
void iohw_monitor_read_status(IohwMonitor *monitor);
void iohw_monitor_read_err(IohwMonitor *monitor);

/* Reads both pipes to their end (the helper's ends close when it exits), with @lock held
 * on entry and on return, released while waiting. */
void iohw_monitor_read_to_eof(IohwMonitor *monitor, GMutex *lock);

/* Reads both pipes until the helper's ready line, its final line or the status pipe's
 * end, for at most @timeout_ms (before anyone else can see the monitor: no lock). TRUE
 * once ready, or when the status pipe ended without a line (a helper whose status goes
 * elsewhere: its finish tells); FALSE after a final line that came first (it refused
 * to start) or when the time ran out (*ret_timed_out: it may still be running). */
gboolean iohw_monitor_wait_ready(IohwMonitor *monitor, int timeout_ms,
                                 gboolean *ret_timed_out);

/* ---- iohwrap-object.c: the registered progress callback ------------------------- */

/* Reference counted like GLib's GSourceCallback: a delivery holds a reference while @func
 * runs, so that replacing the callback or freeing the wrap meanwhile (from @func itself or
 * another thread) runs @notify only once @func has returned. */
typedef struct {
    gint refs;
    IohWrapProgressFunc func;
    gpointer data;
    GDestroyNotify notify;
} IohwProgressCb;

IohwProgressCb *iohw_progress_cb_new(IohWrapProgressFunc func, gpointer data,
                                     GDestroyNotify notify);
IohwProgressCb *iohw_progress_cb_ref(IohwProgressCb *cb);
/* Drops a reference (NULL allowed); the last one gives the data back through notify. */
void iohw_progress_cb_unref(IohwProgressCb *cb);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohwProgressCb, iohw_progress_cb_unref)

/* ---- iohwrap-progress.c: delivering progress ------------------------------------- */

/* Attaches the sources that read the status and stderr pipes in the wrap's context. */
void iohw_progress_watch(IohWrap *wrap);
/* From any thread: calls the callback in the wrap's context with new figures. */
void iohw_progress_schedule(IohWrap *wrap);

/* ---- iohwrap-spawn.c ------------------------------------------------------------- */

/* Spawns the helper for @wrap as @plan says, on a copy of @fd (-1: a wrap of a URI,
 * wrap->uri, no file), and adopts the pipes: the state is RUNNING, wrap->caller_fd the
 * caller's end of the data pipe, wrap->monitor reads the others. @fd stays the caller's. */
gboolean iohw_spawn(IohWrap *wrap, int fd, const IohwPlan *plan, GError **error);

/* ---- iohwrap-nohelper.c ---------------------------------------------------------- */

/* The path without a helper: keeps a reference to a save's file, applies the offset. */
gboolean iohw_nohelper_start(IohWrap *wrap, int fd, const IohwPlan *plan, GError **error);
/* fdatasync of a save's file; sets the result. */
void iohw_nohelper_finish_locked(IohWrap *wrap);
/* The same in a worker thread, completing @task (whose data is the wrap). */
void iohw_nohelper_finish_async(GTask *task);

/* ---- iohwrap-start.c ------------------------------------------------------------- */

/* The one path of every constructor: a new wrap of @name (NULL: "fd *@fd") or of @uri
 * (NULL: a file) with a copy of @options, started as @plan says, which the caller has
 * checked. A file's wrap uses the helper when @plan or @options need it (a URI's always);
 * on success *@fd is what the caller hands QEMU. */
IohWrap *iohw_wrap_create(const char *name, const char *uri, int *fd, const IohwPlan *plan,
                          const IohWrapOptions *options, GError **error);
/* The same for a channel (ioh_wrap_new_channel()): the helper's stream is @stream_fd, not a
 * pipe; always a helper; on success *@fd is -1 (the wrap holds the file). */
IohWrap *iohw_wrap_create_stream(const char *name, int stream_fd, int *fd,
                                 const IohwPlan *plan, const IohWrapOptions *options,
                                 GError **error);
/* A channel's stream (@stream_fd, a copy given to the helper) to or from @uri (an NBD
 * URI or RBD name, checked by iohw_uri_plan()): the helper connects itself. */
IohWrap *iohw_wrap_create_uri_stream(const char *name, const char *uri, int stream_fd,
                                     const IohwPlan *plan, const IohWrapOptions *options,
                                     GError **error);
/* ioh_wrap_new_uri()'s checks of @uri, @params, @options into @ret_plan; @ret_name (the
 * URI without its secrets) on success. */
gboolean iohw_uri_plan(const char *uri, gboolean save, const IohWrapParams *params,
                       const IohWrapOptions *options, IohwPlan *ret_plan, char **ret_name,
                       GError **error);

/* ---- iohwrap-finish.c ------------------------------------------------------------ */

/* Closes the caller's end of the pipe if the number still names that pipe. */
void iohw_finish_close_caller_locked(IohWrap *wrap);
/* ioh_wrap_free() with the helper still running: kill, reap, result "cancelled". */
void iohw_finish_abandon_locked(IohWrap *wrap);
/* Completes a pending async finish with the result (lock NOT held). */
void iohw_finish_complete_task(IohWrap *wrap);
/* A helper that never became ready: killed first when @kill_it, reaped, and its error
 * (the final line's, or its exit status) in @error. The caller's end is closed. */
void iohw_finish_failed_start(IohWrap *wrap, gboolean kill_it, GError **error);

/* ---- iohwrap-options.c: what the helper does besides copying ---------------------- */

struct _IohWrapOptions {
    char *checksum;           /* the helper's --checksum, NULL: none */
    char *verify_checksum;    /* the helper's --verify-checksum (lower case), NULL: none */
    gboolean compress;        /* the helper's --compress=zstd:LEVEL (save) */
    int compress_level;
    gboolean compress_auto;   /* ... or --compress=auto */
    gboolean decompress;      /* the helper's --decompress (restore) */
    guint threads;            /* the helper's --threads (with compress), 0: its default */
    guint connections;        /* the helper's --connections (NBD), 0: its default */
    guint stall_timeout;      /* the helper's --stall-timeout (NBD), 0: none */
    guint64 region;           /* save: bytes the stored stream may take from its start
                               * (RLIMIT_FSIZE), the file's rest left alone
                               * (--no-truncate); 0: none (iohwrap-channel.c) */
    /* iohwrap-age.c (0.4) */
    GPtrArray *recipients;    /* the helper's --recipient (age1...), NULL: none */
    GPtrArray *recipients_files;  /* the helper's --recipients-file, NULL: none */
    char *identity_file;      /* opened at each spawn, handed over as IOHW_IDENTITY_FD */
    int identity_fd;          /* our copy of the caller's identity fd, -1: none */
    char *cpus;               /* the helper's --cpus (0.5), folded; NULL: where we run */
};

/* ---- iohwrap-age.c: recipients and identities -------------------------------------- */

/* Where the helper finds the identity: `--identity-fd=4`. */
#define IOHW_IDENTITY_FD 4

/* Copies @from's age options into @to (fresh); clears them. */
void iohw_age_options_copy(const IohWrapOptions *from, IohWrapOptions *to);
void iohw_age_options_clear(IohWrapOptions *options);
/* Recipients given (a save) / an identity given (a restore). */
gboolean iohw_age_encrypting(const IohWrapOptions *options);
gboolean iohw_age_decrypting(const IohWrapOptions *options);
/* The helper's age options into @argv: recipients, and --identity-fd=4 when decrypting. */
void iohw_age_add_args(const IohWrapOptions *options, GPtrArray *argv);
/* The identity for one spawn: the file opened and checked (group/others: EPERM), or a
 * copy of the caller's fd; -1 without an identity (no error) or with @error set. */
int iohw_age_identity_open(const IohWrapOptions *options, GError **error);

/* A copy of @options (NULL: the defaults); never NULL. */
IohWrapOptions *iohw_options_copy(const IohWrapOptions *options);
/* Everything a constructor refuses of @options (NULL: nothing) for the direction (@save)
 * and the target (@uri: ioh_wrap_new_uri(), else a file): a verification on a save,
 * connections without a URI, compress on a restore, decompress on a save, threads
 * without compress. The one check of every constructor. */
gboolean iohw_options_check(const IohWrapOptions *options, gboolean save, gboolean uri,
                            GError **error);
/* Whether @options (de)compress: the helper is needed whatever the flags. */
gboolean iohw_options_compressing(const IohWrapOptions *options);
/* Appends the helper's arguments for what it does besides copying: --compress,
 * --decompress, --threads, age's, and --cpus (the placement). */
void iohw_options_add_compress_args(const IohWrapOptions *options, GPtrArray *argv);

/* ---- iohwrap-object.c: the object ----------------------------------------------- */

/* The wrap's lifecycle; every change with @lock held once a constructor has returned it.
 *   NEW --spawn--> RUNNING --reaped--> REAPED      (a helper; REAPED has the result)
 *   NEW --no helper--> DIRECT --synced--> SYNCED   (the caller's fd as it is)
 * A constructor that fails leaves NEW or REAPED behind and frees the wrap. */
typedef enum {
    IOHW_STATE_NEW,           /* a constructor is building it: nothing started */
    IOHW_STATE_DIRECT,        /* no helper: the caller uses its fd itself */
    IOHW_STATE_SYNCED,        /* no helper, finished: a save's file synced, @result set */
    IOHW_STATE_RUNNING,       /* the helper runs (@pid), not reaped yet */
    IOHW_STATE_REAPED,        /* the helper reaped (or abandoned), @result set */
} IohwState;

static inline gboolean
iohw_state_has_helper(IohwState state)
{
    return state == IOHW_STATE_RUNNING || state == IOHW_STATE_REAPED;
}

static inline gboolean
iohw_state_is_finished(IohwState state)
{
    return state == IOHW_STATE_SYNCED || state == IOHW_STATE_REAPED;
}

struct _IohWrap {
    gint refs;
    GMutex lock;
    GMainContext *context;    /* thread-default at ioh_wrap_new(): progress goes there */
    IohwState state;

    char *path;
    char *helper;             /* the helper binary, for messages */
    gboolean save;
    GPid pid;

    int file_fd;              /* the caller's file, kept (CLOEXEC) until the end */
    guint64 start;            /* file offset where the stream starts */
    guint64 length;           /* 0: to EOF */
    IohWrapOptions *options;  /* what the helper does besides copying (never NULL) */

    int caller_fd;            /* our end of the data pipe, as handed out in *fd; -1 once
                               * closed */
    dev_t caller_dev;
    ino_t caller_ino;

    IohwMonitor *monitor;     /* NULL without a helper */
    GSource *status_source;
    GSource *err_source;

    guint64 told_written, told_synced;   /* what the callback last received */
    IohwProgressCb *progress; /* NULL: none registered, or ioh_wrap_free() ran */

    GError *result;           /* once finished; NULL: success */

    GTask *task;              /* pending ioh_wrap_finish_async() */
    GSource *child_source;
    GCancellable *cancellable;
    gulong cancel_id;
    char *uri;                /* ioh_wrap_new_uri(): the URI as given (path: without secrets) */
    int stream_fd;            /* ioh_wrap_new_channel(): the caller's socket or pipe the
                               * helper reads (save) or writes (restore) in place of a
                               * pipe of ours; -1 otherwise. Not owned */
};

/* A new wrap (one reference, state NEW) for @path (NULL: "fd @fd") as @plan says. */
IohWrap *iohw_wrap_new(const char *path, int fd, const IohwPlan *plan);
IohWrap *iohw_ref(IohWrap *wrap);
void iohw_unref(gpointer wrap);

/* Returns @err (taken; NULL: success, TRUE) from @task. */
void iohw_task_return(GTask *task, GError *err);

G_END_DECLS
