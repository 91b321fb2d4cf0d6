/* test-fd.c - fd utilities (helper/core/ioh-fd) on real pipes, files and devices: flags,
 * full reads and writes through short transfers, EINTR and EAGAIN, waiting with a
 * timeout and with a GCancellable cancelled from another thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "core-util.h"
#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-test.h"

#define MiB (1024 * 1024)

static void
test_nonblock(void)
{
    g_autoptr(GError) e = NULL;
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_true(ioh_fd_set_nonblock(p[0], TRUE, &e));
    g_assert_true(fcntl(p[0], F_GETFL) & O_NONBLOCK);
    g_assert_true(ioh_fd_set_nonblock(p[0], TRUE, &e));    /* already set: no change */
    g_assert_true(ioh_fd_set_nonblock(p[0], FALSE, &e));
    g_assert_false(fcntl(p[0], F_GETFL) & O_NONBLOCK);
    g_assert_false(fcntl(p[1], F_GETFL) & O_NONBLOCK);     /* the other end untouched */
    g_assert_no_error(e);
    close(p[0]);
    close(p[1]);
}

static void
test_cloexec(void)
{
    g_autoptr(GError) e = NULL;
    int p[2];

    g_assert_cmpint(pipe(p), ==, 0);
    g_assert_false(fcntl(p[1], F_GETFD) & FD_CLOEXEC);
    g_assert_true(ioh_fd_set_cloexec(p[1], TRUE, &e));
    g_assert_true(fcntl(p[1], F_GETFD) & FD_CLOEXEC);
    g_assert_true(ioh_fd_set_cloexec(p[1], FALSE, &e));
    g_assert_false(fcntl(p[1], F_GETFD) & FD_CLOEXEC);
    g_assert_no_error(e);
    close(p[0]);
    close(p[1]);
}

static void
test_flags_bad_fd(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) e2 = NULL;

    g_assert_false(ioh_fd_set_nonblock(987654, TRUE, &e));
    g_assert_error(e, IOH_ERROR, EBADF);
    g_assert_cmpstr(e->message, ==, "fcntl fd 987654: Bad file descriptor");
    g_assert_false(ioh_fd_set_cloexec(-1, TRUE, &e2));
    g_assert_error(e2, IOH_ERROR, EBADF);
}

static void
test_wait_ready_and_hup(void)
{
    g_autoptr(GError) e = NULL;
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(ioh_fd_wait(p[1], POLLOUT, NULL, 0, &e), ==, POLLOUT);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, NULL, 0, &e), ==, 0);
    g_assert_cmpint(write(p[1], "x", 1), ==, 1);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, NULL, -1, &e), ==, POLLIN);
    close(p[1]);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, NULL, -1, &e) & POLLHUP, ==, POLLHUP);
    g_assert_no_error(e);
    close(p[0]);
}

static void
test_wait_timeout(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GCancellable) c = g_cancellable_new();
    gint64 t0 = g_get_monotonic_time();
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, c, 80, &e), ==, 0);
    g_assert_no_error(e);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 80000);
    close(p[0]);
    close(p[1]);
}

static void
test_wait_cancel(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GCancellable) c = g_cancellable_new();
    GThread *t = coret_cancel_later(c, 50);
    gint64 t0 = g_get_monotonic_time();
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, c, 10000, &e), ==, -1);
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_true(ioh_error_is_cancelled(e));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    g_thread_join(t);
    g_clear_error(&e);
    /* already cancelled: fails before waiting, even on a ready fd */
    g_assert_cmpint(ioh_fd_wait(p[1], POLLOUT, c, -1, &e), ==, -1);
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    close(p[0]);
    close(p[1]);
}

/* ---- signals: EINTR in poll, read and write ------------------------------------- */

static void
on_signal(int sig)
{
    (void)sig;
}

typedef struct {
    pthread_t target;
    gint stop;
} Pester;

static gpointer
pester_thread(gpointer data)
{
    Pester *p = data;

    while (!g_atomic_int_get(&p->stop)) {
        pthread_kill(p->target, SIGUSR1);
        g_usleep(2000);
    }
    return NULL;
}

/* Sends SIGUSR1 (a handler without SA_RESTART: every blocking call gets EINTR) to the
 * calling thread every 2 ms until pester_stop(). */
static GThread *
pester_start(Pester *p)
{
    struct sigaction sa = { .sa_handler = on_signal };

    sigemptyset(&sa.sa_mask);
    g_assert_cmpint(sigaction(SIGUSR1, &sa, NULL), ==, 0);
    p->target = pthread_self();
    p->stop = 0;
    return g_thread_new("pester", pester_thread, p);
}

static void
pester_stop(Pester *p, GThread *t)
{
    g_atomic_int_set(&p->stop, 1);
    g_thread_join(t);
}

static void
test_wait_eintr(void)
{
    g_autoptr(GError) e = NULL;
    Pester pe;
    GThread *t = pester_start(&pe);
    gint64 t0 = g_get_monotonic_time();
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(ioh_fd_wait(p[0], POLLIN, NULL, 150, &e), ==, 0);
    g_assert_no_error(e);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 150000);
    pester_stop(&pe, t);
    close(p[0]);
    close(p[1]);
}

/* ---- full reads ----------------------------------------------------------------- */

static void
check_read_full(gboolean nonblock, gboolean with_cancellable, gboolean signals)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GCancellable) c = with_cancellable ? g_cancellable_new() : NULL;
    gsize len = 3 * MiB + 17;
    g_autofree guint8 *data = coret_random(len, 7);
    g_autofree guint8 *got = g_malloc(len + 10);
    Pester pe;
    GThread *pt = signals ? pester_start(&pe) : NULL;
    IohtPump *feed;
    gssize n;
    int p[2];

    coret_pipe(p, nonblock, 0);
    feed = coret_feed_start(p[1], data, len, 20);
    n = ioh_fd_read_full(p[0], got, len + 10, c, "the pipe", &e);
    g_assert_no_error(e);
    g_assert_cmpint(n, ==, (gssize)len);    /* all of it, and fewer only at end of file */
    g_assert_cmpmem(got, len, data, len);
    ioht_pump_join(feed, NULL);
    if (pt) {
        pester_stop(&pe, pt);
    }
    close(p[0]);
}

static void
test_read_full_blocking(void)
{
    check_read_full(FALSE, FALSE, FALSE);
}

static void
test_read_full_nonblock(void)
{
    check_read_full(TRUE, FALSE, FALSE);
}

static void
test_read_full_cancellable(void)
{
    check_read_full(FALSE, TRUE, FALSE);
}

static void
test_read_full_eintr(void)
{
    check_read_full(FALSE, FALSE, TRUE);
}

static void
test_read_full_eof_and_exact(void)
{
    g_autoptr(GError) e = NULL;
    char buf[64];
    int p[2];

    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(write(p[1], "0123456789", 10), ==, 10);
    g_assert_cmpint(ioh_fd_read_full(p[0], buf, 4, NULL, NULL, &e), ==, 4);
    g_assert_cmpmem(buf, 4, "0123", 4);
    close(p[1]);
    g_assert_cmpint(ioh_fd_read_full(p[0], buf, sizeof(buf), NULL, NULL, &e), ==, 6);
    g_assert_cmpmem(buf, 6, "456789", 6);
    g_assert_cmpint(ioh_fd_read_full(p[0], buf, sizeof(buf), NULL, NULL, &e), ==, 0);
    g_assert_cmpint(ioh_fd_read_full(p[0], buf, 0, NULL, NULL, &e), ==, 0);
    g_assert_no_error(e);
    close(p[0]);
}

static void
test_read_full_cancel(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GCancellable) c = g_cancellable_new();
    GThread *t = coret_cancel_later(c, 50);
    char buf[16];
    int p[2];

    coret_pipe(p, FALSE, 0);    /* blocking, and the writer stays silent */
    g_assert_cmpint(write(p[1], "abc", 3), ==, 3);
    g_assert_cmpint(ioh_fd_read_full(p[0], buf, sizeof(buf), c, "stdin", &e), ==, -1);
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpstr(e->message, ==, "read stdin: Operation canceled");
    g_thread_join(t);
    close(p[0]);
    close(p[1]);
}

static void
test_read_full_error_names_file(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *path = ioht_dir_path(fx, "wronly");
    g_autofree char *want = NULL;
    g_autofree char *want_fd = NULL;
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) e2 = NULL;
    char buf[8];
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ioh_fd_read_full(fd, buf, sizeof(buf), NULL, path, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EBADF);
    want = g_strdup_printf("read %s: Bad file descriptor", path);
    g_assert_cmpstr(e->message, ==, want);
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "read");
    g_assert_cmpstr(ioh_error_get_path(e), ==, path);
    g_assert_cmpint(ioh_fd_read_full(fd, buf, sizeof(buf), NULL, NULL, &e2), ==, -1);
    want_fd = g_strdup_printf("read fd %d: Bad file descriptor", fd);
    g_assert_cmpstr(e2->message, ==, want_fd);
    close(fd);
}

/* ---- full writes ---------------------------------------------------------------- */

static void
check_write_full(gboolean nonblock, gboolean signals)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GByteArray) got = NULL;
    gsize len = 4 * MiB + 3;
    g_autofree guint8 *data = coret_random(len, 11);
    Pester pe;
    GThread *pt;
    CoretDrain *d;
    int p[2];

    coret_pipe(p, nonblock, 65536);
    d = coret_drain_start(p[0], 30);
    pt = signals ? pester_start(&pe) : NULL;
    g_assert_true(ioh_fd_write_full(p[1], data, len, NULL, "the pipe", &e));
    g_assert_no_error(e);
    if (pt) {
        pester_stop(&pe, pt);
    }
    close(p[1]);
    got = coret_drain_join(d);
    g_assert_cmpmem(got->data, got->len, data, len);
}

static void
test_write_full_blocking(void)
{
    check_write_full(FALSE, FALSE);
}

static void
test_write_full_nonblock(void)
{
    check_write_full(TRUE, FALSE);
}

static void
test_write_full_eintr(void)
{
    check_write_full(FALSE, TRUE);
}

static void
test_write_full_epipe(void)
{
    g_autoptr(GError) e = NULL;
    int p[2];

    signal(SIGPIPE, SIG_IGN);
    coret_pipe(p, FALSE, 0);
    close(p[0]);
    g_assert_false(ioh_fd_write_full(p[1], "x", 1, NULL, "stdout", &e));
    g_assert_error(e, IOH_ERROR, EPIPE);
    g_assert_cmpstr(e->message, ==, "write stdout: Broken pipe");
    close(p[1]);
}

static void
test_write_full_enospc(void)
{
    g_autoptr(GError) e = NULL;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

    if (fd < 0) {
        g_test_skip("no /dev/full");
        return;
    }
    g_assert_false(ioh_fd_write_full(fd, "abc", 3, NULL, "/dev/full", &e));
    g_assert_error(e, IOH_ERROR, ENOSPC);
    g_assert_cmpstr(e->message, ==, "write /dev/full: No space left on device");
    close(fd);
}

static void
test_write_full_cancel(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GCancellable) c = g_cancellable_new();
    GThread *t;
    int p[2];

    coret_pipe(p, TRUE, 0);
    coret_fill(p[1]);
    t = coret_cancel_later(c, 50);
    g_assert_false(ioh_fd_write_full(p[1], "more", 4, c, NULL, &e));
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_thread_join(t);
    close(p[0]);
    close(p[1]);
}

static void
test_clear(void)
{
    int p[2];
    int none = -1;

    coret_pipe(p, FALSE, 0);
    errno = EXDEV;
    ioh_fd_clear(&p[0]);
    g_assert_cmpint(p[0], ==, -1);
    g_assert_cmpint(errno, ==, EXDEV);
    ioh_fd_clear(&p[0]);
    ioh_fd_clear(&none);
    ioh_fd_clear(NULL);
    /* the write end sees no reader: the read end was really closed */
    signal(SIGPIPE, SIG_IGN);
    g_assert_cmpint(write(p[1], "x", 1), ==, -1);
    g_assert_cmpint(errno, ==, EPIPE);
    ioh_fd_clear(&p[1]);
}

/* Each kind of file as the kernel reports it for real ones. */
static void
test_kind_name(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *file = ioht_dir_path(fx, "f");
    struct stat st;
    int p[2], s[2];

    g_assert_true(g_file_set_contents(file, "x", 1, NULL));
    g_assert_cmpint(stat(file, &st), ==, 0);
    g_assert_cmpstr(ioh_fd_kind_name(st.st_mode), ==, "a regular file");
    g_assert_cmpint(stat(fx->dir, &st), ==, 0);
    g_assert_cmpstr(ioh_fd_kind_name(st.st_mode), ==, "a directory");
    g_assert_cmpint(stat("/dev/null", &st), ==, 0);
    g_assert_cmpstr(ioh_fd_kind_name(st.st_mode), ==, "a character device");
    coret_pipe(p, FALSE, 0);
    g_assert_cmpint(fstat(p[0], &st), ==, 0);
    g_assert_cmpstr(ioh_fd_kind_name(st.st_mode), ==, "a pipe");
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), ==, 0);
    g_assert_cmpint(fstat(s[0], &st), ==, 0);
    g_assert_cmpstr(ioh_fd_kind_name(st.st_mode), ==, "a socket");
    g_assert_cmpstr(ioh_fd_kind_name(0), ==, "of an unknown kind");
    for (int i = 0; i < 2; i++) {
        close(p[i]);
        close(s[i]);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fd/nonblock/set-and-clear", test_nonblock);
    ioht_dir_add("/fd/kind-name", NULL, test_kind_name);
    g_test_add_func("/fd/cloexec/set-and-clear", test_cloexec);
    g_test_add_func("/fd/flags/bad-fd", test_flags_bad_fd);
    g_test_add_func("/fd/wait/ready-and-hup", test_wait_ready_and_hup);
    g_test_add_func("/fd/wait/timeout", test_wait_timeout);
    g_test_add_func("/fd/wait/cancel-from-thread", test_wait_cancel);
    g_test_add_func("/fd/wait/eintr-keeps-timeout", test_wait_eintr);
    g_test_add_func("/fd/read-full/blocking-short-reads", test_read_full_blocking);
    g_test_add_func("/fd/read-full/nonblock-eagain", test_read_full_nonblock);
    g_test_add_func("/fd/read-full/with-cancellable", test_read_full_cancellable);
    g_test_add_func("/fd/read-full/eintr", test_read_full_eintr);
    g_test_add_func("/fd/read-full/eof-and-exact", test_read_full_eof_and_exact);
    g_test_add_func("/fd/read-full/cancel-silent-pipe", test_read_full_cancel);
    ioht_dir_add("/fd/read-full/error-names-file", NULL, test_read_full_error_names_file);
    g_test_add_func("/fd/write-full/blocking", test_write_full_blocking);
    g_test_add_func("/fd/write-full/nonblock-eagain", test_write_full_nonblock);
    g_test_add_func("/fd/write-full/eintr", test_write_full_eintr);
    g_test_add_func("/fd/write-full/epipe", test_write_full_epipe);
    g_test_add_func("/fd/write-full/enospc-dev-full", test_write_full_enospc);
    g_test_add_func("/fd/write-full/cancel-full-pipe", test_write_full_cancel);
    g_test_add_func("/fd/clear", test_clear);
    return g_test_run();
}
