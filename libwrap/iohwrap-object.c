/* iohwrap-object.c - the wrap object: its references and the progress callback
 *
 * Below everything that works on a wrap (iohwrap-private.h draws the layers): this file
 * calls none of those, only the monitor and the options it frees.
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-private.h"

#include "ioh-fd.h"

IohWrap *
iohw_wrap_new(const char *path, int fd, const IohwPlan *plan)
{
    IohWrap *wrap = g_new0(IohWrap, 1);

    wrap->refs = 1;
    g_mutex_init(&wrap->lock);
    wrap->context = g_main_context_ref_thread_default();
    wrap->state = IOHW_STATE_NEW;
    wrap->path = path ? g_strdup(path) : g_strdup_printf("fd %d", fd);
    wrap->file_fd = -1;
    wrap->caller_fd = -1;
    wrap->stream_fd = -1;
    wrap->save = plan->save;
    wrap->length = plan->length;
    wrap->start = plan->start;
    return wrap;
}

IohWrap *
iohw_ref(IohWrap *wrap)
{
    g_atomic_int_inc(&wrap->refs);
    return wrap;
}

void
iohw_unref(gpointer data)
{
    IohWrap *wrap = data;

    if (!g_atomic_int_dec_and_test(&wrap->refs)) {
        return;
    }
    g_clear_pointer(&wrap->status_source, g_source_unref);
    g_clear_pointer(&wrap->err_source, g_source_unref);
    g_clear_pointer(&wrap->child_source, g_source_unref);
    g_clear_pointer(&wrap->monitor, iohw_monitor_free);
    ioh_fd_clear(&wrap->file_fd);
    iohw_progress_cb_unref(wrap->progress);    /* NULL once ioh_wrap_free() ran */
    g_clear_error(&wrap->result);
    g_clear_object(&wrap->cancellable);
    g_clear_pointer(&wrap->context, g_main_context_unref);
    g_free(wrap->path);
    g_free(wrap->helper);
    g_free(wrap->uri);
    ioh_wrap_options_free(wrap->options);
    g_mutex_clear(&wrap->lock);
    g_free(wrap);
}

void
iohw_task_return(GTask *task, GError *err)
{
    if (err) {
        g_task_return_error(task, err);
    } else {
        g_task_return_boolean(task, TRUE);
    }
}

IohwProgressCb *
iohw_progress_cb_new(IohWrapProgressFunc func, gpointer data, GDestroyNotify notify)
{
    IohwProgressCb *cb = g_new0(IohwProgressCb, 1);

    cb->refs = 1;
    cb->func = func;
    cb->data = data;
    cb->notify = notify;
    return cb;
}

IohwProgressCb *
iohw_progress_cb_ref(IohwProgressCb *cb)
{
    g_atomic_int_inc(&cb->refs);
    return cb;
}

void
iohw_progress_cb_unref(IohwProgressCb *cb)
{
    if (!cb || !g_atomic_int_dec_and_test(&cb->refs)) {
        return;
    }
    if (cb->notify) {
        cb->notify(cb->data);
    }
    g_free(cb);
}
