/* ioh-protocol.c - the helper protocol: messages, encoding and writing lines
 *
 * Decoding and the line reader are in ioh-protocol-reader.c.
 */
#include "ioh-protocol.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "ioh-error.h"
#include "ioh-fd.h"

static const char *const direction_names[] = {
    [IOH_DIRECTION_COPY] = "copy",
    [IOH_DIRECTION_SAVE] = "save",
    [IOH_DIRECTION_RESTORE] = "restore",
};

const char *
ioh_direction_to_string(IohDirection direction)
{
    return (guint)direction < G_N_ELEMENTS(direction_names) ? direction_names[direction]
                                                             : NULL;
}

gboolean
ioh_direction_from_string(const char *text, IohDirection *ret_direction, GError **error)
{
    for (guint i = 0; text && i < G_N_ELEMENTS(direction_names); i++) {
        if (g_str_equal(text, direction_names[i])) {
            *ret_direction = (IohDirection)i;
            return TRUE;
        }
    }
    return ioh_error_set(error, EINVAL, NULL, NULL, "direction '%s': not copy, save or restore",
                         text ? text : "");
}

void
ioh_protocol_msg_clear(IohProtocolMsg *msg)
{
    if (!msg) {
        return;
    }
    g_free(msg->checksum_algorithm);
    g_free(msg->checksum);
    g_free(msg->compression);
    g_free(msg->encryption);
    g_free(msg->operation);
    g_free(msg->path);
    g_free(msg->errno_name);
    g_free(msg->message);
    memset(msg, 0, sizeof(*msg));
}

void
ioh_protocol_msg_set_error(IohProtocolMsg *msg, const GError *error)
{
    g_return_if_fail(msg != NULL);

    g_clear_pointer(&msg->operation, g_free);
    g_clear_pointer(&msg->path, g_free);
    g_clear_pointer(&msg->errno_name, g_free);
    g_clear_pointer(&msg->message, g_free);
    msg->kind = IOH_PROTOCOL_ERROR;
    msg->errsv = ioh_error_get_errno(error);
    msg->errno_name = g_strdup(ioh_errno_name(msg->errsv));
    msg->operation = g_strdup(ioh_error_get_operation(error));
    msg->path = g_strdup(ioh_error_get_path(error));
    msg->message = g_strdup(error ? error->message : "unknown error");
}

GError *
ioh_protocol_msg_to_error(const IohProtocolMsg *msg)
{
    g_return_val_if_fail(msg != NULL, NULL);

    return ioh_error_new_literal(msg->errsv > 0 ? msg->errsv : EIO, msg->operation, msg->path,
                                 msg->message ? msg->message : "the helper failed");
}

gboolean
ioh_protocol_msg_is_final(const IohProtocolMsg *msg)
{
    return msg && (msg->kind == IOH_PROTOCOL_RESULT || msg->kind == IOH_PROTOCOL_ERROR);
}

/* ---- encoding ------------------------------------------------------------------- */

/* @text as valid UTF-8 of at most IOH_PROTOCOL_MAX_STRING bytes, cut at a character. */
static char *
clip_string(const char *text)
{
    char *s = g_utf8_make_valid(text, -1);
    gsize cut = IOH_PROTOCOL_MAX_STRING;

    if (strlen(s) > cut) {
        while (cut > 0 && ((guchar)s[cut] & 0xC0) == 0x80) {
            cut--;
        }
        s[cut] = '\0';
    }
    return s;
}

static void
add_string(JsonBuilder *b, const char *name, const char *value)
{
    g_autofree char *clipped = NULL;

    if (value) {
        clipped = clip_string(value);
        json_builder_set_member_name(b, name);
        json_builder_add_string_value(b, clipped);
    }
}

static void
add_count(JsonBuilder *b, const char *name, guint64 value)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, (gint64)MIN(value, (guint64)G_MAXINT64));
}

static void
add_seconds(JsonBuilder *b, const char *name, double value)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, isfinite(value) && value > 0 ? value : 0.0);
}

static void
add_bool(JsonBuilder *b, const char *name, gboolean value)
{
    json_builder_set_member_name(b, name);
    json_builder_add_boolean_value(b, value);
}

static void
add_counters(JsonBuilder *b, const IohProtocolMsg *msg)
{
    add_count(b, "written", msg->written);
    add_count(b, "stored", msg->stored);
    add_count(b, "synced", msg->synced);
    add_seconds(b, "seconds", msg->seconds);
}

static void
add_result(JsonBuilder *b, const IohProtocolMsg *msg)
{
    add_bool(b, "done", TRUE);
    add_counters(b, msg);
    add_seconds(b, "sync_seconds", msg->sync_seconds);
    add_count(b, "reads", msg->reads);
    add_count(b, "writes", msg->writes);
    add_string(b, "direction", ioh_direction_to_string(msg->direction));
    add_string(b, "mode", ioh_cache_mode_to_string(msg->mode));
    if (msg->checksum_algorithm && msg->checksum) {
        add_string(b, "checksum_algorithm", msg->checksum_algorithm);
        add_string(b, "checksum", msg->checksum);
    }
    if (msg->compression) {
        add_string(b, "compression", msg->compression);
        if (msg->has_level) {
            json_builder_set_member_name(b, "compression_level");
            json_builder_add_int_value(b, msg->compression_level);
        }
        add_seconds(b, "ratio", msg->ratio);
        add_seconds(b, "compress_cpu_seconds", msg->compress_cpu_seconds);
        add_seconds(b, "cpu_seconds", msg->cpu_seconds);
    }
    if (msg->encryption) {
        add_string(b, "encryption", msg->encryption);
        add_count(b, "encryption_recipients", msg->encryption_recipients);
    }
}

static void
add_error(JsonBuilder *b, const IohProtocolMsg *msg)
{
    add_string(b, "operation", msg->operation);
    add_string(b, "path", msg->path);
    if (msg->errsv > 0) {
        add_count(b, "errno", (guint64)msg->errsv);
        add_string(b, "errno_name", msg->errno_name ? msg->errno_name
                                                    : ioh_errno_name(msg->errsv));
    }
    add_string(b, "message", msg->message ? msg->message : "the helper failed");
    add_counters(b, msg);
}

static const char *
kind_name(IohProtocolKind kind)
{
    switch (kind) {
    case IOH_PROTOCOL_PROGRESS:
        return "progress";
    case IOH_PROTOCOL_RESULT:
        return "result";
    case IOH_PROTOCOL_ERROR:
        return "error";
    case IOH_PROTOCOL_READY:
        return "ready";
    default:
        return NULL;
    }
}

char *
ioh_protocol_encode(const IohProtocolMsg *msg, gsize *ret_len)
{
    g_autoptr(JsonBuilder) b = json_builder_new_immutable();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *data = NULL;
    gsize len = 0;
    char *line;

    g_return_val_if_fail(msg != NULL && kind_name(msg->kind) != NULL, NULL);

    json_builder_begin_object(b);
    add_count(b, "v", IOH_PROTOCOL_VERSION);
    add_count(b, "minor", IOH_PROTOCOL_MINOR);
    add_string(b, "type", kind_name(msg->kind));
    if (msg->kind == IOH_PROTOCOL_PROGRESS) {
        add_counters(b, msg);
        add_bool(b, "done", FALSE);    /* the members of the first, unversioned format */
    } else if (msg->kind == IOH_PROTOCOL_RESULT) {
        add_result(b, msg);
    } else if (msg->kind == IOH_PROTOCOL_ERROR) {
        add_error(b, msg);
    }
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    data = json_generator_to_data(gen, &len);
    line = g_strconcat(data, "\n", NULL);
    if (ret_len) {
        *ret_len = len + 1;
    }
    return line;
}

/* ---- writing -------------------------------------------------------------------- */

gboolean
ioh_protocol_write(int fd, const IohProtocolMsg *msg, int timeout_ms, GError **error)
{
    gsize len = 0;
    g_autofree char *line = ioh_protocol_encode(msg, &len);
    gint64 deadline = timeout_ms > 0 ? g_get_monotonic_time() + (gint64)timeout_ms * 1000 : 0;
    g_autofree char *name = g_strdup_printf("status fd %d", fd);

    g_return_val_if_fail(line != NULL, FALSE);

    for (;;) {
        gssize n = write(fd, line, len);
        int ready, left;

        if (n == (gssize)len) {
            return TRUE;
        }
        if (n > 0) {
            /* a part is out: the rest must follow, or the reader gets a torn line */
            return ioh_fd_write_full(fd, line + n, len - (gsize)n, NULL, name, error);
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            return ioh_error_set_errno(error, n == 0 ? EIO : errno, "write", name);
        }
        left = timeout_ms < 0 ? -1
             : timeout_ms == 0 ? 0
             : (int)MAX((deadline - g_get_monotonic_time() + 999) / 1000, 0);
        ready = left == 0 ? 0 : ioh_fd_wait(fd, POLLOUT, NULL, left, error);
        if (ready < 0) {
            return FALSE;
        }
        if (ready == 0) {
            return ioh_error_set(error, EAGAIN, "write", name, "no room for a line in %d ms",
                                 MAX(timeout_ms, 0));
        }
    }
}
