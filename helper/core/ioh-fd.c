/* ioh-fd.c - file descriptor utilities */
#include "ioh-fd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-error.h"

/* Sets "<what> <name>: <cause>", naming an unnamed fd "fd N". */
static gboolean
fd_error(GError **error, int errsv, const char *what, int fd, const char *name)
{
    g_autofree char *fallback = name ? NULL : g_strdup_printf("fd %d", fd);

    return ioh_error_set_errno(error, errsv, what, name ? name : fallback);
}

static gboolean
update_flags(int fd, int get, int set, int flag, gboolean on, GError **error)
{
    int fl = fcntl(fd, get);

    if (fl < 0) {
        return fd_error(error, errno, "fcntl", fd, NULL);
    }
    if (!!(fl & flag) == !!on) {
        return TRUE;
    }
    if (fcntl(fd, set, on ? (fl | flag) : (fl & ~flag)) < 0) {
        return fd_error(error, errno, "fcntl", fd, NULL);
    }
    return TRUE;
}

gboolean
ioh_fd_set_nonblock(int fd, gboolean nonblock, GError **error)
{
    return update_flags(fd, F_GETFL, F_SETFL, O_NONBLOCK, nonblock, error);
}

gboolean
ioh_fd_set_cloexec(int fd, gboolean cloexec, GError **error)
{
    return update_flags(fd, F_GETFD, F_SETFD, FD_CLOEXEC, cloexec, error);
}

/* Milliseconds left until @deadline_us (monotonic), rounded up; -1 without a deadline. */
static int
time_left_ms(gint64 deadline_us)
{
    gint64 left;

    if (deadline_us < 0) {
        return -1;
    }
    left = deadline_us - g_get_monotonic_time();
    return left <= 0 ? 0 : (int)MIN((left + 999) / 1000, G_MAXINT);
}

/* ioh_fd_wait() whose errors say "<what> <name>: ...". */
static int
wait_named(int fd, short events, GCancellable *cancellable, int timeout_ms,
           const char *what, const char *name, GError **error)
{
    struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = -1, .events = POLLIN } };
    gint64 deadline = timeout_ms >= 0 ? g_get_monotonic_time() + (gint64)timeout_ms * 1000
                                      : -1;
    int ret;

    p[1].fd = cancellable ? g_cancellable_get_fd(cancellable) : -1;
    for (;;) {
        int n;

        if (g_cancellable_is_cancelled(cancellable)) {
            fd_error(error, ECANCELED, what, fd, name);
            ret = -1;
            break;
        }
        n = poll(p, p[1].fd >= 0 ? 2 : 1, time_left_ms(deadline));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fd_error(error, errno, what, fd, name);
            ret = -1;
            break;
        }
        if (n == 0 || p[0].revents) {
            ret = p[0].revents;
            break;
        }
        /* only the cancellable's fd: the check above turns it into the error */
    }
    if (p[1].fd >= 0) {
        g_cancellable_release_fd(cancellable);
    }
    return ret;
}

int
ioh_fd_wait(int fd, short events, GCancellable *cancellable, int timeout_ms, GError **error)
{
    return wait_named(fd, events, cancellable, timeout_ms, "poll", NULL, error);
}

gssize
ioh_fd_read_full(int fd, void *buf, gsize len, GCancellable *cancellable, const char *name,
                 GError **error)
{
    gsize have = 0;

    while (have < len) {
        gssize n;

        if (cancellable && wait_named(fd, POLLIN, cancellable, -1, "read", name, error) < 0) {
            return -1;
        }
        n = read(fd, (char *)buf + have, len - have);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_named(fd, POLLIN, cancellable, -1, "read", name, error) < 0) {
                return -1;
            }
            continue;
        }
        if (n < 0) {
            fd_error(error, errno, "read", fd, name);
            return -1;
        }
        if (n == 0) {
            break;
        }
        have += (gsize)n;
    }
    return (gssize)have;
}

gboolean
ioh_fd_write_full(int fd, const void *buf, gsize len, GCancellable *cancellable,
                  const char *name, GError **error)
{
    gsize done = 0;

    while (done < len) {
        gssize n;

        if (cancellable && wait_named(fd, POLLOUT, cancellable, -1, "write", name, error) < 0) {
            return FALSE;
        }
        n = write(fd, (const char *)buf + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_named(fd, POLLOUT, cancellable, -1, "write", name, error) < 0) {
                return FALSE;
            }
            continue;
        }
        if (n < 0) {
            return fd_error(error, errno, "write", fd, name);
        }
        if (n == 0) {
            return fd_error(error, EIO, "write", fd, name);    /* no progress, no errno */
        }
        done += (gsize)n;
    }
    return TRUE;
}

void
ioh_fd_clear(int *fd)
{
    if (fd && *fd >= 0) {
        int errsv = errno;
        close(*fd);
        *fd = -1;
        errno = errsv;
    }
}

const char *
ioh_fd_kind_name(mode_t mode)
{
    static const struct {
        mode_t type;
        const char *name;
    } kinds[] = {
        { S_IFREG, "a regular file" },   { S_IFDIR, "a directory" },
        { S_IFBLK, "a block device" },   { S_IFCHR, "a character device" },
        { S_IFIFO, "a pipe" },           { S_IFSOCK, "a socket" },
        { S_IFLNK, "a symbolic link" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
        if ((mode & S_IFMT) == kinds[i].type) {
            return kinds[i].name;
        }
    }
    return "of an unknown kind";
}
