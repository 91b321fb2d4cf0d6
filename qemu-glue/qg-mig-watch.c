/* qg-mig-watch.c - waiting for QEMU's verdict on a migration: its MIGRATION events,
 * progress reports, the stall timeout and the caller's cancel */
#include "qg-migrate-private.h"

#include <errno.h>

#include "ioh-error.h"
#include "ioh-json.h"

static void
qg_mig_watch_progress(QgWatch *w, gboolean save)
{
    QgProgress p = { 0 };

    ioh_wrap_get_progress(w->wrap, &p.written, &p.synced);
    if (w->n_chan_wraps) {
        /* every connection's helper: the main channel's, then each channel's */
        p.connections = MIN(w->n_chan_wraps + 1, QG_MIGRATE_CONNECTIONS_MAX);
        p.connection_bytes[0] = p.written;
        for (guint i = 0; i + 1 < p.connections; i++) {
            guint64 synced = 0;

            ioh_wrap_get_progress(w->chan_wraps[i], &p.connection_bytes[i + 1], &synced);
            p.written += p.connection_bytes[i + 1];
            p.synced += synced;
        }
    }
    p.bytes = p.written;
    p.total = w->total;
    p.seconds = (g_get_monotonic_time() - w->start) / 1e6;
    if (w->total) {
        p.fraction = MIN((double)p.bytes / w->total, 1.0);
    } else if (save) {
        /* Not longer than a progress period: a QEMU that went silent is the stall
         * timeout's to judge, not this figure's. */
        g_autoptr(JsonObject) m = qg_mig_query_migrate(w->qmp, QG_PROGRESS_QUERY_MS, NULL);
        JsonObject *ram = ioh_json_get_object(m, "ram");
        double tot = (double)ioh_json_get_int(ram, "total", 0);
        double rem = (double)ioh_json_get_int(ram, "remaining", 0);

        p.fraction = tot > 0 ? CLAMP(1.0 - rem / tot, 0.0, 1.0) : 0;
    }
    w->opts->progress(w->what, &p, w->opts->progress_data);
}

/* The QMP connection failed while QEMU migrated: sets @error from @err (consumed). */
static void
qg_mig_watch_qmp_failed(QgWatch *w, gboolean save, GError *err, GError **error)
{
    if (!save && err->domain == QG_QMP_ERROR && err->code == QG_QMP_ERROR_CLOSED) {
        w->qemu_gone = TRUE;
        if (qg_mig_stream_failed(w, error)) {
            g_error_free(err);
            return;
        }
        ioh_error_set(error, EIO, NULL, NULL,
                      "restore failed: QEMU exited while loading the stream "
                      "(%" G_GUINT64_FORMAT " bytes fed): %s",
                      qg_mig_bytes(w), err->message);
        g_error_free(err);
    } else {
        g_propagate_prefixed_error(error, err, "%s failed: %s: ", w->what, w->path);
    }
}

/* QEMU said the migration failed: why, as well as can be told. */
static void
qg_mig_watch_failed(QgWatch *w, gboolean save, GError **error)
{
    const GError *herr;

    if (!save) {
        /* A helper that died makes QEMU fail: its verdict may be on its way (QEMU 7.2
         * exits after a failed load, so a helper still copying sees EPIPE soon). */
        qg_mig_helper_wait(w, QG_HELPER_EXIT_WAIT_MS, FALSE);
        if (qg_mig_stream_failed(w, error)) {
            return;
        }
    }
    herr = save ? NULL : qg_mig_helper_failure(w);
    if (herr && g_strcmp0(ioh_error_get_operation(herr), "verify") == 0) {
        /* the stream was bad, and QEMU found out too: the checksum says it first */
        g_propagate_prefixed_error(error, g_error_copy(herr), "restore failed: ");
        return;
    }
    g_free(w->qemu_desc);
    w->qemu_desc = qg_mig_error_desc(w->qmp);
    if (w->qemu_desc) {
        ioh_error_set(error, EIO, NULL, NULL,
                      "%s failed: QEMU says: %s", w->what, w->qemu_desc);
    } else if (save) {
        ioh_error_set(error, EIO, NULL, NULL,
                      "save failed: QEMU gave no reason (see its log)");
    } else {
        /* QEMU 7.2 keeps the reason of a failed load to its stderr, and exits */
        ioh_error_set(error, EIO, NULL, NULL,
                      "restore failed: QEMU could not load the stream after "
                      "%" G_GUINT64_FORMAT " bytes (its log says why; it exits now)",
                      qg_mig_bytes(w));
    }
}

/* What the event @ev says of the job: 1 it is complete, -1 it failed (@error set), 0
 * it goes on (or @ev is about something else). */
static int
qg_mig_watch_event(QgWatch *w, gboolean save, JsonObject *ev, GError **error)
{
    const char *st;

    if (g_strcmp0(ioh_json_get_string(ev, "event"), "MIGRATION") != 0) {
        return 0;
    }
    st = ioh_json_get_string(ioh_json_get_object(ev, "data"), "status");
    if (!st) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "%s failed: malformed MIGRATION event from QEMU: no status string",
                    w->what);
        return -1;
    }
    if (g_str_equal(st, "completed")) {
        return 1;
    }
    if (g_str_equal(st, "failed")) {
        qg_mig_watch_failed(w, save, error);
        return -1;
    }
    if (g_str_equal(st, "cancelled")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s cancelled in QEMU",
                    w->what);
        return -1;
    }
    return 0;
}

/* Restore: the helper failed, or its stream ended (QEMU stopped reading, or the helper
 * refused the checksum) and QEMU gave no verdict in time. */
static gboolean
qg_mig_watch_restore_failed(QgWatch *w, gint64 now, GError **error)
{
    const GError *herr;

    if (qg_mig_stream_failed(w, error)) {
        return TRUE;
    }
    if (!w->qemu_stopped_at || now - w->qemu_stopped_at <= QG_QEMU_VERDICT_WAIT_MS * 1000LL) {
        return FALSE;
    }
    herr = qg_mig_helper_failure(w);
    ioh_error_set(error, EIO, NULL, NULL,
                  "restore failed: the stream ended and QEMU gave no verdict within %d s (%s)",
                  QG_QEMU_VERDICT_WAIT_MS / 1000, herr ? herr->message : "helper done");
    return TRUE;
}

/* TRUE (and @error) when no byte of the stream moved for opts->stall_timeout_s: QEMU
 * sends or takes nothing, or the helper is stuck. Progress is any byte the helper
 * moved. */
static gboolean
qg_mig_watch_stalled(QgWatch *w, gint64 now, GError **error)
{
    guint64 bytes = qg_mig_bytes(w);

    if (!w->last_progress) {
        w->last_progress = w->start;   /* the job's start: nothing moved yet */
    }
    if (bytes != w->last_written) {
        w->last_progress = now;
        w->last_written = bytes;
        return FALSE;
    }
    if (!w->opts->stall_timeout_s ||
        now - w->last_progress < (gint64)w->opts->stall_timeout_s * G_USEC_PER_SEC) {
        return FALSE;
    }
    ioh_error_set(error, ETIMEDOUT, NULL, NULL,
                  "%s failed: the migration stalled: no byte of the stream moved for %u s "
                  "(%" G_GUINT64_FORMAT " bytes so far)", w->what, w->opts->stall_timeout_s,
                  bytes);
    return TRUE;
}

gboolean
qg_mig_cancelled(QgWatch *w, GError **error)
{
    if (!g_cancellable_is_cancelled(w->opts->cancellable)) {
        return FALSE;
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s interrupted", w->what);
    return TRUE;
}

gboolean
qg_mig_wait(QgWatch *w, gboolean save, GError **error)
{
    guint interval = w->opts->progress_interval_ms ? w->opts->progress_interval_ms : 500;
    guint slice = save ? interval : MIN(interval, QG_RESTORE_POLL_MS);
    gint64 next = g_get_monotonic_time() + (gint64)interval * 1000;

    for (;;) {
        GError *err = NULL;
        g_autoptr(JsonObject) ev = qg_qmp_next_event(w->qmp, slice, &err);
        gint64 now;
        int verdict;

        if (err) {
            qg_mig_watch_qmp_failed(w, save, err, error);
            return FALSE;
        }
        if (qg_mig_cancelled(w, error)) {
            return FALSE;
        }
        verdict = ev ? qg_mig_watch_event(w, save, ev, error) : 0;
        if (verdict) {
            return verdict > 0;
        }
        now = g_get_monotonic_time();
        if (w->listener && !qg_channels_check_no_extra(w->listener, error)) {
            g_prefix_error(error, "%s failed: %s: ", w->what, w->path);
            return FALSE;
        }
        if ((!save && qg_mig_watch_restore_failed(w, now, error)) ||
            qg_mig_watch_stalled(w, now, error)) {
            return FALSE;
        }
        if (w->opts->progress && now >= next) {
            qg_mig_watch_progress(w, save);
            next = now + (gint64)interval * 1000;
        }
    }
}

