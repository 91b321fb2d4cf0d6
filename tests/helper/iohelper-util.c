/* iohelper-util.c - what the test-iohelper-* programs share: the work directory, a producer
 * and a consumer on real pipes around the helper as QEMU would be, scratch file systems,
 * the skips. Each program is the iohelper binary end to end, the libvirt form side by side
 * with the stock libvirt_iohelper, and every error a user can hit.
 */
#include "iohelper-util.h"

char *workdir;
gboolean have_direct;

void
iohelper_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);
}

int
iohelper_test_run(void)
{
    return ioht_run_tests(&workdir);
}

char **
helper_argv(const char *prog, const char *const *opts, const char *a, const char *b)
{
    GPtrArray *v = g_ptr_array_new();

    g_ptr_array_add(v, g_strdup(prog));
    for (; opts && *opts; opts++) {
        if (**opts) {    /* "" stands for "no option", e.g. the buffered mode */
            g_ptr_array_add(v, g_strdup(*opts));
        }
    }
    g_ptr_array_add(v, g_strdup(a));
    g_ptr_array_add(v, g_strdup(b));
    g_ptr_array_add(v, NULL);
    return (char **)g_ptr_array_free(v, FALSE);
}

int
run_fed(char **argv, const char *src, int out_fd, char **ret_err)
{
    IohtPumpOpts o = { .path = src };
    IohtPump *feed;
    int p[2];
    int status;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    feed = ioht_feed_start(p[1], &o);
    status = ioht_run(argv, p[0], out_fd, ret_err);
    close(p[0]);
    ioht_pump_join(feed, NULL);
    return ioht_exit_code(status);
}

int
run_drained(char **argv, int in_fd, const char *dst, char **ret_err)
{
    IohtPumpOpts o = { .path = dst };
    IohtPump *drain;
    int p[2];
    int status;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    drain = ioht_drain_start(p[0], &o);
    status = ioht_run(argv, in_fd, p[1], ret_err);
    close(p[1]);
    ioht_pump_join(drain, NULL);
    return ioht_exit_code(status);
}

GPid
spawn_helper(char **argv, int fd0, int fd2)
{
    IohtSpawn s = { .argv = (const char *const *)argv, .in_fd = fd0, .out_fd = -1,
                    .err_fd = fd2 >= 0 ? fd2 : STDERR_FILENO };

    return ioht_spawn(&s).pid;
}

char *
wpath(const char *name)
{
    return g_build_filename(workdir, name, NULL);
}

guint64
file_size(const char *path)
{
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    return (guint64)st.st_size;
}

gboolean
skip_unless_direct(void)
{
    if (!have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return TRUE;
    }
    return FALSE;
}

gboolean
skip_unless_root(void)
{
    if (geteuid() != 0) {
        g_test_skip("needs root (mount, loop devices)");
        return TRUE;
    }
    return FALSE;
}

void
assert_one_line(const char *err, const char *needle)
{
    g_assert_nonnull(err);
    g_assert_true(g_str_has_prefix(err, "iohelper: "));
    g_assert_nonnull(strstr(err, needle));
    g_assert_nonnull(strchr(err, '\n'));
    g_assert_cmpint(strchr(err, '\n') - err, ==, (int)strlen(err) - 1);
}

char *
mount_scratch(const char *type, const char *opts)
{
    g_autofree char *dir = g_strdup_printf("%s/mnt-%s", workdir, type);

    if (skip_unless_root()) {
        return NULL;
    }
    g_mkdir_with_parents(dir, 0755);
    if (mount(type, dir, type, 0, opts) < 0) {
        g_autofree char *why = g_strdup_printf("cannot mount %s: %s", type, g_strerror(errno));
        g_test_skip(why);
        g_rmdir(dir);
        return NULL;
    }
    return g_steal_pointer(&dir);
}

void
unmount_scratch(const char *dir)
{
    umount2(dir, MNT_DETACH);
    g_rmdir(dir);
}
