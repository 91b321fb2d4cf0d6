/* test-opt.c - the one command-line grammar (helper/core/ioh-opt.c) of iohelper and
 * qemu-iohelper: whole names only, no clusters, no value on a flag, an optional value
 * after '=' only, "--" and "-". */
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ioh-opt.h"

static const char *const words[] = { "text", "json", NULL };

static const IohOptEntry entries[] = {
    { "direct", 0, 0, IOH_OPT_NONE, NULL },
    { "fadvise", 1, 0, IOH_OPT_NONE, NULL },
    { "fadvise-window", 2, 0, IOH_OPT_REQUIRED, NULL },
    { "stats", 3, 0, IOH_OPT_OPTIONAL, words },
    { "help", 4, 'h', IOH_OPT_NONE, NULL },
    { "version", 5, 'V', IOH_OPT_NONE, NULL },
    { NULL, 0, 0, 0, NULL },
};

/* What a parse saw: "name=value" or "name" per option, then "| operand..." */
static gboolean
record(const IohOptEntry *e, const char *value, gpointer data, GError **error)
{
    (void)error;
    g_string_append_printf(data, "%s%s%s ", e->name, value ? "=" : "", value ? value : "");
    return TRUE;
}

/* Parses @args (NULL-terminated, after the program's name): the record, or "error: MSG". */
static char *
parse(const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GPtrArray) operands = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    GString *seen = g_string_new(NULL);

    g_ptr_array_add(argv, (gpointer) "prog");
    for (; *args; args++) {
        g_ptr_array_add(argv, (gpointer)*args);
    }
    g_ptr_array_add(argv, NULL);
    if (!ioh_opt_parse(entries, (int)argv->len - 1, (char **)argv->pdata, record, seen,
                       operands, &error)) {
        g_assert_error(error, G_OPTION_ERROR, error->code);
        g_assert_null(strchr(error->message, '\n'));
        g_string_free(seen, TRUE);
        return g_strdup_printf("error: %s", error->message);
    }
    g_string_append(seen, "|");
    for (guint i = 0; i < operands->len; i++) {
        g_string_append_printf(seen, " %s", (char *)g_ptr_array_index(operands, i));
    }
    return g_string_free(seen, FALSE);
}

#define EXPECT(want, ...)                                                 \
    do {                                                                  \
        const char *const args_[] = { __VA_ARGS__, NULL };                \
        g_autofree char *got_ = parse(args_);                             \
        g_assert_cmpstr(got_, ==, (want));                                \
    } while (0)

static void
test_order(void)
{
    EXPECT("direct fadvise-window=8M | in out", "in", "--direct", "out",
           "--fadvise-window=8M");
    EXPECT("fadvise-window=-1 | a b", "--fadvise-window", "-1", "a", "b");
    EXPECT("fadvise-window=--direct | a", "--fadvise-window", "--direct", "a");
    EXPECT("fadvise | - b", "--fadvise", "-", "b");
    EXPECT("help version | x", "-h", "x", "-V");
    EXPECT("| ", "");
    EXPECT("|  x", "", "x");
}

static void
test_whole_names(void)
{
    EXPECT("error: unknown option '--dir'", "--dir", "a", "b");
    EXPECT("error: unknown option '--fadv'", "--fadv=1", "a", "b");
    EXPECT("error: unknown option '--fadvise-windows'", "--fadvise-windows=1");
    EXPECT("error: unknown option '--DIRECT'", "--DIRECT");
    EXPECT("error: unknown option '---'", "---");
    EXPECT("error: unknown option '--'", "--=1");
    EXPECT("error: unknown option '-x'", "-x");
    EXPECT("error: unknown option '-direct'", "-direct");
}

static void
test_no_clusters(void)
{
    EXPECT("error: unknown option '-hV'", "-hV", "a", "b");
    EXPECT("error: unknown option '-Vh'", "-Vh");
    EXPECT("error: unknown option '-hx'", "-hx");
    EXPECT("error: unknown option '-xh'", "-xh");
}

static void
test_values(void)
{
    EXPECT("error: option '--direct' takes no value", "--direct=1", "a", "b");
    EXPECT("error: option '--direct' takes no value", "--direct=");
    EXPECT("error: option '--fadvise-window' needs a value", "a", "--fadvise-window");
    EXPECT("fadvise-window= | a", "--fadvise-window=", "a");
    /* an optional value follows '=' only: the next word is an operand... */
    EXPECT("stats | in out", "--stats", "in", "out");
    EXPECT("stats=json | a", "--stats=json", "a");
    EXPECT("stats= | a", "--stats=", "a");
    /* ...unless it is one of the option's words: refused, with the fix */
    EXPECT("error: option '--stats' takes its value after '=': write '--stats=json' (or "
           "'./json' for a file of that name)", "--stats", "json", "out");
    EXPECT("error: option '--stats' takes its value after '=': write '--stats=text' (or "
           "'./text' for a file of that name)", "a", "b", "--stats", "text");
    EXPECT("stats | -- json", "--stats", "--", "--", "json");
}

static void
test_double_dash(void)
{
    EXPECT("direct | --stats -h", "--direct", "--", "--stats", "-h");
    EXPECT("| a -- b", "a", "--", "--", "b");
    EXPECT("|", "--");
}

/* The messages quote what was typed: one line, no control characters. */
static void
test_escaped(void)
{
    EXPECT("error: unknown option '--a?b'", "--a\nb");
    EXPECT("error: unknown option '-?'", "-\x1b");
}

/* In-order parsing whatever the environment says: POSIXLY_CORRECT would otherwise stop
 * the options at the first operand. */
static void
test_posixly_correct(void)
{
    g_setenv("POSIXLY_CORRECT", "1", TRUE);
    EXPECT("direct | a b", "a", "--direct", "b");
    g_unsetenv("POSIXLY_CORRECT");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/opt/order", test_order);
    g_test_add_func("/opt/whole-names", test_whole_names);
    g_test_add_func("/opt/no-clusters", test_no_clusters);
    g_test_add_func("/opt/values", test_values);
    g_test_add_func("/opt/double-dash", test_double_dash);
    g_test_add_func("/opt/escaped", test_escaped);
    g_test_add_func("/opt/posixly-correct", test_posixly_correct);
    return g_test_run();
}
