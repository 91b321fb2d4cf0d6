/* iohwrap.c - wrap a save/restore fd behind the iohelper process when needed
 *
 * One IohWrap per stream. When a helper is needed it is spawned with exactly four fds:
 *   save:    0 = read end of the data pipe, 1 = the file, 2 = stderr pipe, 3 = status pipe
 *   restore: 0 = the file, 1 = write end of the data pipe, 2 = stderr pipe, 3 = status pipe
 * and the helper's libvirt form `iohelper [OPTIONS] -- PATH FD`. What happened is read
 * from the status pipe, the helper protocol (docs/protocol.md): progress lines, then a
 * final result or error line whose fields become the GError. The helper's stderr is kept
 * for a debug message only; nothing parses it.
 *
 * Threads: the wrap is reference counted inside (sources, pending GTask and idle
 * deliveries each hold a reference); one mutex guards the pipes' parsing state and the
 * result. Progress callbacks run only in the GMainContext captured by ioh_wrap_new().
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib-unix.h>

#include "ioh-error.h"
#include "ioh-escape.h"
#include "ioh-fd.h"
#include "ioh-pipe.h"
#include "ioh-protocol.h"

#define STDERR_KEEP 4096              /* bytes of helper stderr kept for the debug log */
#define HELPER_STATUS_FD 3
#define FD_FLOOR 10                   /* fds handed to the spawn are moved above this */

/* Its errors carry the helper's errno, operation and path as fields (helper/core's
 * ioh_error_get_errno() and friends read them). */
GQuark
ioh_wrap_error_quark(void)
{
    static GQuark q;
    static gsize once;

    if (g_once_init_enter(&once)) {
        q = ioh_error_domain_register("ioh-wrap-error-quark");
        g_once_init_leave(&once, 1);
    }
    return q;
}

/* The registered progress callback. Reference counted like GLib's GSourceCallback: a
 * delivery holds a reference while @func runs, so that replacing the callback or freeing
 * the wrap meanwhile (from @func itself or another thread) runs @notify only once @func
 * has returned. */
typedef struct {
    gint refs;
    IohWrapProgressFunc func;
    gpointer data;
    GDestroyNotify notify;
} ProgressCb;

static ProgressCb *
progress_cb_new(IohWrapProgressFunc func, gpointer data, GDestroyNotify notify)
{
    ProgressCb *cb = g_new0(ProgressCb, 1);

    cb->refs = 1;
    cb->func = func;
    cb->data = data;
    cb->notify = notify;
    return cb;
}

static ProgressCb *
progress_cb_ref(ProgressCb *cb)
{
    g_atomic_int_inc(&cb->refs);
    return cb;
}

/* Drops a reference; the last one gives the data back through its notify. */
static void
progress_cb_unref(ProgressCb *cb)
{
    if (!cb || !g_atomic_int_dec_and_test(&cb->refs)) {
        return;
    }
    if (cb->notify) {
        cb->notify(cb->data);
    }
    g_free(cb);
}

struct _IohWrap {
    gint refs;
    GMutex lock;
    GMainContext *context;    /* thread-default at ioh_wrap_new(): progress goes there */

    char *path;
    char *helper;             /* the helper binary, for messages */
    gboolean save;
    gboolean spawned;
    GPid pid;

    int file_fd;              /* the caller's file, kept (CLOEXEC) until the end */
    guint64 start;            /* file offset where the stream starts */
    guint64 length;           /* 0: to EOF */

    int caller_fd;            /* our end of the data pipe, as handed out in *fd */
    dev_t caller_dev;
    ino_t caller_ino;
    gboolean caller_closed;

    int status_fd;            /* read end, non-blocking; closed at finalize */
    gboolean status_eof;
    IohProtocolReader *reader;
    GError *final_error;      /* the final error line, as IOH_WRAP_ERROR_FAILED */
    gboolean got_final;       /* a final line (result or error) was read */
    GSource *status_source;

    int err_fd;               /* read end of the helper's stderr, non-blocking */
    gboolean err_eof;
    GString *err_text;
    GSource *err_source;

    guint64 written, synced;  /* latest progress reported by the helper */
    gboolean got_done;
    guint64 told_written, told_synced;   /* what the callback last received */
    ProgressCb *progress;     /* NULL: none registered */

    gboolean reaped;
    gboolean finished;
    GError *result;           /* NULL with finished == TRUE: success */

    GTask *task;              /* pending ioh_wrap_finish_async() */
    GSource *child_source;
    GCancellable *cancellable;
    gulong cancel_id;
    gboolean freed;           /* ioh_wrap_free() was called */
};

static IohWrap *
wrap_ref(IohWrap *wrap)
{
    g_atomic_int_inc(&wrap->refs);
    return wrap;
}

static void
wrap_unref(gpointer data)
{
    IohWrap *wrap = data;

    if (!g_atomic_int_dec_and_test(&wrap->refs)) {
        return;
    }
    g_clear_pointer(&wrap->status_source, g_source_unref);
    g_clear_pointer(&wrap->err_source, g_source_unref);
    g_clear_pointer(&wrap->child_source, g_source_unref);
    ioh_fd_clear(&wrap->status_fd);
    ioh_fd_clear(&wrap->err_fd);
    ioh_fd_clear(&wrap->file_fd);
    g_clear_pointer(&wrap->reader, ioh_protocol_reader_free);
    g_clear_error(&wrap->final_error);
    if (wrap->err_text) {
        g_string_free(wrap->err_text, TRUE);
    }
    progress_cb_unref(wrap->progress);    /* NULL once ioh_wrap_free() ran */
    g_clear_error(&wrap->result);
    g_clear_object(&wrap->cancellable);
    g_clear_pointer(&wrap->context, g_main_context_unref);
    g_free(wrap->path);
    g_free(wrap->helper);
    g_mutex_clear(&wrap->lock);
    g_free(wrap);
}

/* ---- spawning ------------------------------------------------------------------- */

/* Moves @fd above FD_FLOOR (CLOEXEC), so that no fd handed to the spawn collides with
 * a target number 0..3 of another. */
static gboolean
lift_fd(int *fd, GError **error)
{
    int nfd;

    if (*fd >= FD_FLOOR) {
        return TRUE;
    }
    nfd = fcntl(*fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    if (nfd < 0) {
        g_autofree char *name = g_strdup_printf("fd %d", *fd);
        return ioh_error_set_errno(error, errno, "dup", name);
    }
    close(*fd);
    *fd = nfd;
    return TRUE;
}

static char *
helper_path(void)
{
    const char *env = g_getenv("IOHELPER_PATH");

    if (env && *env) {
        return g_strdup(env);
    }
    return g_build_filename(IOHELPER_LIBEXECDIR, "iohelper", NULL);
}

static gboolean
check_helper(const char *helper, GError **error)
{
    struct stat st;

    if (stat(helper, &st) < 0) {
        int errsv = errno;
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_NOHELPER,
                    "helper %s: %s (set IOHELPER_PATH to override)", helper,
                    g_strerror(errsv));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode) || access(helper, X_OK) < 0) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_NOHELPER,
                    "helper %s: not an executable file", helper);
        return FALSE;
    }
    return TRUE;
}

/* ---- reading the helper's pipes (lock held) ------------------------------------- */

/* One line of the protocol. Counters never go back; nothing counts after the final line
 * (a reader ignores what follows it). */
static void
apply_msg_locked(IohWrap *wrap, const IohProtocolMsg *msg)
{
    g_autoptr(GError) err = NULL;

    if (wrap->got_final ||
        (msg->kind != IOH_PROTOCOL_PROGRESS && !ioh_protocol_msg_is_final(msg))) {
        return;
    }
    wrap->written = MAX(wrap->written, msg->written);
    /* restore: nothing to sync; every byte in the pipe is delivered */
    wrap->synced = MAX(wrap->synced, wrap->save ? msg->synced : msg->written);
    if (msg->kind == IOH_PROTOCOL_RESULT) {
        wrap->got_done = TRUE;
    } else if (msg->kind == IOH_PROTOCOL_ERROR) {
        err = ioh_protocol_msg_to_error(msg);
        wrap->final_error = ioh_error_new_from(IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED, err);
        /* The message is for people: one line, as the helper printed it on stderr. The
         * path field keeps its bytes. */
        ioh_escape_line_in_place(wrap->final_error->message);
    }
    wrap->got_final = ioh_protocol_msg_is_final(msg);
}

static void
take_msgs_locked(IohWrap *wrap)
{
    for (;;) {
        g_auto(IohProtocolMsg) msg = { 0 };
        g_autoptr(GError) err = NULL;
        int got = ioh_protocol_reader_next(wrap->reader, &msg, &err);

        if (got == 0) {
            return;
        }
        if (got < 0) {
            g_debug("helper for %s: status line skipped: %s", wrap->path, err->message);
            continue;
        }
        apply_msg_locked(wrap, &msg);
    }
}

static void
drain_status_locked(IohWrap *wrap)
{
    char buf[4096];

    while (!wrap->status_eof) {
        gssize n = read(wrap->status_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                g_autoptr(GError) err = NULL;
                wrap->status_eof = TRUE;
                if (!ioh_protocol_reader_finish(wrap->reader, &err)) {
                    g_debug("helper for %s: %s", wrap->path, err->message);
                }
            }
            break;
        }
        ioh_protocol_reader_feed(wrap->reader, buf, (gsize)n);
        take_msgs_locked(wrap);
    }
}

static void
drain_err_locked(IohWrap *wrap)
{
    char buf[4096];

    while (!wrap->err_eof) {
        gssize n = read(wrap->err_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                wrap->err_eof = TRUE;
            }
            break;
        }
        g_string_append_len(wrap->err_text, buf, n);
        if (wrap->err_text->len > STDERR_KEEP) {
            /* Keep the tail: the helper's last line is the one that counts. */
            g_string_erase(wrap->err_text, 0, (gssize)(wrap->err_text->len - STDERR_KEEP));
        }
    }
}

/* ---- progress delivery (in wrap->context) ---------------------------------------- */

static void
deliver_progress(IohWrap *wrap)
{
    ProgressCb *cb = NULL;
    guint64 w = 0, s = 0;

    g_mutex_lock(&wrap->lock);
    if (wrap->progress && wrap->progress->func && !wrap->freed &&
        (wrap->written != wrap->told_written || wrap->synced != wrap->told_synced)) {
        cb = progress_cb_ref(wrap->progress);
        w = wrap->told_written = wrap->written;
        s = wrap->told_synced = wrap->synced;
    }
    g_mutex_unlock(&wrap->lock);
    if (cb) {
        cb->func(w, s, cb->data);
        progress_cb_unref(cb);
    }
}

static gboolean
deliver_progress_cb(gpointer data)
{
    deliver_progress(data);
    return G_SOURCE_REMOVE;
}

/* From any thread: run deliver_progress in the wrap's context (directly when we own it). */
static void
schedule_progress(IohWrap *wrap)
{
    g_main_context_invoke_full(wrap->context, G_PRIORITY_DEFAULT, deliver_progress_cb,
                               wrap_ref(wrap), wrap_unref);
}

static gboolean
on_status_readable(int fd, GIOCondition cond, gpointer data)
{
    IohWrap *wrap = data;
    gboolean eof;

    (void)fd;
    (void)cond;
    g_mutex_lock(&wrap->lock);
    drain_status_locked(wrap);
    eof = wrap->status_eof;
    g_mutex_unlock(&wrap->lock);
    deliver_progress(wrap);
    return eof ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static gboolean
on_err_readable(int fd, GIOCondition cond, gpointer data)
{
    IohWrap *wrap = data;
    gboolean eof;

    (void)fd;
    (void)cond;
    g_mutex_lock(&wrap->lock);
    drain_err_locked(wrap);
    eof = wrap->err_eof;
    g_mutex_unlock(&wrap->lock);
    return eof ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static GSource *
attach_fd_source(IohWrap *wrap, int fd, GUnixFDSourceFunc func)
{
    GSource *src = g_unix_fd_source_new(fd, G_IO_IN | G_IO_HUP | G_IO_ERR);

    g_source_set_callback(src, G_SOURCE_FUNC(func), wrap_ref(wrap), wrap_unref);
    g_source_set_name(src, "ioh-wrap helper pipe");
    g_source_attach(src, wrap->context);
    return src;
}

/* ---- ioh_wrap_new ---------------------------------------------------------------- */

static IohWrap *
wrap_alloc(const char *path, int fd)
{
    IohWrap *wrap = g_new0(IohWrap, 1);

    wrap->refs = 1;
    g_mutex_init(&wrap->lock);
    wrap->context = g_main_context_ref_thread_default();
    wrap->path = path ? g_strdup(path) : g_strdup_printf("fd %d", fd);
    wrap->file_fd = -1;
    wrap->caller_fd = -1;
    wrap->status_fd = -1;
    wrap->err_fd = -1;
    return wrap;
}

static gboolean
spawn_helper(IohWrap *wrap, int *fd, const IohwPlan *plan, GError **error)
{
    g_autofree char *helper = helper_path();
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    int data[2] = { -1, -1 }, status[2] = { -1, -1 }, err[2] = { -1, -1 };
    int file = -1, child_end, caller_end;
    struct stat st;
    gboolean ok = FALSE;

    if (!check_helper(helper, error)) {
        return FALSE;
    }
    /* Only the data pipe is raised: every pipe's size counts against the user's
     * pipe-user-pages-soft quota, past which new pipes get one page. The status and
     * stderr pipes keep the default 64 KiB: ~600 status lines, dropped rather than
     * blocking when nobody reads; the helper writes one stderr line at its end.
     * A caller that reads no progress must never stall the copy: the helper drops a
     * status line when the pipe is full (each line is written atomically). */
    if (!ioh_pipe_open(data, 0, IOH_PIPE_DEFAULT_SIZE, error) ||
        !ioh_pipe_open(status, O_NONBLOCK, 0, error) || !ioh_pipe_open(err, 0, 0, error) ||
        !ioh_fd_set_nonblock(err[0], TRUE, error)) {
        goto out;
    }
    file = fcntl(*fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    if (file < 0) {
        g_autofree char *name = g_strdup_printf("fd %d", *fd);
        ioh_error_set_errno(error, errno, "dup", name);
        goto out;
    }
    child_end = wrap->save ? 0 : 1;
    caller_end = wrap->save ? 1 : 0;
    if (!lift_fd(&data[child_end], error) || !lift_fd(&status[1], error) ||
        !lift_fd(&err[1], error)) {
        goto out;
    }

    g_ptr_array_add(argv, g_strdup(helper));
    if (plan->mode != IOH_CACHE_BUFFERED) {
        /* --direct, --fadvise: the options are spelled as the modes */
        g_ptr_array_add(argv, g_strdup_printf("--%s", ioh_cache_mode_to_string(plan->mode)));
    }
    g_ptr_array_add(argv, g_strdup_printf("--status-fd=%d", HELPER_STATUS_FD));
    g_ptr_array_add(argv, g_strdup_printf("--status-interval=%u", plan->interval_ms));
    if (plan->offset) {
        g_ptr_array_add(argv, g_strdup_printf("--offset=%" G_GUINT64_FORMAT, plan->offset));
    }
    if (plan->length && !wrap->save) {
        g_ptr_array_add(argv, g_strdup_printf("--length=%" G_GUINT64_FORMAT, plan->length));
    }
    g_ptr_array_add(argv, g_strdup("--"));
    g_ptr_array_add(argv, g_strdup(wrap->path));
    g_ptr_array_add(argv, g_strdup(wrap->save ? "1" : "0"));
    g_ptr_array_add(argv, NULL);

    {
        int source_fds[] = { status[1] };
        int target_fds[] = { HELPER_STATUS_FD };

        if (!g_spawn_async_with_pipes_and_fds(NULL, (const char *const *)argv->pdata, NULL,
                                              G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                              wrap->save ? data[0] : file,
                                              wrap->save ? file : data[1], err[1],
                                              source_fds, target_fds, 1, &wrap->pid,
                                              NULL, NULL, NULL, error)) {
            goto out;
        }
    }
    wrap->spawned = TRUE;

    /* Ours from now on: the caller's end of the data pipe, the read ends, the file. */
    if (fstat(data[caller_end], &st) == 0) {
        wrap->caller_dev = st.st_dev;
        wrap->caller_ino = st.st_ino;
    }
    wrap->caller_fd = data[caller_end];
    data[caller_end] = -1;
    wrap->status_fd = status[0];
    status[0] = -1;
    wrap->err_fd = err[0];
    err[0] = -1;
    wrap->file_fd = file;
    file = -1;
    wrap->helper = g_steal_pointer(&helper);
    wrap->reader = ioh_protocol_reader_new();
    wrap->err_text = g_string_new(NULL);
    wrap->status_source = attach_fd_source(wrap, wrap->status_fd, on_status_readable);
    wrap->err_source = attach_fd_source(wrap, wrap->err_fd, on_err_readable);

    close(*fd);
    *fd = wrap->caller_fd;
    ok = TRUE;

out:
    ioh_fd_clear(&data[0]);
    ioh_fd_clear(&data[1]);
    ioh_fd_clear(&status[0]);
    ioh_fd_clear(&status[1]);
    ioh_fd_clear(&err[0]);
    ioh_fd_clear(&err[1]);
    ioh_fd_clear(&file);
    return ok;
}

IohWrap *
ioh_wrap_new(int *fd, const char *path, IohWrapFlags flags, const IohWrapParams *params,
             GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    IohwPlan plan;

    if (!fd) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_new: fd must not be NULL");
        return NULL;
    }
    /* Everything the helper would refuse, refused now: nothing is touched before. */
    if (!iohw_check_new(*fd, path, flags, params, &plan, error)) {
        return NULL;
    }

    wrap = wrap_alloc(path, *fd);
    wrap->save = plan.save;
    wrap->length = plan.length;
    wrap->start = plan.start;

    if (!(plan.flags & (IOH_WRAP_DIRECT | IOH_WRAP_FADVISE | IOH_WRAP_POLLABLE))) {
        /* The fast path: QEMU writes the file itself. Only an explicit offset moves it. */
        if (wrap->save) {
            /* A private reference, so that finish can make the save durable even when
             * the caller has closed its fd by then. */
            wrap->file_fd = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
            if (wrap->file_fd < 0) {
                int errsv = errno;
                g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_BADFD, "dup fd %d: %s",
                            *fd, g_strerror(errsv));
                return NULL;
            }
        }
        if (plan.offset && lseek(*fd, (off_t)plan.offset, SEEK_SET) < 0) {
            int errsv = errno;
            g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_BADFD, "seek %s: %s",
                        wrap->path, g_strerror(errsv));
            return NULL;
        }
        return g_steal_pointer(&wrap);
    }

    if (!spawn_helper(wrap, fd, &plan, error)) {
        return NULL;
    }
    return g_steal_pointer(&wrap);
}

/* ---- accessors ------------------------------------------------------------------ */

gboolean
ioh_wrap_is_spawned(IohWrap *wrap)
{
    return wrap && wrap->spawned;
}

GPid
ioh_wrap_get_pid(IohWrap *wrap)
{
    return wrap && wrap->spawned ? wrap->pid : 0;
}

void
ioh_wrap_set_progress_func(IohWrap *wrap, IohWrapProgressFunc func, gpointer user_data,
                           GDestroyNotify notify)
{
    ProgressCb *old;

    if (!wrap) {
        /* A programmer error, reported as GLib does; the data was handed over all the
         * same, and nothing will hold it: give it back now. */
        if (notify) {
            notify(user_data);
        }
        g_return_if_fail(wrap != NULL);
        return;
    }
    g_mutex_lock(&wrap->lock);
    old = wrap->progress;
    wrap->progress = func || notify ? progress_cb_new(func, user_data, notify) : NULL;
    wrap->told_written = wrap->told_synced = 0;
    g_mutex_unlock(&wrap->lock);
    progress_cb_unref(old);
}

void
ioh_wrap_get_progress(IohWrap *wrap, guint64 *ret_written, guint64 *ret_synced)
{
    guint64 w = 0, s = 0;

    if (wrap && wrap->spawned) {
        g_mutex_lock(&wrap->lock);
        drain_status_locked(wrap);
        w = wrap->written;
        s = wrap->synced;
        g_mutex_unlock(&wrap->lock);
    }
    if (ret_written) {
        *ret_written = w;
    }
    if (ret_synced) {
        *ret_synced = s;
    }
}

/* ---- finishing ------------------------------------------------------------------ */

/* Closes the caller's end of the pipe if the number still names that pipe. */
static void
close_caller_end_locked(IohWrap *wrap)
{
    struct stat st;

    if (wrap->caller_closed || wrap->caller_fd < 0) {
        return;
    }
    wrap->caller_closed = TRUE;
    if (fstat(wrap->caller_fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
        st.st_dev == wrap->caller_dev && st.st_ino == wrap->caller_ino) {
        close(wrap->caller_fd);
    }
    wrap->caller_fd = -1;
}

/* Without a result line (the helper drops progress lines when nobody read the status pipe
 * for a long time, and gives up on its final line after 30 s), the shared file position
 * tells how far the stream went. */
static void
final_counts_locked(IohWrap *wrap)
{
    off_t pos;

    if (wrap->got_done || wrap->file_fd < 0) {
        return;
    }
    pos = lseek(wrap->file_fd, 0, SEEK_CUR);
    if (pos >= 0 && (guint64)pos >= wrap->start) {
        guint64 n = (guint64)pos - wrap->start;
        if (wrap->length && !wrap->save) {
            n = MIN(n, wrap->length);
        }
        wrap->written = wrap->synced = MAX(wrap->written, n);
    }
}

/* Turns a wait status into the result (lock held). */
static void
set_result_locked(IohWrap *wrap, int wstatus)
{
    wrap->reaped = TRUE;
    wrap->finished = TRUE;
    drain_status_locked(wrap);
    drain_err_locked(wrap);
    /* The exit status decides; the final line gives the details. */
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        final_counts_locked(wrap);
        return;
    }
    if (wrap->err_text->len > 0) {
        g_debug("helper for %s failed; its stderr: %s", wrap->path, wrap->err_text->str);
    }
    if (WIFSIGNALED(wstatus)) {
        g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED,
                    "helper killed by signal %d", WTERMSIG(wstatus));
    } else if (wrap->final_error) {
        wrap->result = g_error_copy(wrap->final_error);
    } else {
        g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED,
                    "helper %s for %s exited with status %d without a final status line",
                    wrap->helper, wrap->path, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    }
}

static gboolean
return_result_locked(IohWrap *wrap, GError **error)
{
    if (wrap->result) {
        g_propagate_error(error, g_error_copy(wrap->result));
        return FALSE;
    }
    return TRUE;
}

/* No helper: a save is durable once its file is fdatasync'ed; a restore has nothing to do. */
static void
finish_unspawned_locked(IohWrap *wrap)
{
    if (wrap->finished) {
        return;
    }
    wrap->finished = TRUE;
    if (wrap->file_fd >= 0) {
        while (fdatasync(wrap->file_fd) < 0) {
            int errsv = errno;
            if (errsv == EINTR) {
                continue;
            }
            if (errsv != EINVAL && errsv != EROFS) {    /* not syncable: nothing to do */
                g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED,
                            "fdatasync %s: %s", wrap->path, g_strerror(errsv));
            }
            break;
        }
        ioh_fd_clear(&wrap->file_fd);
    }
}

gboolean
ioh_wrap_finish(IohWrap *wrap, GError **error)
{
    gboolean ok;
    int wstatus = 0;

    if (!wrap) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish: wrap must not be NULL");
        return FALSE;
    }
    g_mutex_lock(&wrap->lock);
    if (wrap->finished) {
        ok = return_result_locked(wrap, error);
        g_mutex_unlock(&wrap->lock);
        return ok;
    }
    if (wrap->task) {
        g_mutex_unlock(&wrap->lock);
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish: an asynchronous finish is pending");
        return FALSE;
    }
    if (!wrap->spawned) {
        finish_unspawned_locked(wrap);
        ok = return_result_locked(wrap, error);
        g_mutex_unlock(&wrap->lock);
        return ok;
    }
    close_caller_end_locked(wrap);

    /* Read both pipes to EOF: the helper's end of them closes when it exits. */
    while (!wrap->status_eof || !wrap->err_eof) {
        struct pollfd p[2];
        nfds_t n = 0;

        if (!wrap->status_eof) {
            p[n++] = (struct pollfd){ .fd = wrap->status_fd, .events = POLLIN };
        }
        if (!wrap->err_eof) {
            p[n++] = (struct pollfd){ .fd = wrap->err_fd, .events = POLLIN };
        }
        g_mutex_unlock(&wrap->lock);
        if (poll(p, n, -1) < 0 && errno != EINTR) {
            g_mutex_lock(&wrap->lock);
            break;
        }
        g_mutex_lock(&wrap->lock);
        drain_status_locked(wrap);
        drain_err_locked(wrap);
    }
    g_mutex_unlock(&wrap->lock);

    while (waitpid(wrap->pid, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            int errsv = errno;
            g_mutex_lock(&wrap->lock);
            wrap->reaped = TRUE;
            wrap->finished = TRUE;
            g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED,
                        "wait for helper %d: %s", (int)wrap->pid, g_strerror(errsv));
            ok = return_result_locked(wrap, error);
            g_mutex_unlock(&wrap->lock);
            return ok;
        }
    }

    g_mutex_lock(&wrap->lock);
    set_result_locked(wrap, wstatus);
    ok = return_result_locked(wrap, error);
    g_mutex_unlock(&wrap->lock);
    schedule_progress(wrap);
    return ok;
}

static void
finish_unspawned_thread(GTask *task, gpointer source, gpointer data,
                        GCancellable *cancellable)
{
    IohWrap *wrap = data;
    GError *err = NULL;

    (void)source;
    (void)cancellable;
    g_mutex_lock(&wrap->lock);
    finish_unspawned_locked(wrap);
    if (wrap->result) {
        err = g_error_copy(wrap->result);
    }
    g_mutex_unlock(&wrap->lock);
    if (err) {
        g_task_return_error(task, err);
    } else {
        g_task_return_boolean(task, TRUE);
    }
}

static void
on_cancelled(GCancellable *cancellable, gpointer data)
{
    IohWrap *wrap = data;

    (void)cancellable;
    g_mutex_lock(&wrap->lock);
    if (wrap->spawned && !wrap->reaped) {
        kill(wrap->pid, SIGKILL);
    }
    g_mutex_unlock(&wrap->lock);
}

/* Completes the pending task with the stored result (lock NOT held). */
static void
complete_task(IohWrap *wrap)
{
    g_autoptr(GTask) task = NULL;
    g_autoptr(GCancellable) cancellable = NULL;
    GError *err = NULL;
    gulong id;

    g_mutex_lock(&wrap->lock);
    task = g_steal_pointer(&wrap->task);
    cancellable = g_steal_pointer(&wrap->cancellable);
    id = wrap->cancel_id;
    wrap->cancel_id = 0;
    if (wrap->result) {
        err = g_error_copy(wrap->result);
    }
    g_mutex_unlock(&wrap->lock);
    if (cancellable && id) {
        g_cancellable_disconnect(cancellable, id);
    }
    if (!task) {
        g_clear_error(&err);
        return;
    }
    if (err) {
        g_task_return_error(task, err);
    } else {
        g_task_return_boolean(task, TRUE);
    }
}

static void
on_child_exited(GPid pid, gint wstatus, gpointer data)
{
    IohWrap *wrap = data;

    (void)pid;
    g_mutex_lock(&wrap->lock);
    if (!wrap->reaped) {
        set_result_locked(wrap, wstatus);
        if (wrap->result && wrap->cancellable &&
            g_cancellable_is_cancelled(wrap->cancellable)) {
            g_clear_error(&wrap->result);
            g_set_error(&wrap->result, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                        "finish of %s cancelled: helper killed", wrap->path);
        }
    }
    g_mutex_unlock(&wrap->lock);
    /* The final figures first (directly when this thread owns the wrap's context), so
     * that the callback of the finish sees progress complete. */
    schedule_progress(wrap);
    complete_task(wrap);
}

void
ioh_wrap_finish_async(IohWrap *wrap, GCancellable *cancellable,
                      GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);

    g_task_set_source_tag(task, ioh_wrap_finish_async);
    if (!wrap) {
        g_task_return_new_error(task, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                                "ioh_wrap_finish_async: wrap must not be NULL");
        return;
    }
    g_task_set_task_data(task, wrap_ref(wrap), wrap_unref);
    g_mutex_lock(&wrap->lock);
    if (!wrap->spawned && !wrap->finished) {
        /* fdatasync of a large save can take seconds: not in the caller's main loop. */
        g_mutex_unlock(&wrap->lock);
        g_task_run_in_thread(task, finish_unspawned_thread);
        return;
    }
    if (wrap->finished) {
        GError *err = wrap->result ? g_error_copy(wrap->result) : NULL;
        g_mutex_unlock(&wrap->lock);
        if (err) {
            g_task_return_error(task, err);
        } else {
            g_task_return_boolean(task, TRUE);
        }
        return;
    }
    if (wrap->task) {
        g_mutex_unlock(&wrap->lock);
        g_task_return_new_error(task, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                                "ioh_wrap_finish_async: a finish is already pending");
        return;
    }
    close_caller_end_locked(wrap);
    wrap->task = g_object_ref(task);
    wrap->child_source = g_child_watch_source_new(wrap->pid);
    g_source_set_callback(wrap->child_source, G_SOURCE_FUNC(on_child_exited),
                          wrap_ref(wrap), wrap_unref);
    g_source_set_name(wrap->child_source, "ioh-wrap helper exit");
    g_source_attach(wrap->child_source, g_task_get_context(task));
    if (cancellable) {
        wrap->cancellable = g_object_ref(cancellable);
    }
    g_mutex_unlock(&wrap->lock);
    if (cancellable) {
        /* May run on_cancelled at once; it takes the lock itself. */
        gulong id = g_cancellable_connect(cancellable, G_CALLBACK(on_cancelled),
                                          wrap_ref(wrap), wrap_unref);
        g_mutex_lock(&wrap->lock);
        if (wrap->cancellable) {
            wrap->cancel_id = id;
            id = 0;
        }
        g_mutex_unlock(&wrap->lock);
        if (id) {
            /* The child already exited and the task completed. */
            g_cancellable_disconnect(cancellable, id);
        }
    }
}

gboolean
ioh_wrap_finish_finish(IohWrap *wrap, GAsyncResult *result, GError **error)
{
    if (!g_task_is_valid(result, NULL) ||
        g_task_get_source_tag(G_TASK(result)) != ioh_wrap_finish_async) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish_finish: not the result of ioh_wrap_finish_async");
        return FALSE;
    }
    /* The task holds the wrap it finishes as its data (none for a NULL wrap). */
    if (g_task_get_task_data(G_TASK(result)) != (gpointer)wrap) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish_finish: the result belongs to another wrap");
        return FALSE;
    }
    return g_task_propagate_boolean(G_TASK(result), error);
}

void
ioh_wrap_free(IohWrap *wrap)
{
    ProgressCb *progress;
    gboolean pending;

    if (!wrap) {
        return;
    }
    g_mutex_lock(&wrap->lock);
    wrap->freed = TRUE;
    close_caller_end_locked(wrap);
    pending = wrap->task != NULL;
    if (wrap->child_source) {
        g_source_destroy(wrap->child_source);
    }
    if (wrap->spawned && !wrap->reaped) {
        int wstatus = 0;
        kill(wrap->pid, SIGKILL);
        while (waitpid(wrap->pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        wrap->reaped = TRUE;
        if (!wrap->finished) {
            wrap->finished = TRUE;
            g_set_error(&wrap->result, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                        "wrap of %s freed before its helper finished", wrap->path);
        }
    }
    if (wrap->status_source) {
        g_source_destroy(wrap->status_source);
    }
    if (wrap->err_source) {
        g_source_destroy(wrap->err_source);
    }
    progress = g_steal_pointer(&wrap->progress);
    g_mutex_unlock(&wrap->lock);
    if (pending) {
        complete_task(wrap);
    }
    progress_cb_unref(progress);
    wrap_unref(wrap);
}
