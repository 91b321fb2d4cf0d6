/* iohwrap-progress.c - the progress callback, run in the wrap's GMainContext
 *
 * Sources in the context captured by ioh_wrap_new() read the status and stderr pipes
 * (iohwrap-monitor.c) and deliver new figures to the registered callback (held in the
 * object, iohwrap-object.c; ioh_wrap_free() takes it away, so that nothing is delivered
 * after it).
 */
#include "config.h"

#include "iohwrap-private.h"

#include <glib-unix.h>

static void
deliver(IohWrap *wrap)
{
    g_autoptr(IohwProgressCb) cb = NULL;
    guint64 w = 0, s = 0;

    g_mutex_lock(&wrap->lock);
    if (wrap->progress && wrap->progress->func && wrap->monitor &&
        (wrap->monitor->written != wrap->told_written ||
         wrap->monitor->synced != wrap->told_synced)) {
        cb = iohw_progress_cb_ref(wrap->progress);
        w = wrap->told_written = wrap->monitor->written;
        s = wrap->told_synced = wrap->monitor->synced;
    }
    g_mutex_unlock(&wrap->lock);
    if (cb) {
        cb->func(w, s, cb->data);
    }
}

static gboolean
deliver_cb(gpointer data)
{
    deliver(data);
    return G_SOURCE_REMOVE;
}

void
iohw_progress_schedule(IohWrap *wrap)
{
    /* directly when this thread owns the context */
    g_main_context_invoke_full(wrap->context, G_PRIORITY_DEFAULT, deliver_cb,
                               iohw_ref(wrap), iohw_unref);
}

/* Either pipe is readable: read both (neither blocks), deliver new figures, and keep the
 * source of @fd until its pipe ends. */
static gboolean
on_readable(int fd, GIOCondition cond, gpointer data)
{
    IohWrap *wrap = data;
    gboolean eof;

    (void)cond;
    g_mutex_lock(&wrap->lock);
    iohw_monitor_read_status(wrap->monitor);
    iohw_monitor_read_err(wrap->monitor);
    eof = fd == wrap->monitor->status_fd ? wrap->monitor->status_eof
                                         : wrap->monitor->err_eof;
    g_mutex_unlock(&wrap->lock);
    deliver(wrap);
    return eof ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static GSource *
attach_fd_source(IohWrap *wrap, int fd)
{
    GSource *src = g_unix_fd_source_new(fd, G_IO_IN | G_IO_HUP | G_IO_ERR);

    g_source_set_callback(src, G_SOURCE_FUNC(on_readable), iohw_ref(wrap), iohw_unref);
    g_source_set_name(src, "ioh-wrap helper pipe");
    g_source_attach(src, wrap->context);
    return src;
}

void
iohw_progress_watch(IohWrap *wrap)
{
    wrap->status_source = attach_fd_source(wrap, wrap->monitor->status_fd);
    wrap->err_source = attach_fd_source(wrap, wrap->monitor->err_fd);
}
