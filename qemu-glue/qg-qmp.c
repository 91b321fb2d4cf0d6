/* qg-qmp.c - a small synchronous QMP client */
#include "qg-qmp.h"

#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>
#include "ioh-json.h"
#include "ioh-lines.h"
#include "qg-text.h"
#include <gio/gio.h>
#include <gio/gunixfdmessage.h>
#include <gio/gunixsocketaddress.h>

#define QG_QMP_MAX_LINE (64 * 1024 * 1024)
#define QG_QMP_UNIX_PATH_MAX 107

struct _QgQmp {
    GSocket *socket;
    char *path;
    char *version;
    IohLines *lines;     /* bytes received, cut into bounded lines */
    GQueue events;       /* JsonObject*, oldest first */
    guint reply_timeout_ms;
    guint64 next_id;
    gboolean closed;
};

G_DEFINE_QUARK(qg-qmp-error-quark, qg_qmp_error)

void
qg_qmp_free(QgQmp *qmp)
{
    if (!qmp) {
        return;
    }
    if (qmp->socket) {
        g_socket_close(qmp->socket, NULL);
        g_object_unref(qmp->socket);
    }
    g_queue_clear_full(&qmp->events, (GDestroyNotify)json_object_unref);
    ioh_lines_free(qmp->lines);
    g_free(qmp->path);
    g_free(qmp->version);
    g_free(qmp);
}

const char *
qg_qmp_get_version(QgQmp *qmp)
{
    return qmp->version;
}

GPid
qg_qmp_get_peer_pid(QgQmp *qmp)
{
    g_autoptr(GCredentials) creds = g_socket_get_credentials(qmp->socket, NULL);
    pid_t pid = creds ? g_credentials_get_unix_pid(creds, NULL) : -1;

    return pid > 0 ? pid : 0;
}

/* Takes one complete line, or returns NULL: then *@ret_overlong when a line longer than
 * QG_QMP_MAX_LINE came, or is coming. */
static char *
qg_qmp_take_line(QgQmp *qmp, gboolean *ret_overlong)
{
    g_autoptr(GString) got = NULL;
    int r = ioh_lines_take(qmp->lines, &got);
    char *line;

    *ret_overlong = r < 0 || (r == 0 && ioh_lines_overlong(qmp->lines));
    if (r <= 0) {
        return NULL;
    }
    line = g_strndup(got->str, got->len);
    g_strchomp(line);   /* QMP ends lines with \r\n */
    return line;
}

/* Reads one line, waiting until @deadline (monotonic µs; 0: do not wait).
 * NULL with @error unset: timeout. */
static char *
qg_qmp_read_line(QgQmp *qmp, gint64 deadline, GError **error)
{
    char buf[65536];

    for (;;) {
        g_autoptr(GError) local = NULL;
        gboolean overlong;
        char *line = qg_qmp_take_line(qmp, &overlong);
        gint64 wait;
        gssize n;

        if (line) {
            return line;
        }
        if (qmp->closed) {
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CLOSED,
                        "QEMU closed the QMP connection %s", qmp->path);
            return NULL;
        }
        if (overlong) {
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                        "QMP message on %s longer than %d bytes", qmp->path,
                        QG_QMP_MAX_LINE);
            return NULL;
        }
        wait = deadline ? MAX(deadline - g_get_monotonic_time(), 0) : 0;
        if (!g_socket_condition_timed_wait(qmp->socket, G_IO_IN | G_IO_HUP | G_IO_ERR,
                                           wait, NULL, &local)) {
            if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
                return NULL;
            }
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CLOSED,
                        "cannot read from QMP socket %s: %s", qmp->path, local->message);
            return NULL;
        }
        n = g_socket_receive_with_blocking(qmp->socket, buf, sizeof(buf), FALSE, NULL,
                                           &local);
        if (n < 0) {
            if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
                if (wait == 0) {
                    return NULL;
                }
                continue;
            }
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CLOSED,
                        "cannot read from QMP socket %s: %s", qmp->path, local->message);
            return NULL;
        }
        if (n == 0) {
            qmp->closed = TRUE;
            continue;
        }
        ioh_lines_feed(qmp->lines, buf, (gsize)n);
    }
}

/* The members every QMP message may carry, with the types QEMU gives them: an event
 * names itself with a string and carries an object; an error is an object of strings. */
static const IohJsonMember qg_qmp_message_shape[] = {
    { "event", IOH_JSON_STRING, FALSE },
    { "data", IOH_JSON_OBJECT, FALSE },
    { "error", IOH_JSON_OBJECT, FALSE },
    { NULL, 0, FALSE },
};
static const IohJsonMember qg_qmp_error_shape[] = {
    { "class", IOH_JSON_STRING, FALSE },
    { "desc", IOH_JSON_STRING, FALSE },
    { NULL, 0, FALSE },
};

static gboolean
qg_qmp_check_message(QgQmp *qmp, JsonNode *root, GError **error)
{
    g_autoptr(GError) local = NULL;
    JsonNode *err = json_object_get_member(json_node_get_object(root), "error");

    if (!ioh_json_check_shape(root, qg_qmp_message_shape, &local) ||
        (err && !ioh_json_check_shape(err, qg_qmp_error_shape, &local))) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "malformed QMP message on %s: %s", qmp->path, local->message);
        return FALSE;
    }
    return TRUE;
}

/* Reads and parses one message. NULL + no error: timeout. */
static JsonObject *
qg_qmp_read_message(QgQmp *qmp, gint64 deadline, GError **error)
{
    g_autoptr(JsonParser) parser = NULL;
    g_autoptr(GError) local = NULL;
    g_autofree char *line = NULL;
    JsonNode *root;

    do {
        GError *err = NULL;
        g_free(line);
        line = qg_qmp_read_line(qmp, deadline, &err);
        if (!line) {
            if (err) {
                g_propagate_error(error, err);
            }
            return NULL;
        }
    } while (!*line);

    parser = json_parser_new_immutable();
    if (!json_parser_load_from_data(parser, line, -1, &local)) {
        g_autofree char *quote = qg_text_one_line(line);
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "invalid JSON from QMP socket %s: %s (\"%.60s\")", qmp->path,
                    local->message, quote);
        return NULL;
    }
    root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_autofree char *quote = qg_text_one_line(line);
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "QMP message on %s is not a JSON object (\"%.60s\")", qmp->path, quote);
        return NULL;
    }
    if (!qg_qmp_check_message(qmp, root, error)) {
        return NULL;
    }
    return json_object_ref(json_node_get_object(root));
}

static gboolean
qg_qmp_send(QgQmp *qmp, const char *data, gsize len, int fd, GError **error)
{
    g_autoptr(GError) local = NULL;
    gsize done = 0;

    while (done < len) {
        GOutputVector vec = { data + done, len - done };
        g_autoptr(GSocketControlMessage) msg = NULL;
        GSocketControlMessage *msgs[1];
        gssize n;

        if (fd >= 0 && done == 0) {
            msg = g_unix_fd_message_new();
            if (!g_unix_fd_message_append_fd(G_UNIX_FD_MESSAGE(msg), fd, &local)) {
                g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT,
                            "cannot pass fd %d to QEMU: %s", fd, local->message);
                return FALSE;
            }
            msgs[0] = msg;
        }
        n = g_socket_send_message(qmp->socket, NULL, &vec, 1, msg ? msgs : NULL,
                                  msg ? 1 : 0, 0, NULL, &local);
        if (n < 0) {
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CLOSED,
                        "cannot write to QMP socket %s: %s", qmp->path, local->message);
            return FALSE;
        }
        done += n;
    }
    return TRUE;
}

/* QEMU's words, made one line: its desc may quote what we sent (a command name). */
static char *
qg_qmp_error_desc(JsonObject *err)
{
    const char *desc = ioh_json_get_string(err, "desc");
    const char *cls = ioh_json_get_string(err, "class");
    g_autofree char *text = g_strdup_printf("%s (%s)", desc ? desc : "no description",
                                            cls ? cls : "?");

    return qg_text_one_line(text);
}

/* Sends @command (with @fd, when >= 0) and waits up to @timeout_ms for its reply. */
static JsonNode *
qg_qmp_execute_within(QgQmp *qmp, const char *command, JsonObject *args, int fd,
                      guint timeout_ms, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new_immutable();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) req = NULL;
    g_autofree char *id = g_strdup_printf("qg-%" G_GUINT64_FORMAT, ++qmp->next_id);
    g_autofree char *text = NULL;
    gint64 deadline;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "execute");
    json_builder_add_string_value(b, command);
    if (args) {
        json_builder_set_member_name(b, "arguments");
        g_autoptr(JsonNode) an = json_node_init_object(json_node_alloc(), args);
        json_builder_add_value(b, json_node_copy(an));
    }
    json_builder_set_member_name(b, "id");
    json_builder_add_string_value(b, id);
    json_builder_end_object(b);
    req = json_builder_get_root(b);
    json_generator_set_root(gen, req);
    text = json_generator_to_data(gen, NULL);
    {
        g_autofree char *line = g_strconcat(text, "\r\n", NULL);
        if (!qg_qmp_send(qmp, line, strlen(line), fd, error)) {
            return NULL;
        }
    }

    deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    for (;;) {
        GError *err = NULL;
        g_autoptr(JsonObject) msg = qg_qmp_read_message(qmp, deadline, &err);
        const char *rid;

        if (!msg) {
            if (!err) {
                g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_TIMEOUT,
                            "QEMU did not answer '%s' within %.1f s on %s", command,
                            timeout_ms / 1000.0, qmp->path);
            } else {
                g_propagate_prefixed_error(error, err, "%s: ", command);
            }
            return NULL;
        }
        if (json_object_has_member(msg, "event")) {
            g_queue_push_tail(&qmp->events, g_steal_pointer(&msg));
            continue;
        }
        rid = ioh_json_get_string(msg, "id");
        if (g_strcmp0(rid, id) != 0) {
            continue;   /* a reply to an earlier, abandoned command */
        }
        if (json_object_has_member(msg, "error")) {
            g_autofree char *desc = qg_qmp_error_desc(ioh_json_get_object(msg, "error"));
            g_autofree char *cmd = qg_text_one_line(command);
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND,
                        "QEMU refused '%s': %s", cmd, desc);
            return NULL;
        }
        if (json_object_has_member(msg, "return")) {
            return json_node_copy(json_object_get_member(msg, "return"));
        }
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                    "QMP reply to '%s' on %s has neither return nor error", command,
                    qmp->path);
        return NULL;
    }
}

JsonNode *
qg_qmp_execute_with_fd(QgQmp *qmp, const char *command, JsonObject *args, int fd,
                       GError **error)
{
    return qg_qmp_execute_within(qmp, command, args, fd, qmp->reply_timeout_ms, error);
}

JsonNode *
qg_qmp_execute(QgQmp *qmp, const char *command, JsonObject *args, GError **error)
{
    return qg_qmp_execute_with_fd(qmp, command, args, -1, error);
}

/* @ret is the reply to @command: TRUE if it fits @shape, else a PROTOCOL error. */
static gboolean
qg_qmp_check_reply(QgQmp *qmp, const char *command, JsonNode *ret,
                   const IohJsonMember *shape, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (ioh_json_check_shape(ret, shape, &local)) {
        return TRUE;
    }
    g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_PROTOCOL,
                "unexpected reply from QEMU to '%s' on %s: %s", command, qmp->path,
                local->message);
    return FALSE;
}

JsonObject *
qg_qmp_call(QgQmp *qmp, const char *command, JsonObject *args, int fd,
            const IohJsonMember *shape, guint timeout_ms, GError **error)
{
    g_autoptr(JsonNode) ret = qg_qmp_execute_within(
        qmp, command, args, fd, timeout_ms ? timeout_ms : qmp->reply_timeout_ms, error);

    if (!ret || !qg_qmp_check_reply(qmp, command, ret, shape, error)) {
        return NULL;
    }
    return json_object_ref(json_node_get_object(ret));
}

gboolean
qg_qmp_run(QgQmp *qmp, const char *command, JsonObject *args, GError **error)
{
    g_autoptr(JsonObject) ret = qg_qmp_call(qmp, command, args, -1, NULL, 0, error);

    return ret != NULL;
}

JsonObject *
qg_qmp_next_event(QgQmp *qmp, guint timeout_ms, GError **error)
{
    gint64 deadline;

    if (!g_queue_is_empty(&qmp->events)) {
        return g_queue_pop_head(&qmp->events);
    }
    deadline = timeout_ms ? g_get_monotonic_time() + (gint64)timeout_ms * 1000 : 0;
    for (;;) {
        GError *err = NULL;
        JsonObject *msg = qg_qmp_read_message(qmp, deadline, &err);

        if (!msg) {
            if (err) {
                g_propagate_error(error, err);
            }
            return NULL;
        }
        if (json_object_has_member(msg, "event")) {
            return msg;
        }
        json_object_unref(msg);   /* a stray reply */
    }
}

static const IohJsonMember qg_qmp_greeting_shape[] = {
    { "version", IOH_JSON_OBJECT, FALSE },
    { "capabilities", IOH_JSON_ARRAY, FALSE },
    { NULL, 0, FALSE },
};
static const IohJsonMember qg_qmp_version_shape[] = {
    { "qemu", IOH_JSON_OBJECT, FALSE },
    { "package", IOH_JSON_STRING, FALSE },
    { NULL, 0, FALSE },
};
static const IohJsonMember qg_qmp_qemu_version_shape[] = {
    { "major", IOH_JSON_INT, FALSE },
    { "minor", IOH_JSON_INT, FALSE },
    { "micro", IOH_JSON_INT, FALSE },
    { NULL, 0, FALSE },
};

/* The greeting's capabilities ("oob", ...), strings only, for G_MESSAGES_DEBUG. */
static void
qg_qmp_debug_greeting(QgQmp *qmp, JsonArray *caps)
{
    g_autoptr(GString) list = g_string_new(NULL);
    guint n = caps ? json_array_get_length(caps) : 0;

    for (guint i = 0; i < n; i++) {
        JsonNode *c = json_array_get_element(caps, i);

        if (ioh_json_node_is(c, IOH_JSON_STRING)) {
            g_string_append_printf(list, "%s%s", list->len ? ", " : "",
                                   json_node_get_string(c));
        }
    }
    if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN)) {
        return;
    }
    {
        g_autofree char *msg = g_strdup_printf("QMP: QEMU %s on %s, greeting capabilities: %s",
                                               qmp->version, qmp->path,
                                               list->len ? list->str : "(none)");
        g_autofree char *line = qg_text_one_line(msg);
        g_debug("%s", line);
    }
}

static gboolean
qg_qmp_parse_greeting(QgQmp *qmp, JsonObject *msg, GError **error)
{
    JsonObject *qmpobj = ioh_json_get_object(msg, "QMP");
    JsonObject *ver = ioh_json_get_object(qmpobj, "version");
    JsonObject *q = ioh_json_get_object(ver, "qemu");
    g_autoptr(GError) local = NULL;

    if (!qmpobj) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_NOT_QMP,
                    "%s is not a QMP socket: its first message is no QMP greeting",
                    qmp->path);
        return FALSE;
    }
    if (!ioh_json_check_shape(json_object_get_member(msg, "QMP"), qg_qmp_greeting_shape,
                             &local) ||
        (ver && !ioh_json_check_shape(json_object_get_member(qmpobj, "version"),
                                     qg_qmp_version_shape, &local)) ||
        (q && !ioh_json_check_shape(json_object_get_member(ver, "qemu"),
                                   qg_qmp_qemu_version_shape, &local))) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_NOT_QMP,
                    "malformed QMP greeting on %s: %s", qmp->path, local->message);
        return FALSE;
    }
    if (q) {
        qmp->version = g_strdup_printf(
            "%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT,
            ioh_json_get_int(q, "major", 0), ioh_json_get_int(q, "minor", 0),
            ioh_json_get_int(q, "micro", 0));
    } else {
        qmp->version = g_strdup("unknown");
    }
    qg_qmp_debug_greeting(qmp, json_object_has_member(qmpobj, "capabilities")
                                   ? json_object_get_array_member(qmpobj, "capabilities")
                                   : NULL);
    return TRUE;
}

QgQmp *
qg_qmp_connect(const char *path, guint reply_timeout_ms, GError **error)
{
    g_autoptr(QgQmp) qmp = g_new0(QgQmp, 1);
    g_autoptr(GSocketAddress) addr = NULL;
    g_autoptr(JsonObject) greeting = NULL;
    g_autoptr(GError) local = NULL;
    GError *err = NULL;
    GStatBuf st;

    qmp->path = g_strdup(path);
    qmp->lines = ioh_lines_new(QG_QMP_MAX_LINE + 1);
    qmp->reply_timeout_ms = reply_timeout_ms ? reply_timeout_ms : QG_QMP_REPLY_TIMEOUT_MS;
    g_queue_init(&qmp->events);

    if (strlen(path) > QG_QMP_UNIX_PATH_MAX) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT,
                    "cannot connect to QMP socket %s: path longer than %d bytes", path,
                    QG_QMP_UNIX_PATH_MAX);
        return NULL;
    }
    qmp->socket = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                               G_SOCKET_PROTOCOL_DEFAULT, &local);
    if (!qmp->socket) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT,
                    "cannot create a socket for %s: %s", path, local->message);
        return NULL;
    }
    if (g_stat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT,
                    "cannot connect to QMP socket %s: not a socket", path);
        return NULL;
    }
    addr = g_unix_socket_address_new(path);
    if (!g_socket_connect(qmp->socket, addr, NULL, &local)) {
        g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT,
                    "cannot connect to QMP socket %s: %s", path, local->message);
        return NULL;
    }

    greeting = qg_qmp_read_message(
        qmp, g_get_monotonic_time() + (gint64)QG_QMP_GREETING_TIMEOUT_MS * 1000, &err);
    if (!greeting) {
        if (!err) {
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_NOT_QMP,
                        "%s is not a QMP socket: no greeting within %d s", path,
                        QG_QMP_GREETING_TIMEOUT_MS / 1000);
        } else {
            g_set_error(error, QG_QMP_ERROR, QG_QMP_ERROR_NOT_QMP,
                        "%s is not a QMP socket: %s", path, err->message);
            g_error_free(err);
        }
        return NULL;
    }
    if (!qg_qmp_parse_greeting(qmp, greeting, error)) {
        return NULL;
    }
    if (!qg_qmp_run(qmp, "qmp_capabilities", NULL, error)) {
        return NULL;
    }
    return g_steal_pointer(&qmp);
}
