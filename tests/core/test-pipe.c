/* test-pipe.c - pipe sizing (helper/core/ioh-pipe) on real pipes: raised towards the
 * request, capped by pipe-max-size, never shrunk; ioh_pipe_open's flags and errors. */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "core-util.h"
#include "ioh-error.h"
#include "ioh-pipe.h"
#include "ioh-test.h"

static guint
proc_max(void)
{
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents("/proc/sys/fs/pipe-max-size", &text, NULL, NULL));
    return (guint)g_ascii_strtoull(text, NULL, 10);
}

static void
test_max_size(void)
{
    g_assert_cmpuint(ioh_pipe_max_size(), ==, proc_max());
}

static void
test_raise_default(void)
{
    int p[2];
    int got;

    coret_pipe(p, FALSE, 0);
    got = ioh_pipe_raise(p[0], IOH_PIPE_DEFAULT_SIZE);
    g_assert_cmpint(got, ==, fcntl(p[0], F_GETPIPE_SZ));
    g_assert_cmpint(got, >=, 65536);    /* never below what the pipe had */
    if (proc_max() >= IOH_PIPE_DEFAULT_SIZE && got < IOH_PIPE_DEFAULT_SIZE) {
        g_test_message("pipe got %d bytes only: pipe-user-pages-soft reached?", got);
    }
    g_assert_cmpint(got, <=, (int)MAX(proc_max(), 65536));
    close(p[0]);
    close(p[1]);
}

static void
test_raise_never_shrinks(void)
{
    int p[2];

    coret_pipe(p, FALSE, 256 * 1024);
    g_assert_cmpint(ioh_pipe_raise(p[1], 64 * 1024), ==, 256 * 1024);
    g_assert_cmpint(fcntl(p[1], F_GETPIPE_SZ), ==, 256 * 1024);
    close(p[0]);
    close(p[1]);
}

static void
test_raise_capped(void)
{
    int p[2];
    int got;

    coret_pipe(p, FALSE, 0);
    got = ioh_pipe_raise(p[1], G_MAXUINT);
    g_assert_cmpint(got, >=, 65536);
    g_assert_cmpint(got, <=, (int)MAX(proc_max(), 65536));
    close(p[0]);
    close(p[1]);
}

static void
test_raise_not_a_pipe(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *path = ioht_dir_path(fx, "file");
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ioh_pipe_raise(fd, 1 << 20), ==, -ENOTSUP);
    g_assert_cmpint(ioh_pipe_raise(987654, 1 << 20), ==, -EBADF);
    close(fd);
}

static void
test_open(void)
{
    g_autoptr(GError) e = NULL;
    int p[2] = { -1, -1 };
    int q[2] = { -1, -1 };

    g_assert_true(ioh_pipe_open(p, 0, IOH_PIPE_DEFAULT_SIZE, &e));
    g_assert_no_error(e);
    for (int i = 0; i < 2; i++) {
        g_assert_true(fcntl(p[i], F_GETFD) & FD_CLOEXEC);
        g_assert_false(fcntl(p[i], F_GETFL) & O_NONBLOCK);
    }
    g_assert_cmpint(fcntl(p[0], F_GETPIPE_SZ), >=, 65536);
    g_assert_cmpint(fcntl(p[0], F_GETPIPE_SZ), ==, ioh_pipe_raise(p[0], IOH_PIPE_DEFAULT_SIZE));

    g_assert_true(ioh_pipe_open(q, O_NONBLOCK, 0, &e));
    for (int i = 0; i < 2; i++) {
        g_assert_true(fcntl(q[i], F_GETFD) & FD_CLOEXEC);
        g_assert_true(fcntl(q[i], F_GETFL) & O_NONBLOCK);
    }
    g_assert_cmpint(fcntl(q[0], F_GETPIPE_SZ), ==, 65536);    /* size 0: left alone */
    for (int i = 0; i < 2; i++) {
        close(p[i]);
        close(q[i]);
    }
}

static void
test_open_bad_flags(void)
{
    g_autoptr(GError) e = NULL;
    int p[2] = { -1, -1 };

    g_assert_false(ioh_pipe_open(p, O_DIRECT, 0, &e));
    g_assert_error(e, IOH_ERROR, EINVAL);
    g_assert_cmpint(p[0], ==, -1);
}

/* Out of fds: the error names the operation. Run in a subprocess, whose limit we lower. */
static void
test_open_emfile(void)
{
    if (g_test_subprocess()) {
        g_autoptr(GError) e = NULL;
        struct rlimit rl = { 0, 0 }, low;
        gboolean ok;
        int p[2];

        g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
        low = rl;
        low.rlim_cur = 0;
        g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &low), ==, 0);
        ok = ioh_pipe_open(p, 0, 0, &e);
        setrlimit(RLIMIT_NOFILE, &rl);    /* back, for what runs at exit (sanitizers) */
        g_assert_false(ok);
        g_assert_error(e, IOH_ERROR, EMFILE);
        g_assert_cmpstr(e->message, ==, "create pipe: Too many open files");
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pipe/max-size", test_max_size);
    g_test_add_func("/pipe/raise/default", test_raise_default);
    g_test_add_func("/pipe/raise/never-shrinks", test_raise_never_shrinks);
    g_test_add_func("/pipe/raise/capped-by-pipe-max-size", test_raise_capped);
    ioht_dir_add("/pipe/raise/not-a-pipe", NULL, test_raise_not_a_pipe);
    g_test_add_func("/pipe/open/cloexec-nonblock-size", test_open);
    g_test_add_func("/pipe/open/bad-flags", test_open_bad_flags);
    g_test_add_func("/pipe/open/emfile", test_open_emfile);
    return g_test_run();
}
