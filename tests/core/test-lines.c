/* test-lines.c - a byte stream cut into bounded lines (helper/core/ioh-lines.c), as the
 * helper protocol's reader and qemu-glue's QMP client read their peer. */
#include <string.h>

#include <glib.h>

#include "ioh-lines.h"

/* Takes the next line: its text, "<overlong>" or NULL (none). */
static char *
take(IohLines *l)
{
    GString *line = NULL;
    int r = ioh_lines_take(l, &line);

    if (r == 0) {
        return NULL;
    }
    if (r < 0) {
        return g_strdup("<overlong>");
    }
    return g_string_free(line, FALSE);
}

static void
assert_take(IohLines *l, const char *want)
{
    g_autofree char *got = take(l);

    g_assert_cmpstr(got, ==, want);
}

/* Lines across chunks, several in one chunk, an empty one. */
static void
test_split(void)
{
    g_autoptr(IohLines) l = ioh_lines_new(100);

    ioh_lines_feed(l, "ab", 2);
    assert_take(l, NULL);
    ioh_lines_feed(l, "c\nde\n\nf", 7);
    assert_take(l, "abc");
    assert_take(l, "de");
    assert_take(l, "");
    assert_take(l, NULL);
    g_assert_true(ioh_lines_finish(l));    /* "f" was torn */
    g_assert_false(ioh_lines_finish(l));
}

/* A NUL byte stays in the line: the reader decides what it means. */
static void
test_nul(void)
{
    g_autoptr(IohLines) l = ioh_lines_new(100);
    GString *line = NULL;

    ioh_lines_feed(l, "a\0b\n", 4);
    g_assert_cmpint(ioh_lines_take(l, &line), ==, 1);
    g_assert_cmpuint(line->len, ==, 3);
    g_assert_cmpint(memcmp(line->str, "a\0b", 3), ==, 0);
    g_string_free(line, TRUE);
}

/* max - 1 bytes is a line; max bytes is overlong, whether it comes in one chunk or byte
 * by byte; the line after it is read as usual. */
static void
test_bound(void)
{
    g_autoptr(IohLines) l = ioh_lines_new(8);

    ioh_lines_feed(l, "1234567\n12345678\n", 17);
    assert_take(l, "1234567");
    assert_take(l, "<overlong>");
    for (int i = 0; i < 20; i++) {
        ioh_lines_feed(l, "x", 1);
        g_assert_true(ioh_lines_overlong(l) == (i >= 7));
    }
    assert_take(l, NULL);
    ioh_lines_feed(l, "\nok\n", 4);
    g_assert_false(ioh_lines_overlong(l));
    assert_take(l, "<overlong>");
    assert_take(l, "ok");
    ioh_lines_feed(l, "123456789", 9);
    g_assert_true(ioh_lines_finish(l));    /* the stream ended inside an overlong line */
    g_assert_false(ioh_lines_overlong(l));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lines/split", test_split);
    g_test_add_func("/lines/nul", test_nul);
    g_test_add_func("/lines/bound", test_bound);
    return g_test_run();
}
