/* qg-mig-qmp.c - the QMP commands of a save or a restore, every reply checked for its shape */
#include "qg-migrate-private.h"

#include <string.h>

#include "ioh-json.h"

static const IohJsonMember qg_status_shape[] = {
    { "status", IOH_JSON_STRING, TRUE },
    { "running", IOH_JSON_BOOLEAN, TRUE },
    { NULL, 0, FALSE },
};

char *
qg_mig_query_status(QgQmp *qmp, gboolean *ret_running, GError **error)
{
    g_autoptr(JsonObject) o = qg_qmp_call(qmp, "query-status", NULL, -1, qg_status_shape,
                                          0, error);

    if (!o) {
        return NULL;
    }
    *ret_running = json_object_get_boolean_member(o, "running");
    return g_strdup(json_object_get_string_member(o, "status"));
}

gboolean
qg_mig_enable_events(QgQmp *qmp, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonObject) cap = json_object_new();
    g_autoptr(JsonArray) caps = json_array_new();

    json_object_set_string_member(cap, "capability", "events");
    json_object_set_boolean_member(cap, "state", TRUE);
    json_array_add_object_element(caps, g_steal_pointer(&cap));
    json_object_set_array_member(args, "capabilities", g_steal_pointer(&caps));
    if (!qg_qmp_run(qmp, "migrate-set-capabilities", args, error)) {
        return FALSE;
    }
    g_debug("QMP: migration events enabled (QEMU %s)", qg_qmp_get_version(qmp));
    return TRUE;
}

gboolean
qg_mig_set_bandwidth(QgQmp *qmp, guint64 bw, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_int_member(args, "max-bandwidth", (gint64)bw);
    return qg_qmp_run(qmp, "migrate-set-parameters", args, error);
}

static const IohJsonMember qg_parameters_shape[] = {
    { "max-bandwidth", IOH_JSON_INT, FALSE },
    { NULL, 0, FALSE },
};

gboolean
qg_mig_get_bandwidth(QgQmp *qmp, guint64 *ret_bw, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(JsonObject) o = qg_qmp_call(qmp, "query-migrate-parameters", NULL, -1,
                                          qg_parameters_shape, 0, &local);

    *ret_bw = o ? (guint64)MAX(ioh_json_get_int(o, "max-bandwidth", 0), 0) : 0;
    if (!o && !g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    g_debug("QMP: query-migrate-parameters %s, max-bandwidth %" G_GUINT64_FORMAT,
            o ? "answered" : "refused", *ret_bw);
    return TRUE;
}

gboolean
qg_mig_pass_fd(QgQmp *qmp, const char *name, int fd, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonObject) r = NULL;

    json_object_set_string_member(args, "fdname", name);
    r = qg_qmp_call(qmp, "getfd", args, fd, NULL, 0, error);
    return r != NULL;
}

void
qg_mig_close_fd_name(QgQmp *qmp, const char *name)
{
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_string_member(args, "fdname", name);
    qg_qmp_run(qmp, "closefd", args, NULL);
}

gboolean
qg_mig_start(QgQmp *qmp, gboolean save, const char *name, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autofree char *uri = g_strconcat("fd:", name, NULL);

    json_object_set_string_member(args, "uri", uri);
    if (!qg_qmp_run(qmp, save ? "migrate" : "migrate-incoming", args, error)) {
        qg_mig_close_fd_name(qmp, name);
        return FALSE;
    }
    return TRUE;
}

static const IohJsonMember qg_migrate_info_shape[] = {
    { "status", IOH_JSON_STRING, FALSE },
    { "error-desc", IOH_JSON_STRING, FALSE },
    { "downtime", IOH_JSON_INT, FALSE },
    { "ram", IOH_JSON_OBJECT, FALSE },
    { NULL, 0, FALSE },
};

JsonObject *
qg_mig_query_migrate(QgQmp *qmp, guint timeout_ms, GError **error)
{
    return qg_qmp_call(qmp, "query-migrate", NULL, -1, qg_migrate_info_shape, timeout_ms,
                       error);
}

char *
qg_mig_error_desc(QgQmp *qmp)
{
    g_autoptr(JsonObject) m = qg_mig_query_migrate(qmp, 0, NULL);

    return g_strdup(ioh_json_get_string(m, "error-desc"));
}

/* The machine type ("pc-i440fx-7.2", without "-machine"), unknown when QEMU refuses. */
static gboolean
qg_mig_machine_type(QgQmp *qmp, QgImageInfo *info, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonNode) t = NULL;
    g_autoptr(GError) local = NULL;
    const char *s;

    json_object_set_string_member(args, "path", "/machine");
    json_object_set_string_member(args, "property", "type");
    t = qg_qmp_execute(qmp, "qom-get", args, &local);
    if (!t) {
        if (g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
            g_debug("QMP: qom-get of the machine type refused: %s", local->message);
            return TRUE;
        }
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (!ioh_json_node_is(t, IOH_JSON_STRING)) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "unexpected reply from QEMU to 'qom-get' of the machine type: it is %s, "
                    "not a string", ioh_json_describe(t));
        return FALSE;
    }
    s = json_node_get_string(t);
    info->machine = g_str_has_suffix(s, "-machine")
        ? g_strndup(s, strlen(s) - strlen("-machine")) : g_strdup(s);
    return TRUE;
}

static const IohJsonMember qg_memory_shape[] = {
    { "base-memory", IOH_JSON_INT, TRUE },
    { "plugged-memory", IOH_JSON_INT, FALSE },
    { NULL, 0, FALSE },
};

gboolean
qg_mig_machine_info(QgQmp *qmp, QgImageInfo *info, GError **error)
{
    g_autoptr(JsonObject) m = NULL;
    g_autoptr(GError) local = NULL;

    if (!qg_mig_machine_type(qmp, info, error)) {
        return FALSE;
    }
    m = qg_qmp_call(qmp, "query-memory-size-summary", NULL, -1, qg_memory_shape, 0, &local);
    if (!m && !g_error_matches(local, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    if (m) {
        info->ram_size = json_object_get_int_member(m, "base-memory") +
                         ioh_json_get_int(m, "plugged-memory", 0);
    }
    info->qemu_version = g_strdup(qg_qmp_get_version(qmp));
    g_debug("QMP: machine %s, RAM %" G_GUINT64_FORMAT " bytes, QEMU %s",
            info->machine ? info->machine : "(not told)", (guint64)info->ram_size,
            info->qemu_version ? info->qemu_version : "(unknown)");
    return TRUE;
}

gboolean
qg_mig_quit(QgQmp *qmp)
{
    gint64 deadline = g_get_monotonic_time() + QG_QUIT_WAIT_MS * 1000LL;
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) reply = qg_qmp_call(qmp, "quit", NULL, -1, NULL, QG_QUIT_WAIT_MS,
                                              &err);

    if (!reply) {
        /* closed: gone already; no reply in time: its main loop is stuck */
        return !g_error_matches(err, QG_QMP_ERROR, QG_QMP_ERROR_TIMEOUT);
    }
    while (g_get_monotonic_time() < deadline) {
        GError *e = NULL;
        g_autoptr(JsonObject) ev = qg_qmp_next_event(qmp, 100, &e);

        if (e) {
            g_error_free(e);   /* closed: QEMU is gone */
            return TRUE;
        }
    }
    return TRUE;
}
