/* test-number.c - whole numbers from text (helper/core/ioh-number): what they accept, and
 * that a process's first conversion holds while another thread takes GLib's one-time lock
 * (GLib 2.74's g_ascii_string_to_signed() refused "3" in 2 of 3 such processes here). */
#include <glib.h>

#include "ioh-number.h"
#include "ioh-test.h"

#define ONCES 20000

static void
test_accepts(void)
{
    gint64 s = 0;
    guint64 u = 0;

    g_assert_true(ioh_number_signed("3", 10, -7, 19, &s));
    g_assert_cmpint(s, ==, 3);
    g_assert_true(ioh_number_signed("-7", 10, -7, 19, &s));
    g_assert_cmpint(s, ==, -7);
    g_assert_true(ioh_number_unsigned("ffffffffffffffff", 16, 0, G_MAXUINT64, &u));
    g_assert_cmpuint(u, ==, G_MAXUINT64);
    g_assert_true(ioh_number_unsigned("0", 10, 0, 1, &u));
    g_assert_cmpuint(u, ==, 0);
}

static void
test_refuses(void)
{
    static const char *const bad[] = { "", " 3", "3 ", "3x", "x", "20", "-8", "0x3", "+",
                                       "99999999999999999999" };
    gint64 s = 42;
    guint64 u = 42;

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(ioh_number_signed(bad[i], 10, -7, 19, &s));
    }
    g_assert_false(ioh_number_unsigned("-1", 10, 0, G_MAXUINT64, &u));
    g_assert_false(ioh_number_unsigned("10", 10, 0, 9, &u));
    g_assert_false(ioh_number_unsigned("g", 16, 0, G_MAXUINT64, &u));
}

static gsize onces[ONCES];
static gint started;

/* Takes GLib's one-time lock again and again: a fresh g_once_init_enter() per variable. */
static gpointer
take_once_lock(gpointer data)
{
    (void)data;
    g_atomic_int_set(&started, 1);
    for (guint i = 0; i < ONCES; i++) {
        if (g_once_init_enter(&onces[i])) {
            g_once_init_leave(&onces[i], 1);
        }
    }
    return NULL;
}

/* A fresh process (this program run with --first-call-child, before any GLib test setup,
 * which converts numbers itself): the first conversion, while another thread takes the
 * lock. Exit 0 when it gave 3. */
static int
first_call_child(void)
{
    GThread *t = g_thread_new("once", take_once_lock, NULL);
    gint64 v = 0;
    gboolean ok;

    while (!g_atomic_int_get(&started)) {
    }
    ok = ioh_number_signed("3", 10, -7, 19, &v);
    g_thread_join(t);
    return ok && v == 3 ? 0 : 1;
}

static void
test_first_call_beside_once(void)
{
    const char *argv[] = { "/proc/self/exe", "--first-call-child", NULL };
    guint failed = 0;

    for (guint i = 0; i < 100; i++) {
        g_autoptr(GError) error = NULL;
        int status;

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                   NULL, NULL, &status, &error));
        failed += !g_spawn_check_wait_status(status, NULL);
    }
    g_assert_cmpuint(failed, ==, 0);
}

int
main(int argc, char **argv)
{
    if (argc == 2 && g_str_equal(argv[1], "--first-call-child")) {
        return first_call_child();
    }
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/core/number/accepts", test_accepts);
    g_test_add_func("/core/number/refuses", test_refuses);
    g_test_add_func("/core/number/first-call-beside-once", test_first_call_beside_once);
    return g_test_run();
}
