/* ioh-pipe.c - sizing pipes */
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

guint
ioh_pipe_max_size(void)
{
    g_autofree char *text = NULL;

    if (g_file_get_contents("/proc/sys/fs/pipe-max-size", &text, NULL, NULL)) {
        guint64 v = g_ascii_strtoull(text, NULL, 10);
        if (v >= 4096 && v <= G_MAXINT) {
            return (guint)v;
        }
    }
    return IOH_PIPE_DEFAULT_SIZE;
}

int
ioh_pipe_raise(int fd, guint want)
{
    struct stat st;
    int cur;

    if (fstat(fd, &st) < 0) {
        return -errno;
    }
    if (!S_ISFIFO(st.st_mode)) {
        return -ENOTSUP;
    }
    cur = fcntl(fd, F_GETPIPE_SZ);
    if (cur < 0) {
        return -errno;
    }
    want = MIN(want, ioh_pipe_max_size());
    /* Halve on EPERM (user over pipe-user-pages-soft), but never below what we have. */
    while (want > (guint)cur) {
        int got = fcntl(fd, F_SETPIPE_SZ, (int)want);
        if (got >= 0) {
            return got;
        }
        if (errno != EPERM && errno != EBUSY) {
            return cur;
        }
        want /= 2;
    }
    return cur;
}
