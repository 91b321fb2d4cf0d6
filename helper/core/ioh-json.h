/* ioh-json.h - reading JSON from a peer we do not trust (prefix ioh_json_)
 *
 * json-glib's getters log a GLib CRITICAL and return junk when a member has another type
 * than the one asked for. Everything QEMU sends (qemu-glue) and every status line of the
 * helper (ioh-protocol-reader.c) goes through these instead: they never log, and a member
 * of the wrong type reads as absent, or fails a shape check with one clear message.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef enum {
    IOH_JSON_STRING,
    IOH_JSON_INT,       /* a JSON integer (not a fraction) */
    IOH_JSON_BOOLEAN,
    IOH_JSON_OBJECT,
    IOH_JSON_ARRAY,
    IOH_JSON_NUMBER,    /* an integer or a fraction */
} IohJsonType;

/* One expected member of an object; a table of them ends with a NULL name. */
typedef struct {
    const char *name;
    IohJsonType type;
    gboolean required;
} IohJsonMember;

/* "a string", "an array", "null", ... : what @node is, for messages. */
const char *ioh_json_describe(JsonNode *node);

/* TRUE when @node (nullable) is of @type. */
gboolean ioh_json_node_is(JsonNode *node, IohJsonType type);

/**
 * ioh_json_check_shape:
 * @node: (nullable): the value to check.
 * @shape: the members it must (required) or may have, with their types; members not in
 *     the table are allowed (QEMU adds members over its versions).
 * @error: a G_IO_ERROR_INVALID_DATA saying what is wrong ("'running' is a string, not
 *     a boolean", "it is an array, not an object"), for the caller to prefix.
 *
 * TRUE when @node is an object that fits @shape. After that the json-glib getters are
 * safe on the members the table names.
 */
gboolean ioh_json_check_shape(JsonNode *node, const IohJsonMember *shape, GError **error);

/* Member @key of @o (nullable) if it is of that type, else NULL / @def. Never logs. */
JsonObject *ioh_json_get_object(JsonObject *o, const char *key);
const char *ioh_json_get_string(JsonObject *o, const char *key);
gint64 ioh_json_get_int(JsonObject *o, const char *key, gint64 def);
gboolean ioh_json_get_boolean(JsonObject *o, const char *key, gboolean def);

G_END_DECLS
