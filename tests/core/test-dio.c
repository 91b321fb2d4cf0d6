/* test-dio.c - the O_DIRECT alignment rule (helper/core/ioh-dio.c) that the helper and
 * libwrap share: a power of two of at least 4096, and an O_DIRECT write of that size at
 * that offset works where the file system takes O_DIRECT. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "ioh-dio.h"
#include "ioh-error.h"
#include "ioh-test.h"

static void
test_file(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *path = ioht_dir_path(fx, "aligned");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    void *buf = NULL;
    guint align;

    g_assert_cmpint(fd, >=, 0);
    align = ioh_dio_align(fd, FALSE);
    g_test_message("%s: O_DIRECT alignment %u", path, align);
    g_assert_cmpuint(align, >=, IOH_DIO_MIN_ALIGN);
    g_assert_cmpuint(align & (align - 1), ==, 0);
    if (ioht_dir_supports_direct(fx->dir)) {
        g_assert_cmpint(fcntl(fd, F_SETFL, O_DIRECT), ==, 0);
        g_assert_cmpint(posix_memalign(&buf, align, align), ==, 0);
        memset(buf, 7, align);
        g_assert_cmpint(pwrite(fd, buf, align, (off_t)align), ==, (gssize)align);
        free(buf);
    }
    close(fd);
}

/* A pipe is neither a file nor a device: the floor. */
static void
test_not_storage(void)
{
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_cmpuint(ioh_dio_align(p[0], FALSE), >=, IOH_DIO_MIN_ALIGN);
    g_assert_cmpuint(ioh_dio_align(p[0], TRUE), ==, IOH_DIO_MIN_ALIGN);
    close(p[0]);
    close(p[1]);
}

/* A file system that takes O_DIRECT: the probe says so and leaves the flags as they were;
 * set and clear work. */
static void
test_probe_taken(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *path = ioht_dir_path(fx, "probe");
    g_autoptr(GError) error = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int fl;

    g_assert_cmpint(fd, >=, 0);
    if (!ioht_dir_supports_direct(fx->dir)) {
        close(fd);
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return;
    }
    fl = fcntl(fd, F_GETFL);
    g_assert_cmpint(ioh_dio_probe(fd), ==, 0);
    g_assert_cmpint(fcntl(fd, F_GETFL), ==, fl);
    g_assert_true(ioh_dio_set(fd, TRUE, path, &error));
    g_assert_no_error(error);
    g_assert_true(fcntl(fd, F_GETFL) & O_DIRECT);
    g_assert_cmpint(ioh_dio_probe(fd), ==, 0);
    g_assert_true(ioh_dio_set(fd, FALSE, path, &error));
    g_assert_cmpint(fcntl(fd, F_GETFL), ==, fl);
    close(fd);
}

/* procfs refuses O_DIRECT: EINVAL from the probe, and the one message from the setter,
 * naming the file. */
static void
test_probe_refused(void)
{
    const char *path = "/proc/self/status";
    g_autoptr(GError) error = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int fl = fcntl(fd, F_GETFL);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ioh_dio_probe(fd), ==, EINVAL);
    g_assert_cmpint(fcntl(fd, F_GETFL), ==, fl);
    g_assert_false(ioh_dio_set(fd, TRUE, path, &error));
    g_assert_error(error, IOH_ERROR, EINVAL);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "open");
    g_assert_cmpstr(ioh_error_get_path(error), ==, path);
    g_assert_cmpstr(error->message, ==, "open /proc/self/status: " IOH_DIO_REFUSED
                    " (Invalid argument)");
    close(fd);
}

/* Not an open fd: the errno, and an "fcntl" error. */
static void
test_probe_badfd(void)
{
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(ioh_dio_probe(-1), ==, EBADF);
    g_assert_false(ioh_dio_set(-1, TRUE, "nothing", &error));
    g_assert_error(error, IOH_ERROR, EBADF);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "fcntl");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ioht_dir_add("/dio/align/file", NULL, test_file);
    g_test_add_func("/dio/align/pipe", test_not_storage);
    ioht_dir_add("/dio/probe/taken", NULL, test_probe_taken);
    g_test_add_func("/dio/probe/refused", test_probe_refused);
    g_test_add_func("/dio/probe/badfd", test_probe_badfd);
    return g_test_run();
}
