/* qg-json.h - json-glib helpers shared by the qemu-glue modules (prefix qg_json_) */
#pragma once

#include <json-glib/json-glib.h>

/* The object member @key of @o, or NULL when @o is NULL, it is missing or no object. */
static inline JsonObject *
qg_json_get_object(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}
