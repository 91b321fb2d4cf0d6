/* ioh-pipe.c - sizing pipes */
#include "ioh-pipe.h"

#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
            break;
        }
        want /= 2;
    }
    return cur;
}

gboolean
ioh_pipe_open(int ret_fds[2], int flags, guint size, GError **error)
{
    if (flags & ~O_NONBLOCK) {
        return ioh_error_set(error, EINVAL, "create pipe", NULL, "flags 0x%x not supported",
                             (guint)flags);
    }
    if (pipe2(ret_fds, O_CLOEXEC | flags) < 0) {
        return ioh_error_set_errno(error, errno, "create pipe", NULL);
    }
    if (size > 0) {
        ioh_pipe_raise(ret_fds[1], size);
    }
    return TRUE;
}
