/* qg-mig-helper.c - supervising the helper during a restore
 *
 * The helper's verdict comes from ioh_wrap_finish_async(), run in a main context of our
 * own that only the restore iterates (between two looks at QEMU). QEMU reads the
 * helper's pipe itself: what the helper says is all we know of the stream.
 */
#include "qg-migrate-private.h"

#include <errno.h>

#include "ioh-error.h"

static void
qg_mig_helper_on_exit(GObject *source, GAsyncResult *res, gpointer data)
{
    QgWatch *w = data;

    (void)source;
    if (!ioh_wrap_finish_finish(w->wrap, res, &w->helper_error) && !w->helper_error) {
        ioh_error_set(&w->helper_error, EIO, NULL, NULL, "the helper failed");
    }
    w->helper_pending = FALSE;
}

void
qg_mig_helper_start(QgWatch *w)
{
    w->ctx = g_main_context_new();
    g_main_context_push_thread_default(w->ctx);
    w->helper_cancel = g_cancellable_new();
    w->helper_pending = TRUE;
    ioh_wrap_finish_async(w->wrap, w->helper_cancel, qg_mig_helper_on_exit, w);
}

static gboolean
qg_mig_helper_timeout_cb(gpointer data)
{
    (void)data;
    return G_SOURCE_REMOVE;
}

void
qg_mig_helper_iterate(QgWatch *w, guint ms)
{
    if (ms > 0) {
        GSource *t = g_timeout_source_new(ms);

        g_source_set_callback(t, qg_mig_helper_timeout_cb, NULL, NULL);
        g_source_attach(t, w->ctx);
        g_main_context_iteration(w->ctx, TRUE);
        g_source_destroy(t);
        g_source_unref(t);
    }
    while (g_main_context_iteration(w->ctx, FALSE)) {
    }
}

gboolean
qg_mig_helper_wait(QgWatch *w, gint timeout_ms, gboolean kill)
{
    gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time() + timeout_ms * 1000LL;

    qg_mig_helper_iterate(w, 0);
    while (w->helper_pending || qg_mig_channels_pending(w)) {
        gint64 now = g_get_monotonic_time();

        if (deadline >= 0 && now >= deadline) {
            if (!kill) {
                return FALSE;
            }
            g_cancellable_cancel(w->helper_cancel);   /* SIGKILL; then the verdict comes */
            deadline = -1;
            continue;
        }
        qg_mig_helper_iterate(w, deadline < 0 ? 1000 : (guint)MAX((deadline - now) / 1000, 1));
    }
    return TRUE;
}

void
qg_mig_helper_end(QgWatch *w)
{
    if (!w->ctx) {
        return;
    }
    if (w->helper_pending || qg_mig_channels_pending(w)) {
        g_cancellable_cancel(w->helper_cancel);
        qg_mig_helper_wait(w, -1, FALSE);
    }
    g_main_context_pop_thread_default(w->ctx);
    g_clear_pointer(&w->ctx, g_main_context_unref);
    g_clear_object(&w->helper_cancel);
}

const GError *
qg_mig_helper_failure(QgWatch *w)
{
    if (w->helper_pending || !w->helper_error ||
        ioh_error_is_cancelled(w->helper_error)) {
        return NULL;
    }
    return w->helper_error;
}

/* A failure that is not the stream's: QEMU stopped reading (EPIPE), or the whole
 * stream went to QEMU and the helper refused its checksum. QEMU's verdict comes next. */
static gboolean
qg_mig_helper_awaits_qemu(const GError *herr)
{
    return ioh_error_get_errno(herr) == EPIPE ||
           g_strcmp0(ioh_error_get_operation(herr), "verify") == 0;
}

gboolean
qg_mig_stream_failed(QgWatch *w, GError **error)
{
    const GError *herr;

    qg_mig_helper_iterate(w, 0);
    herr = qg_mig_helper_failure(w);
    if (!herr) {
        /* a channel's helper that failed is a failed stream, whatever its cause: QEMU
         * gives no verdict on a channel that ended early */
        return qg_mig_channels_failed(w, error);
    }
    if (qg_mig_helper_awaits_qemu(herr)) {
        if (!w->qemu_stopped_at) {
            w->qemu_stopped_at = g_get_monotonic_time();
        }
        return FALSE;
    }
    /* a copy keeps the helper's fields (errno, operation, path) */
    g_propagate_prefixed_error(error, g_error_copy(herr), "%s failed: ", w->what);
    return TRUE;
}

guint64
qg_mig_bytes(QgWatch *w)
{
    guint64 written = 0;

    ioh_wrap_get_progress(w->wrap, &written, NULL);
    for (guint i = 0; i < w->n_chan_wraps; i++) {
        written += qg_mig_channels_bytes(w, i);
    }
    return written;
}

void
qg_mig_watch_clear(QgWatch *w)
{
    qg_mig_helper_end(w);   /* kills a helper still running, waits for its exit */
    qg_mig_channels_clear(w);
    g_clear_error(&w->helper_error);
    g_clear_pointer(&w->qemu_desc, g_free);
}
