/* qg-mig-helper.c - supervising the helper and the relay during a restore
 *
 * The helper's verdict comes from ioh_wrap_finish_async(), run in a main context of our
 * own that only the restore iterates (between two looks at QEMU).
 */
#include "qg-migrate-private.h"

static void
qg_mig_helper_on_exit(GObject *source, GAsyncResult *res, gpointer data)
{
    QgWatch *w = data;

    (void)source;
    if (!ioh_wrap_finish_finish(w->wrap, res, &w->helper_error) && !w->helper_error) {
        g_set_error_literal(&w->helper_error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                            "the helper failed");
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
    while (w->helper_pending) {
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
    if (w->helper_pending) {
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
        g_error_matches(w->helper_error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        return NULL;
    }
    return w->helper_error;
}

gboolean
qg_mig_stream_failed(QgWatch *w, guint wait_ms, GError **error)
{
    g_autoptr(GError) rerr = NULL;
    const GError *herr;
    guint64 bytes = 0;
    gboolean cut = FALSE;

    qg_mig_helper_iterate(w, 0);
    if (qg_relay_has_ended(w->relay)) {
        if (qg_relay_wait(w->relay, &bytes, NULL, &rerr)) {
            cut = bytes < w->total;
        } else if (rerr->code != QG_RELAY_ERROR_READ) {
            /* WRITE: QEMU closed its end. CANCELLED: cannot happen while we wait. */
            if (!w->qemu_stopped_at) {
                w->qemu_stopped_at = g_get_monotonic_time();
            }
            return FALSE;
        }
        if (cut || rerr) {
            qg_mig_helper_wait(w, (gint)wait_ms, TRUE);
        }
    }
    herr = qg_mig_helper_failure(w);
    if (herr) {
        g_set_error(error, herr->domain, herr->code, "%s failed: %s", w->what,
                    herr->message);
        return TRUE;
    }
    if (cut) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "%s failed: the stream from %s ended after %" G_GUINT64_FORMAT " of %"
                    G_GUINT64_FORMAT " bytes", w->what, w->path, bytes, w->total);
        return TRUE;
    }
    if (rerr) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED, "%s failed: %s",
                    w->what, rerr->message);
        return TRUE;
    }
    return FALSE;
}


void
qg_mig_watch_clear(QgWatch *w)
{
    qg_mig_helper_end(w);   /* kills a helper still running, waits for its exit */
    g_clear_error(&w->helper_error);
    g_clear_pointer(&w->qemu_desc, g_free);
}
