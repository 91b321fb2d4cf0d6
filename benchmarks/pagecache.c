/* pagecache.c - how much of a file the page cache holds, for the benchmarks
 *
 *   pagecache count FILE     print the bytes of FILE in the page cache (mincore)
 *   pagecache drop FILE      POSIX_FADV_DONTNEED on all of FILE (a cold cache for a restore)
 *   pagecache watch FILE     sample every 100 ms until SIGTERM or SIGINT, then print the
 *                            largest count seen (the peak while a save runs)
 * Only libc and GLib.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* Bytes of @path in the page cache; 0 when it does not exist (yet). */
static guint64
count(const char *path)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *vec;
    guint64 n = 0;
    struct stat st;
    size_t pages;
    void *map;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return 0;
    }
    if (fstat(fd, &st) < 0 || st.st_size == 0) {
        close(fd);
        return 0;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        return 0;
    }
    pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
    vec = g_malloc(pages);
    if (mincore(map, (size_t)st.st_size, vec) == 0) {
        for (size_t i = 0; i < pages; i++) {
            n += vec[i] & 1;
        }
    }
    g_free(vec);
    munmap(map, (size_t)st.st_size);
    return n * (guint64)page;
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pagecache count|drop|watch FILE\n");
        return 2;
    }
    if (strcmp(argv[1], "count") == 0) {
        printf("%" G_GUINT64_FORMAT "\n", count(argv[2]));
    } else if (strcmp(argv[1], "drop") == 0) {
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "pagecache: open %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    } else if (strcmp(argv[1], "watch") == 0) {
        guint64 peak = 0;
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        while (!stop) {
            peak = MAX(peak, count(argv[2]));
            usleep(100000);
        }
        peak = MAX(peak, count(argv[2]));
        printf("%" G_GUINT64_FORMAT "\n", peak);
    } else {
        fprintf(stderr, "pagecache: unknown command %s\n", argv[1]);
        return 2;
    }
    return 0;
}
