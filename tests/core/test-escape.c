/* test-escape.c - one-line escaping (helper/core/ioh-escape): the same bytes as the three
 * implementations it replaces (helper/iohelper.c make_one_line, helper/cli/ioh-args.c
 * usage_error, libwrap/iohwrap.c helper_message_locked at d11e86e). The expected strings
 * below are what those three functions produced on each input (they agreed on all). */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ioh-escape.h"
#include "ioh-test.h"

static const struct {
    const char *in;
    const char *out;
} table[] = {
    { "", "" },
    { "plain", "plain" },
    { "/var/lib/vm1.save", "/var/lib/vm1.save" },
    { "a\x0a""b", "a?b" },
    { "\x0a""", "?" },
    { "tab\x09""here", "tab?here" },
    { "cr\x0d""\x0a""lf", "cr??lf" },
    { "\x1b""[31mred\x1b""[0m", "?[31mred?[0m" },
    { "del\x7f""", "del?" },
    { "\x01""\x02""\x1f"" ", "??? " },
    { "\xc3""\xa9""t\xc3""\xa9"" \xe6""\x97""\xa5""\xe6""\x9c""\xac""",
      "\xc3""\xa9""t\xc3""\xa9"" \xe6""\x97""\xa5""\xe6""\x9c""\xac""" },
    { "bad \xff""\xfe"" utf8", "bad \xff""\xfe"" utf8" },
    { "\x80""\x9f""\xa0""", "\x80""\x9f""\xa0""" },
    { "???", "???" },
    { "~ !", "~ !" },
    { "--status-interval=1\x0a""0", "--status-interval=1?0" },
    { "failure with /tmp/a\x0a""b.save: ", "failure with /tmp/a?b.save: " },
    { "\x7f""~\x7f""", "?~?" },
};

/* Bytes 1..255 in order, as the old functions printed them. */
static const char all_bytes_out[] =
    "??????????????????????????????? !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTU"
    "VWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~?"
    "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f"
    "\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
    "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf"
    "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf"
    "\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf"
    "\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf"
    "\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef"
    "\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff";

static void
test_table(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree char *copy = ioh_escape_line(table[i].in);
        g_autofree char *in_place = g_strdup(table[i].in);

        ioh_escape_line_in_place(in_place);
        g_assert_cmpstr(copy, ==, table[i].out);
        g_assert_cmpstr(in_place, ==, table[i].out);
    }
}

static void
test_all_bytes(void)
{
    char in[256];
    g_autofree char *out = NULL;

    for (int i = 1; i < 256; i++) {
        in[i - 1] = (char)i;
    }
    in[255] = '\0';
    out = ioh_escape_line(in);
    g_assert_cmpuint(strlen(out), ==, 255);
    g_assert_cmpmem(out, 255, all_bytes_out, 255);
    for (int i = 1; i < 256; i++) {
        gboolean shown_as_mark = all_bytes_out[i - 1] == '?' && i != '?';
        g_assert_cmpint(ioh_escape_is_control((guchar)i), ==, shown_as_mark);
    }
}

static void
test_null(void)
{
    g_assert_null(ioh_escape_line(NULL));
    ioh_escape_line_in_place(NULL);
}

/* The binary's own escaping today (iohelper.c for runtime errors, ioh-args.c for usage
 * errors) gives what ioh_escape_line gives: so replacing either by it changes nothing. */
static void
test_binary_agrees(void)
{
    const char *path = "/nonexistent-ioh/a\nb\x1b[1mc\x7f\xc3\xa9";
    g_autofree char *want_open = NULL;
    g_autofree char *want_usage = NULL;
    g_autofree char *shown = ioh_escape_line(path);
    g_autofree char *err = NULL;
    g_autofree char *err2 = NULL;
    g_autofree char *opt = NULL;
    char *argv[] = { (char *)ioht_helper_path(), (char *)path, (char *)"/dev/null", NULL };
    char *argv2[] = { (char *)ioht_helper_path(), (char *)"--bogus\x01\tx", (char *)"a",
                      (char *)"b", NULL };

    want_open = g_strdup_printf("iohelper: open %s: %s\n", shown, g_strerror(ENOENT));
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), ==, 1);
    g_assert_cmpstr(err, ==, want_open);

    opt = ioh_escape_line(argv2[1]);
    want_usage = g_strdup_printf("iohelper: unknown option '%s' (try --help)\n", opt);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv2, -1, -1, &err2)), ==, 2);
    g_assert_cmpstr(err2, ==, want_usage);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/escape/old-implementations-table", test_table);
    g_test_add_func("/escape/all-bytes", test_all_bytes);
    g_test_add_func("/escape/null", test_null);
    g_test_add_func("/escape/iohelper-binary-agrees", test_binary_agrees);
    return g_test_run();
}
