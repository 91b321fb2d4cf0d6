/* test-dio.c - the O_DIRECT alignment rule (helper/core/ioh-dio.c) that the helper and
 * libwrap share: a power of two of at least 4096, and an O_DIRECT write of that size at
 * that offset works where the file system takes O_DIRECT. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "ioh-dio.h"
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

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ioht_dir_add("/dio/align/file", NULL, test_file);
    g_test_add_func("/dio/align/pipe", test_not_storage);
    return g_test_run();
}
