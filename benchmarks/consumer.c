/* consumer.c - the QEMU side of a restore, for the benchmarks
 *
 *   consumer [SIZE]             read stdin (a pipe) with read() of 1 MiB until EOF and
 *                               print the byte count; with SIZE, fail unless exactly SIZE came
 *   consumer FILE MODE          read FILE itself in MODE buffered|direct|fadvise: the floor
 *
 * The pipe is raised to 1 MiB like QEMU's -incoming side. Only libc and GLib.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1024 * 1024)

int
main(int argc, char **argv)
{
    guint64 total = 0, want = 0;
    gboolean check = FALSE;
    const char *mode = NULL;
    int fd = STDIN_FILENO;
    char *buf;

    if (argc > 3) {
        fprintf(stderr, "usage: consumer [SIZE] | consumer FILE buffered|direct|fadvise\n");
        return 2;
    }
    if (argc == 2) {
        want = g_ascii_strtoull(argv[1], NULL, 10);
        check = TRUE;
    }
    if (posix_memalign((void **)&buf, 4096, CHUNK) != 0) {
        return 1;
    }
    if (argc == 3) {
        mode = argv[2];
        fd = open(argv[1], O_RDONLY | O_CLOEXEC | (strcmp(mode, "direct") == 0 ? O_DIRECT : 0));
        if (fd < 0) {
            fprintf(stderr, "consumer: open %s: %s\n", argv[1], strerror(errno));
            return 1;
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    } else {
        fcntl(fd, F_SETPIPE_SZ, CHUNK);
    }
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EINVAL && mode && strcmp(mode, "direct") == 0) {
            /* the unaligned tail of the file */
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT);
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "consumer: read: %s\n", strerror(errno));
            return 1;
        }
        if (n == 0) {
            break;
        }
        if (mode && strcmp(mode, "fadvise") == 0 && total / (8 << 20) != (total + n) / (8 << 20)) {
            posix_fadvise(fd, 0, (off_t)(total + n), POSIX_FADV_DONTNEED);
        }
        total += (guint64)n;
    }
    printf("%" G_GUINT64_FORMAT "\n", total);
    if (check && total != want) {
        fprintf(stderr, "consumer: got %" G_GUINT64_FORMAT " bytes, expected %" G_GUINT64_FORMAT "\n",
                total, want);
        return 1;
    }
    return 0;
}
