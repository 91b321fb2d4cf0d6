/* test-json.c - the JSON getters for an untrusted peer (helper/core/ioh-json.c), shared by
 * qemu-glue (QMP) and the helper protocol's reader: a member of another type reads as
 * absent and nothing logs (the tests run with G_DEBUG=fatal-warnings). */
#include <json-glib/json-glib.h>

#include "ioh-json.h"

static JsonNode *
parse(const char *text)
{
    g_autoptr(JsonParser) p = json_parser_new();

    g_assert_true(json_parser_load_from_data(p, text, -1, NULL));
    return json_node_copy(json_parser_get_root(p));
}

static void
test_types(void)
{
    g_autoptr(JsonNode) root = parse("{\"s\":\"x\",\"i\":3,\"f\":1.5,\"b\":true,"
                                     "\"o\":{},\"a\":[],\"n\":null}");
    JsonObject *o = json_node_get_object(root);

    g_assert_true(ioh_json_node_is(json_object_get_member(o, "i"), IOH_JSON_INT));
    g_assert_true(ioh_json_node_is(json_object_get_member(o, "i"), IOH_JSON_NUMBER));
    g_assert_true(ioh_json_node_is(json_object_get_member(o, "f"), IOH_JSON_NUMBER));
    g_assert_false(ioh_json_node_is(json_object_get_member(o, "f"), IOH_JSON_INT));
    g_assert_false(ioh_json_node_is(json_object_get_member(o, "s"), IOH_JSON_NUMBER));
    g_assert_false(ioh_json_node_is(json_object_get_member(o, "n"), IOH_JSON_OBJECT));
    g_assert_false(ioh_json_node_is(NULL, IOH_JSON_STRING));
    g_assert_cmpstr(ioh_json_describe(json_object_get_member(o, "f")), ==, "a fraction");
    g_assert_cmpstr(ioh_json_describe(NULL), ==, "missing");
    /* the getters: the member when it is of the type, else absent or the default */
    g_assert_cmpstr(ioh_json_get_string(o, "s"), ==, "x");
    g_assert_null(ioh_json_get_string(o, "i"));
    g_assert_cmpint(ioh_json_get_int(o, "i", -1), ==, 3);
    g_assert_cmpint(ioh_json_get_int(o, "f", -1), ==, -1);
    g_assert_true(ioh_json_get_boolean(o, "b", FALSE));
    g_assert_true(ioh_json_get_boolean(o, "s", TRUE));
    g_assert_nonnull(ioh_json_get_object(o, "o"));
    g_assert_null(ioh_json_get_object(o, "a"));
    g_assert_null(ioh_json_get_object(NULL, "o"));
}

static void
test_shape(void)
{
    static const IohJsonMember shape[] = {
        { "status", IOH_JSON_STRING, TRUE },
        { "running", IOH_JSON_BOOLEAN, FALSE },
        { NULL, 0, FALSE },
    };
    g_autoptr(JsonNode) good = parse("{\"status\":\"ok\",\"extra\":1}");
    g_autoptr(JsonNode) wrong = parse("{\"status\":\"ok\",\"running\":\"yes\"}");
    g_autoptr(JsonNode) missing = parse("{}");
    g_autoptr(JsonNode) array = parse("[]");
    g_autoptr(GError) error = NULL;

    g_assert_true(ioh_json_check_shape(good, shape, &error));
    g_assert_false(ioh_json_check_shape(wrong, shape, &error));
    g_assert_cmpstr(error->message, ==, "'running' is a string, not a boolean");
    g_clear_error(&error);
    g_assert_false(ioh_json_check_shape(missing, shape, &error));
    g_assert_cmpstr(error->message, ==, "'status' is missing (a string expected)");
    g_clear_error(&error);
    g_assert_false(ioh_json_check_shape(array, shape, &error));
    g_assert_cmpstr(error->message, ==, "it is an array, not an object");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json/types", test_types);
    g_test_add_func("/json/shape", test_shape);
    return g_test_run();
}
