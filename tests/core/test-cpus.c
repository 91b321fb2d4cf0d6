/* test-cpus.c - ioh-cpus.h: CPU lists as taskset -c and cpusets write them, parsed with
 * care (the helper's --cpus is command-line input) and formatted back folded; the
 * affinity refused for a CPU this process may not use. */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "ioh-cpus.h"
#include "ioh-error.h"

static void
test_roundtrip(void)
{
    static const char *const good[][2] = {
        { "0", "0" }, { "1", "1" }, { "0-3,6", "0-3,6" }, { "3,2,1,0", "0-3" },
        { "0-0", "0" }, { "5,1-2,2-4", "1-5" }, { "1023", "1023" }, { "0,1023", "0,1023" },
        { "0-1023", "0-1023" }, { "007", "7" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *back = NULL;
        cpu_set_t set;

        g_assert_true(ioh_cpus_parse(good[i][0], &set, &error));
        g_assert_no_error(error);
        back = ioh_cpus_format(&set);
        g_assert_cmpstr(back, ==, good[i][1]);
    }
}

static void
test_refused(void)
{
    static const char *const bad[][2] = {
        { "", "empty" }, { ",", "empty item" }, { "0,", "empty item" }, { ",0", "empty item" },
        { "0,,1", "empty item" }, { "x", "not a CPU number" }, { "0-", "not a CPU number" },
        { "-1", "not a CPU number" }, { "+1", "not a CPU number" }, { " 0", "not a CPU" },
        { "0 ", "not a CPU" }, { "1-0", "reversed" }, { "1024", "out of range" },
        { "0-1024", "out of range" }, { "00000", "not a CPU number" }, { "0-1-2", "not a CPU" },
        { "0x1", "not a CPU" }, { "0:2", "not a CPU" }, { "1e3", "not a CPU" },
        { "\xff", "not a CPU" },
        /* the item is named whole, as typed: not the empty side of its dash */
        { "-1", "'-1' is not a CPU number" }, { "0-", "'0-' is not a CPU number" },
        { "3,4-x", "'4-x' is not a CPU number" },
        /* a caller's bytes (libwrap's GError) shown as printable ASCII: no line break, no
         * escape sequence, no byte sequence cut in two */
        { "0\n1", "'0\\n1'" }, { "\x1b[31m", "'\\033[31m'" },
        { "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x93\xef\xbc\x94\xef\xbc\x95\xef\xbc\x96", "...'" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        cpu_set_t set;

        g_assert_false(ioh_cpus_parse(bad[i][0], &set, &error));
        g_assert_error(error, IOH_ERROR, EINVAL);
        g_test_message("%s", error->message);
        g_assert_nonnull(strstr(error->message, bad[i][1]));
        for (const char *c = error->message; *c; c++) {
            g_assert_true(g_ascii_isprint(*c));
        }
    }
}

/* Longer than IOH_CPUS_TEXT_MAX: refused before any of it is parsed. */
static void
test_too_long(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strnfill(IOH_CPUS_TEXT_MAX + 1, '0');
    cpu_set_t set;

    g_assert_false(ioh_cpus_parse(text, &set, &error));
    g_assert_nonnull(strstr(error->message, "longer than"));
    g_assert_false(ioh_cpus_parse(NULL, &set, NULL));
}

/* A CPU this process may not use is named, and the affinity left as it was. */
static void
test_apply_refused(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *before = NULL;
    g_autofree char *after = NULL;
    cpu_set_t allowed, set;
    int outside = CPU_SETSIZE - 1;

    g_assert_true(ioh_cpus_get(0, &allowed, NULL));
    while (outside >= 0 && CPU_ISSET(outside, &allowed)) {
        outside--;
    }
    if (outside < 0) {
        g_test_skip("every CPU number is allowed here");
        return;
    }
    CPU_ZERO(&set);
    CPU_SET(outside, &set);
    g_assert_false(ioh_cpus_apply(&set, &error));
    g_assert_nonnull(strstr(error->message, "is not one this process may use"));
    before = ioh_cpus_format(&allowed);
    g_assert_true(ioh_cpus_get(0, &set, NULL));
    after = ioh_cpus_format(&set);
    g_assert_cmpstr(before, ==, after);
}

static void
test_narrower(void)
{
    cpu_set_t a, b;

    g_assert_true(ioh_cpus_parse("0", &a, NULL));
    g_assert_true(ioh_cpus_parse("0-1", &b, NULL));
    g_assert_true(ioh_cpus_narrower(&a, &b));
    g_assert_false(ioh_cpus_narrower(&b, &a));
    g_assert_false(ioh_cpus_narrower(&b, &b));
    g_assert_true(ioh_cpus_parse("2", &a, NULL));
    g_assert_false(ioh_cpus_narrower(&a, &b));    /* not within */
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/core/cpus/roundtrip", test_roundtrip);
    g_test_add_func("/core/cpus/refused", test_refused);
    g_test_add_func("/core/cpus/too-long", test_too_long);
    g_test_add_func("/core/cpus/apply-refused", test_apply_refused);
    g_test_add_func("/core/cpus/narrower", test_narrower);
    return g_test_run();
}
