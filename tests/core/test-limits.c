/* test-limits.c - the shared limits (helper/core/ioh-limits.h): the clamp libwrap applies,
 * and that the real iohelper binary accepts exactly these bounds (a value at a bound is
 * accepted, one past it is a usage error, exit 2). */
#include <glib.h>

#include "ioh-limits.h"
#include "ioh-test.h"

static void
test_status_interval(void)
{
    g_assert_cmpuint(ioh_limits_status_interval(0), ==, IOH_STATUS_INTERVAL_DEFAULT_MS);
    g_assert_cmpuint(IOH_STATUS_INTERVAL_DEFAULT_MS, ==, 1000);
    g_assert_cmpuint(ioh_limits_status_interval(1), ==, 10);
    g_assert_cmpuint(ioh_limits_status_interval(9), ==, 10);
    g_assert_cmpuint(ioh_limits_status_interval(10), ==, 10);
    g_assert_cmpuint(ioh_limits_status_interval(1000), ==, 1000);
    g_assert_cmpuint(ioh_limits_status_interval(3600000), ==, 3600000);
    g_assert_cmpuint(ioh_limits_status_interval(3600001), ==, 3600000);
    g_assert_cmpuint(ioh_limits_status_interval(G_MAXUINT), ==, 3600000);
}

/* Exit code of iohelper OPTION=VALUE with an input that does not exist: 2 when the
 * option is refused, 1 when it was accepted (and the open failed). */
static int
run_option(const char *option, guint64 value)
{
    g_autofree char *arg = g_strdup_printf("%s=%" G_GUINT64_FORMAT, option, value);
    char *argv[] = { (char *)ioht_helper_path(), arg, (char *)"/nonexistent-ioh/in",
                     (char *)"/nonexistent-ioh/out", NULL };

    return ioht_exit_code(ioht_run(argv, -1, -1, NULL));
}

static void
check_bounds(const char *option, guint64 min, guint64 max)
{
    g_test_message("%s: %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT, option, min, max);
    if (min > 0) {
        g_assert_cmpint(run_option(option, min - 1), ==, 2);
    }
    g_assert_cmpint(run_option(option, min), ==, 1);
    g_assert_cmpint(run_option(option, max), ==, 1);
    g_assert_cmpint(run_option(option, max + 1), ==, 2);
}

static void
test_binary_agrees(void)
{
    check_bounds("--status-interval", IOH_STATUS_INTERVAL_MIN_MS, IOH_STATUS_INTERVAL_MAX_MS);
    check_bounds("--pipe-size", IOH_PIPE_SIZE_MIN, IOH_PIPE_SIZE_MAX);
    check_bounds("--buffer-size", IOH_BUFFER_SIZE_MIN, IOH_BUFFER_SIZE_MAX);
    check_bounds("--ring", IOH_RING_MIN, IOH_RING_MAX);
    check_bounds("--fadvise-window", IOH_FADVISE_WINDOW_MIN, IOH_FADVISE_WINDOW_MAX);
    check_bounds("--offset", 0, IOH_OFFSET_MAX);
    check_bounds("--length", 0, IOH_LENGTH_MAX);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/limits/status-interval-clamp", test_status_interval);
    g_test_add_func("/limits/iohelper-binary-agrees", test_binary_agrees);
    return g_test_run();
}
