/* iohwrap-finish.c - waiting for the helper and its result, synchronously or not
 *
 * The exit status decides success; the final line of the status pipe (iohwrap-monitor.c)
 * gives the error. A helper that exits non-zero without one is an error naming the
 * helper and the status; one killed by a signal is IOH_WRAP_ERROR_KILLED.
 */
#include "config.h"

#include "iohwrap-private.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void
iohw_finish_close_caller_locked(IohWrap *wrap)
{
    struct stat st;

    if (wrap->caller_fd < 0) {
        return;
    }
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
    IohwMonitor *m = wrap->monitor;
    off_t pos;

    if (m->got_result || wrap->file_fd < 0) {
        return;
    }
    pos = lseek(wrap->file_fd, 0, SEEK_CUR);
    if (pos >= 0 && (guint64)pos >= wrap->start) {
        guint64 n = (guint64)pos - wrap->start;
        if (wrap->length && !wrap->save) {
            n = MIN(n, wrap->length);
        }
        m->written = m->synced = MAX(m->written, n);
    }
}

/* Turns a wait status into the result. */
static void
set_result_locked(IohWrap *wrap, int wstatus)
{
    IohwMonitor *m = wrap->monitor;

    wrap->state = IOHW_STATE_REAPED;
    iohw_monitor_read_status(m);
    iohw_monitor_read_err(m);
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        final_counts_locked(wrap);
        return;
    }
    if (m->err_text->len > 0) {
        g_debug("helper for %s failed; its stderr: %s", wrap->path, m->err_text->str);
    }
    if (WIFSIGNALED(wstatus)) {
        g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED,
                    "helper killed by signal %d", WTERMSIG(wstatus));
    } else if (m->final_error) {
        wrap->result = g_error_copy(m->final_error);
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

/* Reads the pipes to their end, reaps the helper and sets the result. */
static void
wait_helper_locked(IohWrap *wrap)
{
    int wstatus = 0;

    iohw_finish_close_caller_locked(wrap);
    iohw_monitor_read_to_eof(wrap->monitor, &wrap->lock);
    g_mutex_unlock(&wrap->lock);
    while (waitpid(wrap->pid, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            int errsv = errno;
            g_mutex_lock(&wrap->lock);
            wrap->state = IOHW_STATE_REAPED;
            g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED,
                        "wait for helper %d: %s", (int)wrap->pid, g_strerror(errsv));
            return;
        }
    }
    g_mutex_lock(&wrap->lock);
    set_result_locked(wrap, wstatus);
}

void
iohw_finish_failed_start(IohWrap *wrap, gboolean kill_it, GError **error)
{
    g_mutex_lock(&wrap->lock);
    if (kill_it) {
        kill(wrap->pid, SIGKILL);
    }
    wait_helper_locked(wrap);
    if (!wrap->result) {    /* exit 0 without ever starting: not a helper of ours */
        g_set_error(&wrap->result, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED,
                    "helper %s for %s exited before starting the copy", wrap->helper,
                    wrap->path);
    }
    (void)return_result_locked(wrap, error);
    g_mutex_unlock(&wrap->lock);
}

gboolean
ioh_wrap_finish(IohWrap *wrap, GError **error)
{
    gboolean waited = FALSE;
    gboolean ok = FALSE;

    if (!wrap) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish: wrap must not be NULL");
        return FALSE;
    }
    g_mutex_lock(&wrap->lock);
    if (!iohw_state_is_finished(wrap->state) && wrap->task) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_finish: an asynchronous finish is pending");
    } else {
        if (wrap->state == IOHW_STATE_DIRECT) {
            iohw_nohelper_finish_locked(wrap);
        } else if (wrap->state == IOHW_STATE_RUNNING) {
            wait_helper_locked(wrap);
            waited = TRUE;
        }
        ok = return_result_locked(wrap, error);
    }
    g_mutex_unlock(&wrap->lock);
    if (waited) {
        iohw_progress_schedule(wrap);    /* the final figures */
    }
    return ok;
}

static void
on_cancelled(GCancellable *cancellable, gpointer data)
{
    IohWrap *wrap = data;

    (void)cancellable;
    g_mutex_lock(&wrap->lock);
    if (wrap->state == IOHW_STATE_RUNNING) {
        kill(wrap->pid, SIGKILL);
    }
    g_mutex_unlock(&wrap->lock);
}

void
iohw_finish_complete_task(IohWrap *wrap)
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
    iohw_task_return(task, err);
}

static void
on_child_exited(GPid pid, gint wstatus, gpointer data)
{
    IohWrap *wrap = data;

    (void)pid;
    g_mutex_lock(&wrap->lock);
    if (wrap->state == IOHW_STATE_RUNNING) {
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
    iohw_progress_schedule(wrap);
    iohw_finish_complete_task(wrap);
}

/* Kills the helper when @cancellable is cancelled, from now until the task completes. */
static void
connect_cancellable(IohWrap *wrap, GCancellable *cancellable)
{
    /* May run on_cancelled at once; it takes the lock itself. */
    gulong id = g_cancellable_connect(cancellable, G_CALLBACK(on_cancelled),
                                      iohw_ref(wrap), iohw_unref);

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

/* Watches the helper's exit in the task's context (lock held). */
static void
watch_child_locked(IohWrap *wrap, GTask *task, GCancellable *cancellable)
{
    iohw_finish_close_caller_locked(wrap);
    wrap->task = g_object_ref(task);
    wrap->child_source = g_child_watch_source_new(wrap->pid);
    g_source_set_callback(wrap->child_source, G_SOURCE_FUNC(on_child_exited),
                          iohw_ref(wrap), iohw_unref);
    g_source_set_name(wrap->child_source, "ioh-wrap helper exit");
    g_source_attach(wrap->child_source, g_task_get_context(task));
    if (cancellable) {
        wrap->cancellable = g_object_ref(cancellable);
    }
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
    g_task_set_task_data(task, iohw_ref(wrap), iohw_unref);
    g_mutex_lock(&wrap->lock);
    if (wrap->state == IOHW_STATE_DIRECT) {
        g_mutex_unlock(&wrap->lock);
        iohw_nohelper_finish_async(task);
    } else if (iohw_state_is_finished(wrap->state)) {
        GError *err = wrap->result ? g_error_copy(wrap->result) : NULL;
        g_mutex_unlock(&wrap->lock);
        iohw_task_return(task, err);
    } else if (wrap->task) {
        g_mutex_unlock(&wrap->lock);
        g_task_return_new_error(task, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                                "ioh_wrap_finish_async: a finish is already pending");
    } else {
        watch_child_locked(wrap, task, cancellable);
        g_mutex_unlock(&wrap->lock);
        if (cancellable) {
            connect_cancellable(wrap, cancellable);
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
iohw_finish_abandon_locked(IohWrap *wrap)
{
    int wstatus = 0;

    if (wrap->state != IOHW_STATE_RUNNING) {
        return;
    }
    kill(wrap->pid, SIGKILL);
    while (waitpid(wrap->pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    wrap->state = IOHW_STATE_REAPED;
    g_set_error(&wrap->result, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                "wrap of %s freed before its helper finished", wrap->path);
}
