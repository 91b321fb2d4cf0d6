/* test-workdir.c - ioht_workdir()'s folder goes with its test, pass or fail: a test that
 * aborts (a failed assertion) or exits without ioht_workdir_remove() leaves nothing in
 * $IOH_TEST_DIR. The child is this program run again (not a g_test_trap_subprocess(),
 * whose failed assertions _exit() instead of aborting as a test run by meson does). */
#include "ioh-test.h"

#include <signal.h>
#include <sys/wait.h>

#define CHILD_ENV "IOHT_WORKDIR_CHILD"     /* "abort" or "exit": run as the child */
#define REPORT_ENV "IOHT_WORKDIR_REPORT"   /* where the child writes its folder's path */

/* The child: makes the folder and a file in it, reports its path, then ends as asked
 * (returning from main(): an exit without ioht_workdir_remove()). */
static int
child(const char *how)
{
    g_autofree char *dir = ioht_workdir();
    g_autofree char *file = g_build_filename(dir, "left", NULL);

    g_assert_true(g_file_set_contents(file, "x", 1, NULL));
    g_assert_true(g_file_set_contents(g_getenv(REPORT_ENV), dir, -1, NULL));
    if (g_str_equal(how, "abort")) {
        g_assert_cmpint(1, ==, 2);    /* a failed assertion: abort() */
    }
    return 0;
}

static void
test_gone(gconstpointer data)
{
    g_autofree char *mine = ioht_workdir();
    g_autofree char *report = g_build_filename(mine, "report", NULL);
    g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
    g_auto(GStrv) env = g_get_environ();
    const char *argv[] = { self, NULL };
    g_autofree char *dir = NULL;
    int status = -1;

    env = g_environ_setenv(env, CHILD_ENV, data, TRUE);
    env = g_environ_setenv(env, REPORT_ENV, report, TRUE);
    env = g_environ_unsetenv(env, "IOH_TEST_KEEP");
    g_assert_true(g_spawn_sync(NULL, (char **)argv, env, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                               NULL, NULL, NULL, &status, NULL));
    if (g_str_equal(data, "abort")) {
        g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    } else {
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    g_assert_true(g_file_get_contents(report, &dir, NULL, NULL));
    g_assert_true(g_path_is_absolute(dir));
    g_test_message("the child's folder: %s", dir);
    g_assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
    ioht_workdir_remove(mine);
}

int
main(int argc, char **argv)
{
    const char *how = g_getenv(CHILD_ENV);

    g_test_init(&argc, &argv, NULL);
    if (how) {
        return child(how);
    }
    g_test_add_data_func("/workdir/removed-after-abort", "abort", test_gone);
    g_test_add_data_func("/workdir/removed-after-exit", "exit", test_gone);
    return g_test_run();
}
