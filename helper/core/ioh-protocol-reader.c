/* ioh-protocol-reader.c - the helper protocol: decoding lines, and the line reader
 *
 * A reader of the status fd trusts nothing: a line is checked for size, NUL bytes,
 * UTF-8 and nesting before json-glib sees it (its parser recurses), then every member
 * this side knows is checked for its type and range. Members it does not know are
 * skipped, so a newer helper can add them.
 */
#include "ioh-protocol.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "ioh-error.h"
#include "ioh-json.h"
#include "ioh-lines.h"

#define MAX_ERRNO 4095
#define MAX_CHECKSUM_HEX 128

/* A malformed line: IOH_ERROR/EPROTO "status line: <why>". */
#define bad(error, ...) ioh_error_set((error), EPROTO, "status line", NULL, __VA_ARGS__)

/* Scans the line as JSON's lexer would, for what json-glib lets through or must not see. */
static gboolean
check_structure(const char *s, gsize len, GError **error)
{
    gboolean in_string = FALSE, ended = FALSE;
    int depth = 0;

    for (gsize i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\' && i + 5 < len && memcmp(s + i + 1, "u0000", 5) == 0) {
                return bad(error, "a string holds \\u0000");
            }
            if ((guchar)c < 0x20) {
                return bad(error, "a string holds a raw control character");    /* RFC 8259 */
            }
            i += c == '\\';
            in_string = c != '"';
        } else if (ended && !g_ascii_isspace(c)) {
            return bad(error, "text after the object");    /* json-glib ignores a second */
        } else if (c == '"') {
            in_string = TRUE;
        } else if ((c == '{' || c == '[') && ++depth > IOH_PROTOCOL_MAX_DEPTH) {
            return bad(error, "nested deeper than %d", IOH_PROTOCOL_MAX_DEPTH);
        } else if ((c == '}' || c == ']') && --depth == 0) {
            ended = TRUE;
        }
    }
    return TRUE;
}

/* What json-glib must never see: NUL bytes, invalid UTF-8, "\u0000" (it would cut a
 * string short in C), raw control characters in strings (it accepts them), deep nesting
 * (its parser recurses), a second value after the object (it accepts it), oversized
 * lines, and more than one line. */
static gboolean
check_shape(const char *s, gsize len, GError **error)
{
    if (len == 0) {
        return bad(error, "empty line");
    }
    if (len >= IOH_PROTOCOL_MAX_LINE) {
        return bad(error, "%zu bytes, longer than %d", len, IOH_PROTOCOL_MAX_LINE - 1);
    }
    if (memchr(s, '\0', len)) {
        return bad(error, "contains a NUL byte");
    }
    if (memchr(s, '\n', len)) {
        return bad(error, "more than one line");
    }
    if (!g_utf8_validate_len(s, len, NULL)) {
        return bad(error, "not UTF-8");
    }
    return check_structure(s, len, error);
}

/* ---- members -------------------------------------------------------------------- */

/* A member that must be absent (FALSE, nothing set) or of the right type. */
static JsonNode *
member(JsonObject *o, const char *name, gboolean required, GError **error)
{
    JsonNode *n = json_object_get_member(o, name);

    if (!n && required) {
        bad(error, "no member \"%s\"", name);
    }
    return n;
}

static gboolean
get_count(JsonObject *o, const char *name, gboolean required, guint64 max, guint64 *ret,
          GError **error)
{
    JsonNode *n = member(o, name, required, error);

    if (!n) {
        return !required;
    }
    /* json-glib reads an integer beyond 64 bits as -1: the sign check catches it too */
    if (!ioh_json_node_is(n, IOH_JSON_INT) || json_node_get_int(n) < 0 ||
        (guint64)json_node_get_int(n) > max) {
        return bad(error, "member \"%s\" is not an integer from 0 to %" G_GUINT64_FORMAT,
                   name, max);
    }
    *ret = (guint64)json_node_get_int(n);
    return TRUE;
}

static gboolean
get_seconds(JsonObject *o, const char *name, gboolean required, double *ret, GError **error)
{
    JsonNode *n = member(o, name, required, error);
    double v;

    if (!n) {
        return !required;
    }
    if (!ioh_json_node_is(n, IOH_JSON_NUMBER)) {
        return bad(error, "member \"%s\" is not a number", name);
    }
    v = ioh_json_node_is(n, IOH_JSON_INT) ? (double)json_node_get_int(n) : json_node_get_double(n);
    if (!isfinite(v) || v < 0) {
        return bad(error, "member \"%s\" is not a finite number >= 0", name);
    }
    *ret = v;
    return TRUE;
}

static gboolean
get_string(JsonObject *o, const char *name, gboolean required, char **ret, GError **error)
{
    JsonNode *n = member(o, name, required, error);

    if (!n) {
        return !required;
    }
    if (!ioh_json_node_is(n, IOH_JSON_STRING)) {
        return bad(error, "member \"%s\" is not a string", name);
    }
    g_free(*ret);
    *ret = g_strdup(json_node_get_string(n));
    return TRUE;
}

static gboolean
check_bool(JsonObject *o, const char *name, GError **error)
{
    JsonNode *n = json_object_get_member(o, name);

    return !n || ioh_json_node_is(n, IOH_JSON_BOOLEAN) ||
           bad(error, "member \"%s\" is not a boolean", name);
}

/* ---- line types ----------------------------------------------------------------- */

static gboolean
read_counters(JsonObject *o, IohProtocolMsg *m, gboolean required, GError **error)
{
    return get_count(o, "written", required, G_MAXINT64, &m->written, error) &&
           get_count(o, "stored", required, G_MAXINT64, &m->stored, error) &&
           get_count(o, "synced", required, G_MAXINT64, &m->synced, error) &&
           get_seconds(o, "seconds", required, &m->seconds, error) &&
           check_bool(o, "done", error);
}

static gboolean
read_checksum(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    if (!get_string(o, "checksum_algorithm", FALSE, &m->checksum_algorithm, error) ||
        !get_string(o, "checksum", FALSE, &m->checksum, error)) {
        return FALSE;
    }
    if (!m->checksum_algorithm != !m->checksum) {
        return bad(error, "\"checksum\" and \"checksum_algorithm\" come together");
    }
    if (m->checksum_algorithm && !*m->checksum_algorithm) {
        return bad(error, "member \"checksum_algorithm\" is empty");
    }
    if (m->checksum) {
        gsize n = strlen(m->checksum);
        if (n == 0 || n > MAX_CHECKSUM_HEX || strspn(m->checksum, "0123456789abcdef") != n) {
            return bad(error, "member \"checksum\" is not 1 to %d lower-case hex digits",
                       MAX_CHECKSUM_HEX);
        }
    }
    return TRUE;
}

/* Minor 1: the compression members, all optional (the level may be negative). */
static gboolean
read_compression(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    JsonNode *level = json_object_get_member(o, "compression_level");

    if (level && (!ioh_json_node_is(level, IOH_JSON_INT) || json_node_get_int(level) < G_MININT ||
                  json_node_get_int(level) > G_MAXINT)) {
        return bad(error, "member \"compression_level\" is not an integer");
    }
    m->has_level = level != NULL;
    m->compression_level = level ? (int)json_node_get_int(level) : 0;
    return get_string(o, "compression", FALSE, &m->compression, error) &&
           (!m->compression || *m->compression ||
            bad(error, "member \"compression\" is empty")) &&
           get_seconds(o, "ratio", FALSE, &m->ratio, error) &&
           get_seconds(o, "compress_cpu_seconds", FALSE, &m->compress_cpu_seconds, error) &&
           get_seconds(o, "cpu_seconds", FALSE, &m->cpu_seconds, error);
}

/* Minor 3: the encryption members, optional, together. */
static gboolean
read_encryption(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    guint64 n = 0;

    if (!get_string(o, "encryption", FALSE, &m->encryption, error) ||
        !get_count(o, "encryption_recipients", FALSE, G_MAXUINT, &n, error)) {
        return FALSE;
    }
    m->encryption_recipients = (guint)n;
    return !m->encryption || *m->encryption || bad(error, "member \"encryption\" is empty");
}

static gboolean
read_result(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    g_autofree char *direction = NULL;
    g_autofree char *mode = NULL;

    if (!read_counters(o, m, TRUE, error) ||
        !get_seconds(o, "sync_seconds", TRUE, &m->sync_seconds, error) ||
        !get_count(o, "reads", TRUE, G_MAXINT64, &m->reads, error) ||
        !get_count(o, "writes", TRUE, G_MAXINT64, &m->writes, error) ||
        !get_string(o, "direction", TRUE, &direction, error) ||
        !get_string(o, "mode", TRUE, &mode, error)) {
        return FALSE;
    }
    if (!ioh_direction_from_string(direction, &m->direction, NULL)) {
        return bad(error, "member \"direction\" is not copy, save or restore");
    }
    if (!ioh_cache_mode_from_string(mode, &m->mode, NULL)) {
        return bad(error, "member \"mode\" is not buffered, direct, fadvise, nbd or rbd");
    }
    return read_checksum(o, m, error) && read_compression(o, m, error) &&
           read_encryption(o, m, error);
}

static gboolean
read_error(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    guint64 errsv = 0;

    if (!read_counters(o, m, FALSE, error) ||
        !get_string(o, "message", TRUE, &m->message, error) ||
        !get_string(o, "operation", FALSE, &m->operation, error) ||
        !get_string(o, "path", FALSE, &m->path, error) ||
        !get_count(o, "errno", FALSE, MAX_ERRNO, &errsv, error) ||
        !get_string(o, "errno_name", FALSE, &m->errno_name, error)) {
        return FALSE;
    }
    m->errsv = (int)errsv;
    return TRUE;
}

/* "v" must be ours; "minor" may be anything (a newer helper only adds). */
static gboolean
read_version(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    JsonNode *v = member(o, "v", TRUE, error);
    guint64 minor = 0;

    if (!v) {
        return FALSE;
    }
    if (!ioh_json_node_is(v, IOH_JSON_INT)) {
        return bad(error, "member \"v\" is not an integer");
    }
    if (json_node_get_int(v) != IOH_PROTOCOL_VERSION) {
        return ioh_error_set(error, EPROTONOSUPPORT, NULL, NULL,
                             "status line: protocol version %" G_GINT64_FORMAT
                             ", this side speaks %d", json_node_get_int(v),
                             IOH_PROTOCOL_VERSION);
    }
    if (!get_count(o, "minor", FALSE, G_MAXUINT, &minor, error)) {
        return FALSE;
    }
    m->minor = (guint)minor;
    return TRUE;
}

static gboolean
read_object(JsonObject *o, IohProtocolMsg *m, GError **error)
{
    g_autofree char *type = NULL;

    if (!read_version(o, m, error) || !get_string(o, "type", TRUE, &type, error)) {
        return FALSE;
    }
    if (g_str_equal(type, "progress")) {
        m->kind = IOH_PROTOCOL_PROGRESS;
        return read_counters(o, m, TRUE, error);
    }
    if (g_str_equal(type, "result")) {
        m->kind = IOH_PROTOCOL_RESULT;
        return read_result(o, m, error);
    }
    if (g_str_equal(type, "error")) {
        m->kind = IOH_PROTOCOL_ERROR;
        return read_error(o, m, error);
    }
    if (g_str_equal(type, "ready")) {
        m->kind = IOH_PROTOCOL_READY;    /* minor 2: no members of its own */
        return TRUE;
    }
    if (m->minor > IOH_PROTOCOL_MINOR) {
        m->kind = IOH_PROTOCOL_UNKNOWN;    /* added by a newer minor version: skip it */
        return TRUE;
    }
    return bad(error, "unknown type");
}

gboolean
ioh_protocol_decode(const char *line, gsize len, IohProtocolMsg *ret_msg, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) json_error = NULL;
    JsonNode *root;

    ioh_protocol_msg_clear(ret_msg);
    if (len > 0 && line[len - 1] == '\n') {
        len--;
    }
    if (!check_shape(line, len, error)) {
        return FALSE;
    }
    if (!json_parser_load_from_data(parser, line, (gssize)len, &json_error)) {
        return bad(error, "not JSON: %s", json_error->message);
    }
    root = json_parser_get_root(parser);
    if (!ioh_json_node_is(root, IOH_JSON_OBJECT)) {
        return bad(error, "not a JSON object");
    }
    if (!read_object(json_node_get_object(root), ret_msg, error)) {
        ioh_protocol_msg_clear(ret_msg);
        return FALSE;
    }
    return TRUE;
}

/* ---- the line reader ------------------------------------------------------------ */

struct _IohProtocolReader {
    IohLines *lines;     /* the status fd's bytes, cut into bounded lines */
};

IohProtocolReader *
ioh_protocol_reader_new(void)
{
    IohProtocolReader *r = g_new0(IohProtocolReader, 1);

    r->lines = ioh_lines_new(IOH_PROTOCOL_MAX_LINE);
    return r;
}

void
ioh_protocol_reader_free(IohProtocolReader *reader)
{
    if (!reader) {
        return;
    }
    ioh_lines_free(reader->lines);
    g_free(reader);
}

void
ioh_protocol_reader_feed(IohProtocolReader *reader, const void *data, gsize len)
{
    g_return_if_fail(reader != NULL);

    ioh_lines_feed(reader->lines, data, len);
}

int
ioh_protocol_reader_next(IohProtocolReader *reader, IohProtocolMsg *ret_msg, GError **error)
{
    GString *line = NULL;
    gboolean ok;
    int got;

    g_return_val_if_fail(reader != NULL, -1);

    got = ioh_lines_take(reader->lines, &line);
    if (got == 0) {
        return 0;
    }
    if (got < 0) {
        ioh_protocol_msg_clear(ret_msg);
        bad(error, "longer than %d bytes", IOH_PROTOCOL_MAX_LINE - 1);
        return -1;
    }
    ok = ioh_protocol_decode(line->str, line->len, ret_msg, error);
    g_string_free(line, TRUE);
    return ok ? 1 : -1;
}

gboolean
ioh_protocol_reader_finish(IohProtocolReader *reader, GError **error)
{
    g_return_val_if_fail(reader != NULL, FALSE);

    if (ioh_lines_finish(reader->lines)) {
        return bad(error, "the stream ended inside a line");
    }
    return TRUE;
}
