/* ioh-test-nbdkit.c - a real nbdkit for the tests, on a unix socket in the test's folder */
#include "ioh-test.h"

#include <glib/gstdio.h>
#include <string.h>

/* The daemon writes its pid file after its parent exited, maybe, and not atomically: it
 * may exist empty for a moment (seen once in CI). Waits for a whole line. */
static GPid
read_pid_file(const char *path)
{
    g_autofree char *text = NULL;
    GPid pid;

    for (int i = 0; i < 500; i++) {
        g_clear_pointer(&text, g_free);
        if (g_file_get_contents(path, &text, NULL, NULL) && strchr(text, '\n')) {
            break;
        }
        g_usleep(10000);
    }
    g_assert_nonnull(text);
    pid = (GPid)g_ascii_strtoll(text, NULL, 10);
    g_assert_cmpint(pid, >, 1);
    return pid;
}

GPid
ioht_nbdkit_start(const char *dir, const char *sock, const char *const *plugin_args)
{
    g_autofree char *nbdkit = g_find_program_in_path("nbdkit");
    g_autofree char *pidfile = g_build_filename(dir, "nbdkit.pid", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    int status;

    if (!nbdkit) {
        g_test_skip("nbdkit is not installed (Debian package nbdkit)");
        return 0;
    }
    g_ptr_array_add(argv, nbdkit);
    g_ptr_array_add(argv, (gpointer)"--unix");
    g_ptr_array_add(argv, (gpointer)sock);
    g_ptr_array_add(argv, (gpointer)"-P");
    g_ptr_array_add(argv, pidfile);
    for (const char *const *a = plugin_args; *a; a++) {
        g_ptr_array_add(argv, (gpointer)*a);
    }
    g_ptr_array_add(argv, NULL);
    /* an earlier server's pid file in the same folder would be read as this one's (the
     * daemon writes its own after its parent exits): that server then outlived the test */
    g_unlink(pidfile);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                               NULL, NULL, NULL, NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    return read_pid_file(pidfile);
}
