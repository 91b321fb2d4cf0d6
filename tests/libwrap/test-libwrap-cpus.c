/* test-libwrap-cpus.c - libwrap against the real iohelper binary, through the public API
 * only: ioh_wrap_options_set_cpus() (0.5, issue 30), the helper's --cpus. While a save
 * runs, every task of the helper (its threads, io_uring's workers) may run on the CPUs
 * given and nowhere else (/proc); without the option, wherever this test may. A list that
 * does not parse is refused by the setter, one the helper may not use by the constructor
 * with the helper's own line. The placement tests skip where this test has one CPU.
 */
#include "config.h"

#include "libwrap-util.h"

/* A save of 8 MiB with @cpus (NULL: not set): the helper's tasks on @want meanwhile. */
static void
save_on(IohtDir *fx, const char *cpus, const char *want)
{
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *data = g_malloc0(8 * MIB);
    IohtPumpOpts feed = { .data = data, .len = 8 * MIB };
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(GError) error = NULL;
    gboolean direct = have_direct(fx->dir);    /* then threads or io_uring workers too */
    int fd = open_save(saved);

    g_assert_true(ioh_wrap_options_set_checksum(options, "xxh3", &error));
    g_assert_true(ioh_wrap_options_set_cpus(options, cpus, &error));
    wrap = ioh_wrap_new_with_options(&fd, saved, direct ? IOH_WRAP_DIRECT : IOH_WRAP_POLLABLE,
                                     NULL, options, &error);
    g_assert_no_error(error);
    g_clear_pointer(&options, ioh_wrap_options_free);    /* the wrap holds a copy */
    g_assert_true(ioht_feed(fd, &feed));
    ioht_assert_tasks_on(ioh_wrap_get_pid(wrap), direct ? 2 : 1, want);
    close(fd);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(ioh_wrap_get_stream_bytes(wrap), ==, 8 * MIB);
}

/* With the option (@data set) on the last CPU; without, on every CPU (it can fail). */
static void
test_placed(IohtDir *fx, gconstpointer data)
{
    g_autofree char *last = NULL;
    g_autofree char *all = NULL;

    if (ioht_two_cpus(&last, &all)) {
        save_on(fx, data ? last : NULL, data ? last : all);
    }
}

static void
test_refused(IohtDir *fx, gconstpointer data)
{
    static const char *const bad[] = { "", "x", "0,", "2-1", "1024", " 0", "-1" };
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(GError) error = NULL;
    int fd;

    (void)data;
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(ioh_wrap_options_set_cpus(options, bad[i], &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        ioht_assert_contains(error->message, "ioh_wrap_options_set_cpus: ");
        g_clear_error(&error);
    }
    g_assert_false(ioh_wrap_options_set_cpus(NULL, "0", &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    /* parses, but no process here may use CPU 1023: the helper's line */
    g_assert_true(ioh_wrap_options_set_cpus(options, "1023", &error));
    fd = open_save(saved);
    wrap = ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, NULL, options,
                                     &error);
    g_assert_null(wrap);
    g_assert_nonnull(error);
    ioht_assert_contains(error->message, "--cpus: CPU 1023 is not one this process may use");
    close(fd);
    g_clear_error(&error);
    /* a list that does not parse leaves the one before; without a helper, nothing is
     * placed nor checked (iohwrap.h) */
    g_assert_false(ioh_wrap_options_set_cpus(options, "x", NULL));
    fd = open_save(saved);
    wrap = ioh_wrap_new_with_options(&fd, saved, 0, NULL, options, &error);
    g_assert_no_error(error);
    g_assert_cmpint(ioh_wrap_get_pid(wrap), ==, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    close(fd);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/cpus/honoured", GINT_TO_POINTER(1), test_placed);
    ioht_dir_add("/libwrap/cpus/default", NULL, test_placed);
    ioht_dir_add("/libwrap/cpus/refused", NULL, test_refused);
    return g_test_run();
}
