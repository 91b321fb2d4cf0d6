/* producer.c - the QEMU side of a save, for the benchmarks
 *
 *   producer SIZE                       write SIZE bytes of random data to stdout with
 *                                       write() of 1 MiB (what QEMU's migration does)
 *   producer SIZE FILE MODE             write them to FILE itself, in MODE buffered|direct|
 *                                       fadvise, then fdatasync: the floor a helper can cost
 *
 * SIZE takes K, M, G suffixes. Only libc and GLib (for size parsing) are used. The data are
 * a 16 MiB pool of xorshift output; each 1 MiB chunk starts at a different offset of the pool
 * and carries its index, so no two chunks of a stream are equal.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1024 * 1024)
#define POOL (16 * 1024 * 1024)
#define WINDOW (8 * 1024 * 1024)

static guint64
parse_size(const char *s)
{
    char *end = NULL;
    guint64 v = g_ascii_strtoull(s, &end, 10);

    switch (end && *end ? g_ascii_toupper(*end) : 0) {
    case 'K': v <<= 10; break;
    case 'M': v <<= 20; break;
    case 'G': v <<= 30; break;
    case 'T': v <<= 40; break;
    default: break;
    }
    return v;
}

static int
write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    guint64 size, done = 0, started = 0, dropped = 0;
    const char *mode = "pipe";
    char *pool, *chunk;
    guint64 x = 0x9e3779b97f4a7c15ULL;
    int fd = STDOUT_FILENO;

    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: producer SIZE [FILE buffered|direct|fadvise]\n");
        return 2;
    }
    size = parse_size(argv[1]);
    if (posix_memalign((void **)&pool, 4096, POOL + CHUNK) != 0 ||
        posix_memalign((void **)&chunk, 4096, CHUNK) != 0) {
        return 1;
    }
    for (size_t i = 0; i < (POOL + CHUNK) / 8; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(pool + i * 8, &x, 8);
    }
    if (argc == 4) {
        int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
        mode = argv[3];
        if (strcmp(mode, "direct") == 0) {
            flags |= O_DIRECT;
        } else if (strcmp(mode, "buffered") != 0 && strcmp(mode, "fadvise") != 0) {
            fprintf(stderr, "producer: unknown mode %s\n", mode);
            return 2;
        }
        fd = open(argv[2], flags, 0600);
        if (fd < 0) {
            fprintf(stderr, "producer: open %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
    }
    for (guint64 i = 0; done < size; i++) {
        size_t len = (size_t)MIN((guint64)CHUNK, size - done);
        /* A fresh chunk costs one memcpy, as QEMU's copy of guest RAM into its buffer. */
        memcpy(chunk, pool + (i * 4096 * 7) % POOL, CHUNK);
        memcpy(chunk, &i, sizeof(i));
        if (len % 4096 != 0 && strcmp(mode, "direct") == 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT);
        }
        if (write_all(fd, chunk, len) < 0) {
            fprintf(stderr, "producer: write: %s\n", strerror(errno));
            return 1;
        }
        done += len;
        if (strcmp(mode, "fadvise") == 0) {
            /* The same write-behind as iohelper --fadvise: start each 8 MiB window, wait for
             * and drop the one before. */
            while (done - started >= WINDOW) {
                sync_file_range(fd, (off_t)started, WINDOW, SYNC_FILE_RANGE_WRITE);
                started += WINDOW;
                if (started - dropped > WINDOW) {
                    guint64 dl = started - WINDOW - dropped;
                    sync_file_range(fd, (off_t)dropped, (off_t)dl,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                    SYNC_FILE_RANGE_WAIT_AFTER);
                    posix_fadvise(fd, (off_t)dropped, (off_t)dl, POSIX_FADV_DONTNEED);
                    dropped += dl;
                }
            }
        }
    }
    if (argc == 4) {
        if (fdatasync(fd) < 0) {
            fprintf(stderr, "producer: fdatasync: %s\n", strerror(errno));
            return 1;
        }
        if (strcmp(mode, "fadvise") == 0) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        close(fd);
    }
    return 0;
}
