/* qg-mig-channels.c - a multi-channel restore watches every channel's helper as it
 * watches the main one's (prefix qg_mig_channels_)
 *
 * QEMU 7.2 does not notice a multifd channel that ends early: its receive thread takes
 * the EOF for the end, and the main thread then waits for that channel at the next sync
 * point forever. Only the helpers know, so each one's exit is watched in the restore's
 * own context (the one qg_mig_helper_start() pushed) while QEMU loads, and the first one
 * that fails ends the restore at once: "restore failed: channel 1 of FILE: ...".
 */
#include "qg-migrate-private.h"

#include <errno.h>

#include "ioh-error.h"

struct QgChanWatch {
    QgWatch *w;
    IohWrap *wrap;
    gboolean pending;   /* its finish is started and has not called back yet */
    GError *error;      /* its verdict once !pending: NULL is success */
};

static void
qg_mig_channels_on_exit(GObject *source, GAsyncResult *res, gpointer data)
{
    QgChanWatch *c = data;

    (void)source;
    if (!ioh_wrap_finish_finish(c->wrap, res, &c->error) && !c->error) {
        ioh_error_set(&c->error, EIO, NULL, NULL, "the helper failed");
    }
    c->pending = FALSE;
}

void
qg_mig_channels_start(QgWatch *w, IohWrap **wraps, guint n)
{
    w->chans = g_new0(QgChanWatch, n);
    w->n_chans = n;
    w->chan_wraps = wraps;
    w->n_chan_wraps = n;
    for (guint i = 0; i < n; i++) {
        QgChanWatch *c = &w->chans[i];

        c->w = w;
        c->wrap = wraps[i];
        c->pending = TRUE;
        ioh_wrap_finish_async(c->wrap, w->helper_cancel, qg_mig_channels_on_exit, c);
    }
}

gboolean
qg_mig_channels_pending(const QgWatch *w)
{
    for (guint i = 0; i < w->n_chans; i++) {
        if (w->chans[i].pending) {
            return TRUE;
        }
    }
    return FALSE;
}

/* The first channel whose helper failed (killed by us does not count): with @epipe,
 * any; without, one that did not fail for a broken pipe. -1: none. */
static int
qg_mig_channels_find(const QgWatch *w, gboolean epipe)
{
    for (guint i = 0; i < w->n_chans; i++) {
        const QgChanWatch *c = &w->chans[i];

        if (!c->pending && c->error && !ioh_error_is_cancelled(c->error) &&
            (epipe || ioh_error_get_errno(c->error) != EPIPE)) {
            return (int)i;
        }
    }
    return -1;
}

gboolean
qg_mig_channels_failed(QgWatch *w, GError **error)
{
    int i = qg_mig_channels_find(w, FALSE);
    gint64 deadline = g_get_monotonic_time() + QG_HELPER_EXIT_WAIT_MS * 1000LL;

    if (i < 0 && qg_mig_channels_find(w, TRUE) >= 0) {
        /* A broken pipe is QEMU dropping every channel after one failed: the failed one
         * is the cause, its helper's exit may not be in yet. */
        while (i < 0 && qg_mig_channels_pending(w) && g_get_monotonic_time() < deadline) {
            qg_mig_helper_iterate(w, 50);
            i = qg_mig_channels_find(w, FALSE);
        }
        i = i < 0 ? qg_mig_channels_find(w, TRUE) : i;
    }
    if (i < 0) {
        return FALSE;
    }
    /* a copy keeps the helper's fields (errno, operation, path) */
    g_propagate_prefixed_error(error, g_error_copy(w->chans[i].error),
                               "%s failed: channel %d of %s%s: ", w->what, i, w->path,
                               ioh_error_get_errno(w->chans[i].error) == EPIPE ?
                               " (QEMU closed it before its end)" : "");
    return TRUE;
}

guint64
qg_mig_channels_bytes(const QgWatch *w, guint i)
{
    guint64 written = 0;

    ioh_wrap_get_progress(w->chan_wraps[i], &written, NULL);
    return written;
}

void
qg_mig_channels_clear(QgWatch *w)
{
    for (guint i = 0; i < w->n_chans; i++) {
        g_clear_error(&w->chans[i].error);
    }
    g_clear_pointer(&w->chans, g_free);
    w->n_chans = 0;
    w->chan_wraps = NULL;
    w->n_chan_wraps = 0;
}
