/* test-cache-mode.c - the one cache-mode enum (helper/core/ioh-cache-mode): its names, and
 * that the engine takes it in place (its options hold an IohCacheMode). */
#include <errno.h>

#include <glib.h>

#include "ioh-cache-mode.h"
#include "ioh-copy.h"
#include "ioh-error.h"

static void
test_to_string(void)
{
    g_assert_cmpstr(ioh_cache_mode_to_string(IOH_CACHE_BUFFERED), ==, "buffered");
    g_assert_cmpstr(ioh_cache_mode_to_string(IOH_CACHE_DIRECT), ==, "direct");
    g_assert_cmpstr(ioh_cache_mode_to_string(IOH_CACHE_FADVISE), ==, "fadvise");
    g_assert_cmpstr(ioh_cache_mode_to_string(IOH_CACHE_NBD), ==, "nbd");
    g_assert_cmpstr(ioh_cache_mode_to_string(IOH_CACHE_RBD), ==, "rbd");
    g_assert_null(ioh_cache_mode_to_string((IohCacheMode)IOH_CACHE_MODE_COUNT));
    g_assert_null(ioh_cache_mode_to_string((IohCacheMode)-1));
}

static void
test_round_trip(void)
{
    for (int m = 0; m < IOH_CACHE_MODE_COUNT; m++) {
        g_autoptr(GError) e = NULL;
        IohCacheMode back = (IohCacheMode)-1;

        g_assert_true(ioh_cache_mode_from_string(ioh_cache_mode_to_string(m), &back, &e));
        g_assert_no_error(e);
        g_assert_cmpint(back, ==, m);
    }
}

static void
test_unknown(void)
{
    static const char *const bad[] = { "", "Direct", "direct ", "none", "o_direct", "fadv",
                                       "buffered\n" };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        IohCacheMode m = IOH_CACHE_FADVISE;

        g_assert_false(ioh_cache_mode_from_string(bad[i], &m, &e));
        g_assert_error(e, IOH_ERROR, EINVAL);
        g_assert_cmpint(m, ==, IOH_CACHE_FADVISE);    /* untouched on failure */
    }
}

static void
test_message(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) e2 = NULL;
    IohCacheMode m;

    g_assert_false(ioh_cache_mode_from_string("tur\nbo", &m, &e));
    g_assert_cmpstr(e->message, ==, "cache mode 'tur?bo': not buffered, direct, fadvise, nbd or rbd");
    g_assert_false(ioh_cache_mode_from_string(NULL, &m, &e2));
    g_assert_error(e2, IOH_ERROR, EINVAL);
}

/* The engine has no enum of its own: its options hold the core's, buffered by default
 * (the names it reports are checked in tests/engine). */
G_STATIC_ASSERT(__builtin_types_compatible_p(__typeof__(((IohCopyOptions *)NULL)->mode),
                                             IohCacheMode));

static void
test_engine_agrees(void)
{
    IohCopyOptions opts;

    ioh_copy_options_init(&opts);
    g_assert_cmpint(opts.mode, ==, IOH_CACHE_BUFFERED);
    g_assert_cmpstr(ioh_cache_mode_to_string(opts.mode), ==, "buffered");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cache-mode/to-string", test_to_string);
    g_test_add_func("/cache-mode/round-trip", test_round_trip);
    g_test_add_func("/cache-mode/unknown-names", test_unknown);
    g_test_add_func("/cache-mode/message-one-line", test_message);
    g_test_add_func("/cache-mode/engine-agrees", test_engine_agrees);
    return g_test_run();
}
