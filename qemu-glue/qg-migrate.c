/* qg-migrate.c - save and restore QEMU through the helper */
#include "qg-migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <glib-unix.h>

#include "iohwrap.h"
#include "qg-file.h"
#include "qg-image.h"
#include "qg-json.h"
#include "qg-relay.h"

#define QG_PIPE_SIZE (1024 * 1024)
#define QG_FDNAME_SAVE "qg-save"
#define QG_FDNAME_RESTORE "qg-restore"
/* "Unlimited": QEMU takes bytes/s; 1 TiB/s is far above any pipe. */
#define QG_BANDWIDTH_UNLIMITED (G_GUINT64_CONSTANT(1) << 40)

G_DEFINE_QUARK(qg-migrate-error-quark, qg_migrate_error)

const char *
qg_cache_mode_to_string(QgCacheMode mode)
{
    switch (mode) {
    case QG_CACHE_DIRECT:
        return "direct";
    case QG_CACHE_FADVISE:
        return "fadvise";
    case QG_CACHE_KEEP:
    default:
        return "buffered";
    }
}

static IohWrapFlags
qg_wrap_flags(QgCacheMode mode)
{
    IohWrapFlags f = IOH_WRAP_POLLABLE;

    if (mode == QG_CACHE_DIRECT) {
        f |= IOH_WRAP_DIRECT;
    } else if (mode == QG_CACHE_FADVISE) {
        f |= IOH_WRAP_FADVISE;
    }
    return f;
}

/* ---- small QMP helpers: every reply is checked against its shape ---- */

static const QgJsonMember qg_status_shape[] = {
    { "status", QG_JSON_STRING, TRUE },
    { "running", QG_JSON_BOOLEAN, TRUE },
    { NULL, 0, FALSE },
};

static char *
qg_query_status(QgQmp *qmp, gboolean *ret_running, GError **error)
{
    g_autoptr(JsonObject) o = qg_qmp_call(qmp, "query-status", NULL, -1, qg_status_shape,
                                          0, error);

    if (!o) {
        return NULL;
    }
    *ret_running = json_object_get_boolean_member(o, "running");
    return g_strdup(json_object_get_string_member(o, "status"));
}

static gboolean
qg_enable_events(QgQmp *qmp, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonObject) cap = json_object_new();
    g_autoptr(JsonArray) caps = json_array_new();

    json_object_set_string_member(cap, "capability", "events");
    json_object_set_boolean_member(cap, "state", TRUE);
    json_array_add_object_element(caps, g_steal_pointer(&cap));
    json_object_set_array_member(args, "capabilities", g_steal_pointer(&caps));
    return qg_qmp_run(qmp, "migrate-set-capabilities", args, error);
}

static gboolean
qg_set_bandwidth(QgQmp *qmp, guint64 bw, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_int_member(args, "max-bandwidth", (gint64)bw);
    return qg_qmp_run(qmp, "migrate-set-parameters", args, error);
}

static const QgJsonMember qg_parameters_shape[] = {
    { "max-bandwidth", QG_JSON_INT, FALSE },
    { NULL, 0, FALSE },
};

/* QEMU's max-bandwidth, 0 when it has none to tell (or refuses to); FALSE when the
 * reply has a shape it should not have, or none came. */
static gboolean
qg_get_bandwidth(QgQmp *qmp, guint64 *ret_bw, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(JsonObject) o = qg_qmp_call(qmp, "query-migrate-parameters", NULL, -1,
                                          qg_parameters_shape, 0, &local);

    *ret_bw = o ? (guint64)MAX(qg_json_get_int(o, "max-bandwidth", 0), 0) : 0;
    if (!o && !g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    return TRUE;
}

static gboolean
qg_pass_fd(QgQmp *qmp, const char *name, int fd, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonObject) r = NULL;

    json_object_set_string_member(args, "fdname", name);
    r = qg_qmp_call(qmp, "getfd", args, fd, NULL, 0, error);
    return r != NULL;
}

static void
qg_close_fd_name(QgQmp *qmp, const char *name)
{
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_string_member(args, "fdname", name);
    qg_qmp_run(qmp, "closefd", args, NULL);
}

static const QgJsonMember qg_migrate_info_shape[] = {
    { "status", QG_JSON_STRING, FALSE },
    { "error-desc", QG_JSON_STRING, FALSE },
    { "downtime", QG_JSON_INT, FALSE },
    { "ram", QG_JSON_OBJECT, FALSE },
    { NULL, 0, FALSE },
};

/* query-migrate's return, or NULL; waits @timeout_ms (0: the usual reply timeout). */
static JsonObject *
qg_query_migrate(QgQmp *qmp, guint timeout_ms, GError **error)
{
    return qg_qmp_call(qmp, "query-migrate", NULL, -1, qg_migrate_info_shape, timeout_ms,
                       error);
}

static const QgJsonMember qg_memory_shape[] = {
    { "base-memory", QG_JSON_INT, TRUE },
    { "plugged-memory", QG_JSON_INT, FALSE },
    { NULL, 0, FALSE },
};

/* The machine type and RAM size for the header. A QEMU that refuses to tell leaves them
 * unknown; a reply of the wrong shape, or none, fails. */
static gboolean
qg_machine_info(QgQmp *qmp, QgImageInfo *info, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonNode) t = NULL;
    g_autoptr(JsonObject) m = NULL;
    g_autoptr(GError) local = NULL;

    json_object_set_string_member(args, "path", "/machine");
    json_object_set_string_member(args, "property", "type");
    t = qg_qmp_execute(qmp, "qom-get", args, &local);
    if (!t && !g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    g_clear_error(&local);
    if (t && !qg_json_node_is(t, QG_JSON_STRING)) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "unexpected reply from QEMU to 'qom-get' of the machine type: it is %s, "
                    "not a string", qg_json_describe(t));
        return FALSE;
    }
    if (t) {
        const char *s = json_node_get_string(t);
        info->machine = g_str_has_suffix(s, "-machine")
            ? g_strndup(s, strlen(s) - strlen("-machine")) : g_strdup(s);
    }
    m = qg_qmp_call(qmp, "query-memory-size-summary", NULL, -1, qg_memory_shape, 0, &local);
    if (!m && !g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (m) {
        info->ram_size = json_object_get_int_member(m, "base-memory") +
                         qg_json_get_int(m, "plugged-memory", 0);
    }
    info->qemu_version = g_strdup(qg_qmp_get_version(qmp));
    return TRUE;
}

static gboolean
qg_make_pipe(int fds[2], GError **error)
{
    if (g_unix_open_pipe(fds, FD_CLOEXEC, NULL) == FALSE) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO, "cannot create a pipe: %s",
                    g_strerror(errno));
        return FALSE;
    }
    /* Best effort: a 1 MiB pipe doubles the throughput of a 64 KiB one. */
    if (fcntl(fds[1], F_SETPIPE_SZ, QG_PIPE_SIZE) < 0) {
        /* pipe-max-size may be lower: keep the default */
    }
    return TRUE;
}

/* rename(2), then fsync the directory so the new name is durable too. */
static gboolean
qg_rename_durably(const char *from, const char *to, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(to);
    int dfd;

    if (rename(from, to) < 0) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot rename %s to %s: %s", from, to, g_strerror(errno));
        return FALSE;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0) {
        int e = errno;
        if (dfd >= 0) {
            close(dfd);
        }
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot sync the folder %s: %s", dir, g_strerror(e));
        return FALSE;
    }
    close(dfd);
    return TRUE;
}

/* ---- the wait for QEMU ---- */

/* While QEMU loads a stream, the restore also looks at the helper and the relay this
 * often: QEMU 7.2 does not notice a stream that ends early (it spins on POLLHUP). */
#define QG_RESTORE_POLL_MS 50
/* How long the helper may take to exit once its end of the stream closed. */
#define QG_HELPER_EXIT_WAIT_MS 5000
/* How long QEMU may take to give its verdict once it stopped reading the stream. */
#define QG_QEMU_VERDICT_WAIT_MS 10000
/* How long a QEMU told to quit may take to close its QMP connection. */
#define QG_QUIT_WAIT_MS 5000
/* How long a progress line waits for QEMU's figures. */
#define QG_PROGRESS_QUERY_MS 2000

typedef struct {
    const char *what;
    const char *path;
    QgQmp *qmp;
    const QgMigrateOptions *opts;
    QgRelay *relay;
    IohWrap *wrap;
    guint64 total;
    gint64 start;
    /* restore: the helper's verdict, from ioh_wrap_finish_async() run in ctx */
    GMainContext *ctx;
    GCancellable *helper_cancel;
    gboolean helper_pending;    /* the finish is started and has not called back yet */
    GError *helper_error;       /* its result once !helper_pending: NULL is success */
    gint64 qemu_stopped_at;     /* when the relay could no longer write to QEMU; 0: not */
    gboolean qemu_gone;         /* QEMU closed the QMP connection */
    /* the stall watch: the figures last seen to change, and when */
    guint64 last_bytes;
    guint64 last_written;
    gint64 last_progress;
} QgWatch;

static void
qg_on_helper_exit(GObject *source, GAsyncResult *res, gpointer data)
{
    QgWatch *w = data;

    (void)source;
    if (!ioh_wrap_finish_finish(w->wrap, res, &w->helper_error) && !w->helper_error) {
        g_set_error_literal(&w->helper_error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                            "the helper failed");
    }
    w->helper_pending = FALSE;
}

/* Starts watching the helper: its exit is reported in a context of our own (pushed as
 * this thread's default until qg_watch_helper_end()), iterated only by the restore. */
static void
qg_watch_helper_start(QgWatch *w)
{
    w->ctx = g_main_context_new();
    g_main_context_push_thread_default(w->ctx);
    w->helper_cancel = g_cancellable_new();
    w->helper_pending = TRUE;
    ioh_wrap_finish_async(w->wrap, w->helper_cancel, qg_on_helper_exit, w);
}

static gboolean
qg_timeout_cb(gpointer data)
{
    (void)data;
    return G_SOURCE_REMOVE;
}

/* Runs what is ready in the helper's context, waiting at most @ms for something. */
static void
qg_watch_iterate(QgWatch *w, guint ms)
{
    if (ms > 0) {
        GSource *t = g_timeout_source_new(ms);

        g_source_set_callback(t, qg_timeout_cb, NULL, NULL);
        g_source_attach(t, w->ctx);
        g_main_context_iteration(w->ctx, TRUE);
        g_source_destroy(t);
        g_source_unref(t);
    }
    while (g_main_context_iteration(w->ctx, FALSE)) {
    }
}

/* Waits for the helper's verdict: at most @timeout_ms (-1: for as long as it takes);
 * past that, with @kill, kills the helper (its verdict is then CANCELLED) and waits for
 * that. Returns TRUE when the verdict is in. */
static gboolean
qg_watch_helper_wait(QgWatch *w, gint timeout_ms, gboolean kill)
{
    gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time() + timeout_ms * 1000LL;

    qg_watch_iterate(w, 0);
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
        qg_watch_iterate(w, deadline < 0 ? 1000 : (guint)MAX((deadline - now) / 1000, 1));
    }
    return TRUE;
}

/* Ends the watch (kills a helper still running), pops the context. Safe to repeat. */
static void
qg_watch_helper_end(QgWatch *w)
{
    if (!w->ctx) {
        return;
    }
    if (w->helper_pending) {
        g_cancellable_cancel(w->helper_cancel);
        qg_watch_helper_wait(w, -1, FALSE);
    }
    g_main_context_pop_thread_default(w->ctx);
    g_clear_pointer(&w->ctx, g_main_context_unref);
    g_clear_object(&w->helper_cancel);
}

/* The helper's own failure, or NULL: not run yet, succeeded, or killed by us. */
static const GError *
qg_watch_helper_failure(QgWatch *w)
{
    if (w->helper_pending || !w->helper_error ||
        g_error_matches(w->helper_error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        return NULL;
    }
    return w->helper_error;
}

/* Restore: did the stream fail on our side of QEMU's pipe? That is: the helper failed,
 * or the relay's input (the helper's pipe) ended before the header's stream length, or
 * could not be read. Then sets @error, preferring the helper's own message
 * ("restore failed: read /x.img: Input/output error"), and returns TRUE. Waits up to
 * @wait_ms for the helper's verdict once its pipe ended early.
 * A relay that can no longer write to QEMU is QEMU's side (QEMU stopped reading, and a
 * helper failing with EPIPE after that is a consequence): it notes the time and returns
 * FALSE, so that QEMU's own verdict is awaited. */
static gboolean
qg_watch_stream_failed(QgWatch *w, guint wait_ms, GError **error)
{
    g_autoptr(GError) rerr = NULL;
    const GError *herr;
    guint64 bytes = 0;
    gboolean cut = FALSE;

    qg_watch_iterate(w, 0);
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
            qg_watch_helper_wait(w, (gint)wait_ms, TRUE);
        }
    }
    herr = qg_watch_helper_failure(w);
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

/* QMP `quit`, then waits (QG_QUIT_WAIT_MS at most) until QEMU closed the connection. */
static void
qg_quit(QgQmp *qmp)
{
    gint64 deadline = g_get_monotonic_time() + QG_QUIT_WAIT_MS * 1000LL;

    if (!qg_qmp_run(qmp, "quit", NULL, NULL)) {
        return;   /* gone already */
    }
    while (g_get_monotonic_time() < deadline) {
        GError *err = NULL;
        g_autoptr(JsonObject) ev = qg_qmp_next_event(qmp, 100, &err);

        if (err) {
            g_error_free(err);   /* closed: QEMU is gone */
            return;
        }
    }
}

static void
qg_report_progress(QgWatch *w, gboolean save)
{
    QgProgress p = { 0 };

    p.bytes = qg_relay_get_bytes(w->relay);
    ioh_wrap_get_progress(w->wrap, &p.written, &p.synced);
    p.total = w->total;
    p.seconds = (g_get_monotonic_time() - w->start) / 1e6;
    if (w->total) {
        p.fraction = MIN((double)p.bytes / w->total, 1.0);
    } else if (save) {
        /* Not longer than a progress period: a QEMU that went silent is the stall
         * timeout's to judge, not this figure's. */
        g_autoptr(JsonObject) m = qg_query_migrate(w->qmp, QG_PROGRESS_QUERY_MS, NULL);
        JsonObject *ram = qg_json_get_object(m, "ram");
        double tot = (double)qg_json_get_int(ram, "total", 0);
        double rem = (double)qg_json_get_int(ram, "remaining", 0);

        p.fraction = tot > 0 ? CLAMP(1.0 - rem / tot, 0.0, 1.0) : 0;
    }
    w->opts->progress(w->what, &p, w->opts->progress_data);
}

static char *
qg_migration_error_desc(QgQmp *qmp)
{
    g_autoptr(JsonObject) m = qg_query_migrate(qmp, 0, NULL);

    return g_strdup(qg_json_get_string(m, "error-desc"));
}

/* The QMP connection failed while QEMU migrated: sets @error from @err (consumed). */
static void
qg_watch_qmp_failed(QgWatch *w, gboolean save, GError *err, GError **error)
{
    if (!save && err->domain == QG_QMP_ERROR && err->code == QG_QMP_ERROR_CLOSED) {
        w->qemu_gone = TRUE;
        if (qg_watch_stream_failed(w, QG_HELPER_EXIT_WAIT_MS, error)) {
            g_error_free(err);
            return;
        }
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                    "restore failed: QEMU exited while loading the stream "
                    "(%" G_GUINT64_FORMAT " bytes fed): %s",
                    qg_relay_get_bytes(w->relay), err->message);
        g_error_free(err);
    } else {
        g_propagate_prefixed_error(error, err, "%s: ", w->what);
    }
}

/* QEMU said the migration failed: why, as well as can be told. */
static void
qg_watch_migration_failed(QgWatch *w, gboolean save, GError **error)
{
    g_autofree char *desc = NULL;

    if (!save && qg_watch_stream_failed(w, QG_HELPER_EXIT_WAIT_MS, error)) {
        return;
    }
    desc = qg_migration_error_desc(w->qmp);
    if (desc) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                    "%s failed: QEMU says: %s", w->what, desc);
    } else if (save) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                    "save failed: QEMU gave no reason (see its log)");
    } else {
        /* QEMU 7.2 keeps the reason of a failed load to its stderr, and exits */
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                    "restore failed: QEMU could not load the stream after "
                    "%" G_GUINT64_FORMAT " bytes (its log says why; it exits now)",
                    qg_relay_get_bytes(w->relay));
    }
}

/* What the event @ev says of the job: 1 it is complete, -1 it failed (@error set), 0
 * it goes on (or @ev is about something else). */
static int
qg_watch_event(QgWatch *w, gboolean save, JsonObject *ev, GError **error)
{
    const char *st;

    if (g_strcmp0(qg_json_get_string(ev, "event"), "MIGRATION") != 0) {
        return 0;
    }
    st = qg_json_get_string(qg_json_get_object(ev, "data"), "status");
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
        qg_watch_migration_failed(w, save, error);
        return -1;
    }
    if (g_str_equal(st, "cancelled")) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_CANCELLED,
                    "%s cancelled in QEMU", w->what);
        return -1;
    }
    return 0;
}

/* Restore: the helper or the relay failed, or QEMU stopped reading without a word. */
static gboolean
qg_watch_restore_failed(QgWatch *w, gint64 now, GError **error)
{
    g_autoptr(GError) rerr = NULL;

    if (qg_watch_stream_failed(w, QG_HELPER_EXIT_WAIT_MS, error)) {
        return TRUE;
    }
    if (!w->qemu_stopped_at || now - w->qemu_stopped_at <= QG_QEMU_VERDICT_WAIT_MS * 1000LL) {
        return FALSE;
    }
    qg_relay_wait(w->relay, NULL, NULL, &rerr);
    g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_FAILED,
                "restore failed: QEMU stopped reading the stream and gave no verdict within "
                "%d s (%s)", QG_QEMU_VERDICT_WAIT_MS / 1000,
                rerr ? rerr->message : "relay ended");
    return TRUE;
}

/* TRUE (and @error) when no byte of the stream moved for opts->stall_timeout_s: QEMU
 * sends or takes nothing, or the helper is stuck. Progress is any byte through the
 * relay, or written by the helper. */
static gboolean
qg_watch_stalled(QgWatch *w, gint64 now, GError **error)
{
    guint64 bytes = qg_relay_get_bytes(w->relay);
    guint64 written = 0, synced = 0;

    ioh_wrap_get_progress(w->wrap, &written, &synced);
    if (!w->last_progress) {
        w->last_progress = w->start;   /* the job's start: nothing moved yet */
    }
    if (bytes != w->last_bytes || written != w->last_written) {
        w->last_progress = now;
        w->last_bytes = bytes;
        w->last_written = written;
        return FALSE;
    }
    if (!w->opts->stall_timeout_s ||
        now - w->last_progress < (gint64)w->opts->stall_timeout_s * G_USEC_PER_SEC) {
        return FALSE;
    }
    g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STALLED,
                "%s failed: the migration stalled: no byte of the stream moved for %u s "
                "(%" G_GUINT64_FORMAT " bytes so far)", w->what, w->opts->stall_timeout_s,
                bytes);
    return TRUE;
}

/* Waits for the MIGRATION event that ends the job, for no longer than the stream keeps
 * moving (qg_watch_stalled()). A restore also watches the helper and the relay
 * (qg_watch_stream_failed()): QEMU 7.2 gives no verdict on a stream cut short, and when
 * both failed the helper's message is the one that says why. */
static gboolean
qg_wait_migration(QgWatch *w, gboolean save, GError **error)
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
            qg_watch_qmp_failed(w, save, err, error);
            return FALSE;
        }
        if (w->opts->interrupted && *w->opts->interrupted) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s interrupted", w->what);
            return FALSE;
        }
        verdict = ev ? qg_watch_event(w, save, ev, error) : 0;
        if (verdict) {
            return verdict > 0;
        }
        now = g_get_monotonic_time();
        if ((!save && qg_watch_restore_failed(w, now, error)) ||
            qg_watch_stalled(w, now, error)) {
            return FALSE;
        }
        if (w->opts->progress && now >= next) {
            qg_report_progress(w, save);
            next = now + (gint64)interval * 1000;
        }
    }
}

/* ---- save ---- */

/* Creates "@target.part-XXXXXX" beside @target (0600, the placeholder header in it) and
 * checks that it takes what the save will do to it (O_DIRECT): all before QEMU is
 * touched. Returns its path, with *ret_fd (for the helper) and *ret_hdr_fd (our own open
 * file description for the header: the helper may switch its one to O_DIRECT); NULL with
 * @error, and nothing left behind, on failure. */
static char *
qg_save_create(const char *target, const char *path, QgCacheMode cache, int *ret_fd,
               int *ret_hdr_fd, GError **error)
{
    g_autofree char *tmp_path = g_strdup_printf("%s.part-XXXXXX", target);
    g_autoptr(GError) local = NULL;
    int fd, hdr_fd = -1;

    fd = g_mkstemp_full(tmp_path, O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot create the image %s: %s", tmp_path, g_strerror(errno));
        return NULL;
    }
    hdr_fd = open(tmp_path, O_WRONLY | O_CLOEXEC);
    if (hdr_fd < 0) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot open the image %s: %s", tmp_path, g_strerror(errno));
    } else if (cache == QG_CACHE_DIRECT &&
               !qg_file_probe_direct(tmp_path, O_WRONLY, &local)) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot save to %s bypassing the cache with O_DIRECT: %s", path,
                    local->message);
    } else if (qg_image_write_placeholder(hdr_fd, path, error)) {
        *ret_fd = fd;
        *ret_hdr_fd = hdr_fd;
        return g_steal_pointer(&tmp_path);
    }
    if (hdr_fd >= 0) {
        close(hdr_fd);
    }
    close(fd);
    g_unlink(tmp_path);
    return NULL;
}

gboolean
qg_migrate_save(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                QgMigrateStats *ret_stats, GError **error)
{
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(QgRelay) relay = NULL;
    g_autoptr(JsonObject) margs = NULL;
    g_autoptr(JsonObject) mig = NULL;
    g_autofree char *status = NULL;
    g_autofree char *tmp_path = NULL;
    g_autofree char *target = NULL;
    IohWrapParams params = { .offset = QG_IMAGE_HEADER_SIZE, .length = 0,
                             .progress_interval_ms = 250 };
    QgMigrateStats stats = { .downtime_ms = -1 };
    QgWatch w = { .what = "save", .qmp = qmp, .opts = opts };
    gboolean running = FALSE, stopped = FALSE, migrating = FALSE, ok = FALSE;
    gboolean bw_changed = FALSE, created = FALSE;
    guint64 old_bw = 0;
    int fd = -1, hdr_fd = -1, p[2] = { -1, -1 };
    gint64 t_qemu;

    /* What FILE is, before QEMU is asked anything: a save never pauses a guest for a
     * file it cannot write. */
    target = qg_file_save_target(path, error);
    if (!target) {
        return FALSE;
    }
    status = qg_query_status(qmp, &running, error);
    if (!status) {
        return FALSE;
    }
    if (g_str_equal(status, "inmigrate") || g_str_equal(status, "postmigrate") ||
        g_str_equal(status, "finish-migrate")) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STATE,
                    "cannot save this QEMU: it is in state '%s'%s", status,
                    g_str_equal(status, "inmigrate") ? " (waiting for an incoming migration)"
                    : " (QEMU 7.2 saves a guest only once: restart it)");
        return FALSE;
    }
    if (!qg_machine_info(qmp, info, error)) {
        return FALSE;
    }
    info->running = running;
    info->time = g_get_real_time() / G_USEC_PER_SEC;

    /* The file first: a file that cannot be made leaves QEMU as it was. */
    tmp_path = qg_save_create(target, path, opts->cache, &fd, &hdr_fd, error);
    if (!tmp_path) {
        return FALSE;
    }
    created = TRUE;
    if (!qg_enable_events(qmp, error) || !qg_get_bandwidth(qmp, &old_bw, error) ||
        !qg_set_bandwidth(qmp, opts->max_bandwidth ? opts->max_bandwidth
                                                   : QG_BANDWIDTH_UNLIMITED, error)) {
        goto out;
    }
    bw_changed = old_bw != 0;
    wrap = ioh_wrap_new(&fd, tmp_path, qg_wrap_flags(opts->cache), &params, error);
    if (!wrap) {
        goto out;
    }
    stats.helper = ioh_wrap_is_spawned(wrap);
    if (!stats.helper && lseek(fd, QG_IMAGE_HEADER_SIZE, SEEK_SET) < 0) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO, "cannot seek in %s: %s",
                    path, g_strerror(errno));
        goto out;
    }
    if (!qg_make_pipe(p, error)) {
        goto out;
    }
    {
        /* The relay gets its own fd of the wrap's end: libwrap closes the original. */
        int out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (out_fd < 0) {
            g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO, "cannot dup: %s",
                        g_strerror(errno));
            goto out;
        }
        relay = qg_relay_start(p[0], out_fd, "save", error);
        p[0] = -1;
        if (!relay) {
            goto out;
        }
    }

    if (running && !opts->live) {
        if (!qg_qmp_run(qmp, "stop", NULL, error)) {
            goto out;
        }
        stopped = TRUE;
    }
    if (!qg_pass_fd(qmp, QG_FDNAME_SAVE, p[1], error)) {
        goto out;
    }
    close(p[1]);   /* QEMU holds its own copy now; ours would hide EOF from the helper */
    p[1] = -1;

    w.relay = relay;
    w.wrap = wrap;
    w.start = g_get_monotonic_time();
    margs = json_object_new();
    json_object_set_string_member(margs, "uri", "fd:" QG_FDNAME_SAVE);
    if (!qg_qmp_run(qmp, "migrate", margs, error)) {
        qg_close_fd_name(qmp, QG_FDNAME_SAVE);
        goto out;
    }
    migrating = TRUE;
    {
        GError *qerr = NULL;
        if (!qg_wait_migration(&w, TRUE, &qerr)) {
            g_autoptr(GError) herr = NULL;
            if (g_error_matches(qerr, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
                g_error_matches(qerr, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STALLED)) {
                /* out: kills the helper (a stuck one too: never waited for), cancels */
                g_propagate_error(error, qerr);
                goto out;
            }
            /* A dead helper makes QEMU fail with EPIPE: say what really happened. */
            g_clear_pointer(&relay, qg_relay_free);
            if (!ioh_wrap_finish(wrap, &herr)) {
                const char *q = strstr(qerr->message, "QEMU says: ");
                g_set_error(error, herr->domain, herr->code,
                            "save failed: %s; QEMU then reported: %s", herr->message,
                            q ? q + strlen("QEMU says: ") : qerr->message);
                g_error_free(qerr);
            } else {
                g_propagate_error(error, qerr);
            }
            fd = -1;
            goto out;
        }
    }
    migrating = FALSE;
    t_qemu = g_get_monotonic_time();
    mig = qg_query_migrate(qmp, 0, NULL);

    /* QEMU is done; the helper is not: success is its exit, after fdatasync. */
    if (!qg_relay_wait(relay, &info->stream_length, &info->checksum, error)) {
        goto out;
    }
    if (!ioh_wrap_finish(wrap, error)) {
        g_prefix_error(error, "save failed: ");
        goto out;
    }
    if (!stats.helper) {
        close(fd);   /* with a helper, ioh_wrap_finish closed it */
    }
    fd = -1;
    if (!qg_image_write_header(hdr_fd, path, info, error) ||
        !qg_rename_durably(tmp_path, target, error)) {
        goto out;
    }
    created = FALSE;

    stats.stream_length = info->stream_length;
    stats.checksum = info->checksum;
    stats.seconds = (g_get_monotonic_time() - w.start) / 1e6;
    stats.qemu_seconds = (t_qemu - w.start) / 1e6;
    stats.running = running;
    if (mig) {
        stats.downtime_ms = qg_json_get_int(mig, "downtime", -1);
    }
    ok = TRUE;

out:
    if (migrating) {
        qg_qmp_run(qmp, "migrate_cancel", NULL, NULL);
    }
    if (p[0] >= 0) {
        close(p[0]);
    }
    if (p[1] >= 0) {
        close(p[1]);
    }
    g_clear_pointer(&relay, qg_relay_free);
    if (!ok) {
        /* Kills a helper still running; closes its pipe. */
        g_clear_pointer(&wrap, ioh_wrap_free);
        if (fd >= 0 && !stats.helper) {
            close(fd);
        }
        if (created) {
            g_unlink(tmp_path);
        }
        if (stopped) {
            qg_qmp_run(qmp, "cont", NULL, NULL);
        }
    }
    if (hdr_fd >= 0) {
        close(hdr_fd);
    }
    if (bw_changed) {
        qg_set_bandwidth(qmp, old_bw, NULL);
    }
    if (ok && ret_stats) {
        *ret_stats = stats;
    }
    return ok;
}

/* ---- restore ---- */

/* Opens the image at @path and checks it: a regular file, a sound header, the whole
 * stream there, O_DIRECT taken when @cache asks for it. Returns the fd and *ret_info,
 * or -1 with @error. */
static int
qg_restore_open(const char *path, QgCacheMode cache, QgImageInfo **ret_info,
                GError **error)
{
    g_autoptr(GError) local = NULL;
    int fd = qg_file_open_image(path, error);

    if (fd < 0) {
        return -1;
    }
    *ret_info = qg_image_read_header(fd, path, error);
    if (!*ret_info) {
        close(fd);
        return -1;
    }
    if (cache == QG_CACHE_DIRECT && !qg_file_probe_direct(path, O_RDONLY, &local)) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot restore from %s bypassing the cache with O_DIRECT: %s", path,
                    local->message);
        g_clear_pointer(ret_info, qg_image_info_free);
        close(fd);
        return -1;
    }
    return fd;
}

/* Before QEMU gets the pipe: waits until the helper has delivered the stream's first
 * bytes (it opened the image, set its cache mode and read), the whole stream, or
 * failed. A failure says that QEMU was not touched: it still waits for a stream. */
static gboolean
qg_restore_wait_start(QgWatch *w, GError **error)
{
    g_autoptr(GError) local = NULL;
    gint64 start = g_get_monotonic_time();

    while (qg_relay_get_bytes(w->relay) == 0 && w->total > 0) {
        if (qg_watch_stream_failed(w, QG_HELPER_EXIT_WAIT_MS, &local)) {
            break;
        }
        if (w->opts->interrupted && *w->opts->interrupted) {
            g_set_error(&local, G_IO_ERROR, G_IO_ERROR_CANCELLED, "restore interrupted");
            break;
        }
        if (w->opts->stall_timeout_s &&
            g_get_monotonic_time() - start > (gint64)w->opts->stall_timeout_s * G_USEC_PER_SEC) {
            g_set_error(&local, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STALLED,
                        "restore failed: the helper delivered no byte of %s in %u s",
                        w->path, w->opts->stall_timeout_s);
            break;
        }
        qg_watch_iterate(w, QG_RESTORE_POLL_MS);
    }
    if (!local) {
        return TRUE;
    }
    g_set_error(error, local->domain, local->code,
                "%s (QEMU untouched: it still waits for an incoming stream)", local->message);
    return FALSE;
}

gboolean
qg_migrate_restore(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                   QgMigrateStats *ret_stats, GError **error)
{
    g_autoptr(QgImageInfo) info = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(QgRelay) relay = NULL;
    g_autoptr(JsonObject) margs = NULL;
    g_autofree char *status = NULL;
    QgMigrateStats stats = { .downtime_ms = -1 };
    QgWatch w = { .what = "restore", .path = path, .qmp = qmp, .opts = opts };
    IohWrapParams params = { .offset = QG_IMAGE_HEADER_SIZE, .progress_interval_ms = 250 };
    gboolean running = FALSE, ok = FALSE, loading = FALSE, loaded = FALSE;
    guint64 bytes = 0, sum = 0;
    int fd = -1, p[2] = { -1, -1 };
    gint64 t_qemu;

    status = qg_query_status(qmp, &running, error);
    if (!status) {
        return FALSE;
    }
    if (!g_str_equal(status, "inmigrate")) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STATE,
                    "cannot restore into this QEMU: it is in state '%s', not waiting for "
                    "an incoming migration (start it with -incoming defer)", status);
        return FALSE;
    }
    fd = qg_restore_open(path, opts->cache, &info, error);
    if (fd < 0) {
        return FALSE;
    }
    if (!qg_enable_events(qmp, error)) {
        goto out;
    }
    params.offset = info->stream_offset;
    params.length = info->stream_length;
    wrap = ioh_wrap_new(&fd, path, qg_wrap_flags(opts->cache), &params, error);
    if (!wrap) {
        goto out;
    }
    stats.helper = ioh_wrap_is_spawned(wrap);
    if (!stats.helper && lseek(fd, info->stream_offset, SEEK_SET) < 0) {
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO, "cannot seek in %s: %s",
                    path, g_strerror(errno));
        goto out;
    }
    if (!qg_make_pipe(p, error)) {
        goto out;
    }
    {
        int in_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (in_fd < 0) {
            g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO, "cannot dup: %s",
                        g_strerror(errno));
            goto out;
        }
        relay = qg_relay_start(in_fd, p[1], "restore", error);
        p[1] = -1;
        if (!relay) {
            goto out;
        }
    }
    w.relay = relay;
    w.wrap = wrap;
    w.total = info->stream_length;
    w.start = g_get_monotonic_time();
    /* From now on the helper's exit is watched as well as QEMU: it closes the caller's
     * end (the relay has its own fd of it). */
    qg_watch_helper_start(&w);
    if (stats.helper) {
        fd = -1;
    }
    /* The first bytes through the helper before QEMU gets the pipe: whatever fails at
     * the start (O_DIRECT refused, the first read) leaves QEMU waiting, for another try. */
    if (!qg_restore_wait_start(&w, error) ||
        !qg_pass_fd(qmp, QG_FDNAME_RESTORE, p[0], error)) {
        goto out;
    }
    close(p[0]);
    p[0] = -1;
    margs = json_object_new();
    json_object_set_string_member(margs, "uri", "fd:" QG_FDNAME_RESTORE);
    if (!qg_qmp_run(qmp, "migrate-incoming", margs, error)) {
        qg_close_fd_name(qmp, QG_FDNAME_RESTORE);
        goto out;
    }
    loading = TRUE;
    if (!qg_wait_migration(&w, FALSE, error)) {
        goto out;
    }
    loaded = TRUE;
    t_qemu = g_get_monotonic_time();
    {
        g_autoptr(GError) rerr = NULL;
        gboolean relayed = qg_relay_wait(relay, &bytes, &sum, &rerr);
        const GError *herr;

        qg_watch_helper_wait(&w, -1, FALSE);
        herr = qg_watch_helper_failure(&w);
        if (herr) {   /* the helper's message says more than the relay's */
            g_set_error(error, herr->domain, herr->code,
                        "restore failed (guest left paused): %s", herr->message);
            goto out;
        }
        if (!relayed) {
            g_propagate_prefixed_error(error, g_steal_pointer(&rerr),
                                       "restore failed (guest left paused): ");
            goto out;
        }
        if (w.helper_error) {   /* killed by us: cannot happen here */
            g_set_error(error, w.helper_error->domain, w.helper_error->code,
                        "restore failed (guest left paused): %s", w.helper_error->message);
            goto out;
        }
    }
    if (!stats.helper) {
        close(fd);
    }
    fd = -1;
    if (bytes != info->stream_length) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "image truncated %s: %" G_GUINT64_FORMAT " bytes of stream read, the "
                    "header says %" G_GUINT64_FORMAT " (guest left paused)", path, bytes,
                    info->stream_length);
        goto out;
    }
    if (sum != info->checksum) {
        g_autofree char *got = qg_image_checksum_to_string(sum);
        g_autofree char *want = qg_image_checksum_to_string(info->checksum);
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CHECKSUM,
                    "checksum mismatch in %s: the stream has %s, the header says %s "
                    "(guest left paused)", path, got, want);
        goto out;
    }
    if (info->running) {
        if (!qg_qmp_run(qmp, "cont", NULL, error)) {
            goto out;
        }
        stats.running = TRUE;
    }
    stats.stream_length = bytes;
    stats.checksum = sum;
    stats.seconds = (g_get_monotonic_time() - w.start) / 1e6;
    stats.qemu_seconds = (t_qemu - w.start) / 1e6;
    ok = TRUE;

out:
    if (loading && !loaded && !ok && !w.qemu_gone) {
        /* QEMU holds a half-loaded guest that it cannot run, nor take another stream
         * into (7.2 accepts one incoming migration per process), and after a stream cut
         * short it would spin on its pipe forever: quit it (before its pipe closes, so
         * that it ends by our word, not by its reaction to a cut stream), and the
         * failure leaves no QEMU behind that looks usable. */
        qg_quit(qmp);
    }
    if (p[0] >= 0) {
        close(p[0]);
    }
    if (p[1] >= 0) {
        close(p[1]);
    }
    g_clear_pointer(&relay, qg_relay_free);
    qg_watch_helper_end(&w);   /* kills a helper still running, waits for its exit */
    g_clear_error(&w.helper_error);
    g_clear_pointer(&wrap, ioh_wrap_free);
    if (fd >= 0 && !stats.helper) {
        close(fd);
    }
    if (loaded && !ok) {
        /* A QEMU started without -S runs the guest as soon as the stream is loaded,
         * before we could check it: stop a guest whose image proved bad. */
        qg_qmp_run(qmp, "stop", NULL, NULL);
    }
    if (ok && ret_stats) {
        *ret_stats = stats;
    }
    return ok;
}
