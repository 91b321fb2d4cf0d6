/* ioh-json.c - reading JSON from a peer we do not trust */
#include "ioh-json.h"

#include <gio/gio.h>

static const char *const type_names[] = {
    [IOH_JSON_STRING] = "a string",
    [IOH_JSON_INT] = "an integer",
    [IOH_JSON_BOOLEAN] = "a boolean",
    [IOH_JSON_OBJECT] = "an object",
    [IOH_JSON_ARRAY] = "an array",
    [IOH_JSON_NUMBER] = "a number",
};

const char *
ioh_json_describe(JsonNode *node)
{
    if (!node) {
        return "missing";
    }
    switch (JSON_NODE_TYPE(node)) {
    case JSON_NODE_OBJECT:
        return "an object";
    case JSON_NODE_ARRAY:
        return "an array";
    case JSON_NODE_NULL:
        return "null";
    case JSON_NODE_VALUE:
    default:
        break;
    }
    switch (json_node_get_value_type(node)) {
    case G_TYPE_STRING:
        return "a string";
    case G_TYPE_BOOLEAN:
        return "a boolean";
    case G_TYPE_INT64:
        return "an integer";
    case G_TYPE_DOUBLE:
        return "a fraction";
    default:
        return "an unknown value";
    }
}

gboolean
ioh_json_node_is(JsonNode *node, IohJsonType type)
{
    if (!node) {
        return FALSE;
    }
    switch (type) {
    case IOH_JSON_OBJECT:
        return JSON_NODE_HOLDS_OBJECT(node);
    case IOH_JSON_ARRAY:
        return JSON_NODE_HOLDS_ARRAY(node);
    case IOH_JSON_STRING:
        return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING;
    case IOH_JSON_INT:
        return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_INT64;
    case IOH_JSON_BOOLEAN:
        return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_BOOLEAN;
    case IOH_JSON_NUMBER:
        return JSON_NODE_HOLDS_VALUE(node) && (json_node_get_value_type(node) == G_TYPE_INT64 ||
                                               json_node_get_value_type(node) == G_TYPE_DOUBLE);
    default:
        return FALSE;
    }
}

gboolean
ioh_json_check_shape(JsonNode *node, const IohJsonMember *shape, GError **error)
{
    JsonObject *o;

    if (!ioh_json_node_is(node, IOH_JSON_OBJECT)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "it is %s, not an object",
                    ioh_json_describe(node));
        return FALSE;
    }
    o = json_node_get_object(node);
    for (; shape && shape->name; shape++) {
        JsonNode *m = json_object_get_member(o, shape->name);

        if (!m && !shape->required) {
            continue;
        }
        if (!m) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "'%s' is missing (%s expected)", shape->name, type_names[shape->type]);
            return FALSE;
        }
        if (!ioh_json_node_is(m, shape->type)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "'%s' is %s, not %s",
                        shape->name, ioh_json_describe(m), type_names[shape->type]);
            return FALSE;
        }
    }
    return TRUE;
}

JsonObject *
ioh_json_get_object(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return ioh_json_node_is(n, IOH_JSON_OBJECT) ? json_node_get_object(n) : NULL;
}

const char *
ioh_json_get_string(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return ioh_json_node_is(n, IOH_JSON_STRING) ? json_node_get_string(n) : NULL;
}

gint64
ioh_json_get_int(JsonObject *o, const char *key, gint64 def)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return ioh_json_node_is(n, IOH_JSON_INT) ? json_node_get_int(n) : def;
}

gboolean
ioh_json_get_boolean(JsonObject *o, const char *key, gboolean def)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return ioh_json_node_is(n, IOH_JSON_BOOLEAN) ? json_node_get_boolean(n) : def;
}
