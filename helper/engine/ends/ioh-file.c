/* ioh-file.c - the two ends of a copy: opening, probing, closing */
#include "config.h"
#include "ioh-file.h"
#include "ioh-dio.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static IohEnd *
end_new(int fd, const char *name, gboolean owned, GError **error)
{
    struct stat st;
    IohEnd *end;
    int fl;

    if (fstat(fd, &st) < 0) {
        ioh_error_set_errno(error, errno, "stat", name);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        ioh_error_set_errno(error, EISDIR, "open", name);
        return NULL;
    }
    fl = fcntl(fd, F_GETFL);
    end = g_new0(IohEnd, 1);
    end->fd = fd;
    end->name = g_strdup(name);
    end->owned = owned;
    if (S_ISFIFO(st.st_mode)) {
        end->kind = IOH_KIND_PIPE;
    } else if (S_ISREG(st.st_mode)) {
        end->kind = IOH_KIND_FILE;
    } else if (S_ISBLK(st.st_mode)) {
        end->kind = IOH_KIND_BLOCK;
    } else {
        end->kind = IOH_KIND_OTHER;
    }
    end->direct = fl >= 0 && (fl & O_DIRECT);
    end->align = ioh_end_is_storage(end) ? ioh_dio_align(fd, end->kind == IOH_KIND_BLOCK)
                                         : IOH_DIO_MIN_ALIGN;
    return end;
}

IohEnd *
ioh_end_open(const char *path, gboolean for_write, guint64 offset, GError **error)
{
    g_autoptr(IohEnd) end = NULL;
    int flags = O_CLOEXEC | (for_write ? O_WRONLY | O_CREAT : O_RDONLY);
    int fd;

    fd = open(path, flags, 0600);
    if (fd < 0) {
        ioh_error_set_errno(error, errno, "open", path);
        return NULL;
    }
    end = end_new(fd, path, TRUE, error);
    if (!end) {
        close(fd);
        return NULL;
    }
    if (end->kind == IOH_KIND_FILE) {
        /* Two helpers on one image would interleave two streams: refuse the second. */
        if (flock(fd, (for_write ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
            if (errno == EWOULDBLOCK) {
                ioh_error_set(error, EBUSY, "lock", path, "in use by another iohelper");
            } else {
                ioh_error_set_errno(error, errno, "lock", path);
            }
            return NULL;
        }
        /* Truncate only once the lock is ours, keep what precedes the stream, and only
         * when the copy is sure to start (ioh_end_apply_truncate). */
        if (for_write) {
            end->truncate_pending = TRUE;
            end->truncate_to = offset;
        }
    }
    return g_steal_pointer(&end);
}

gboolean
ioh_end_apply_truncate(IohEnd *end, GError **error)
{
    if (!end->truncate_pending) {
        return TRUE;
    }
    end->truncate_pending = FALSE;
    if (ftruncate(end->fd, (off_t)end->truncate_to) < 0) {
        return ioh_error_set_errno(error, errno, "truncate", end->name);
    }
    return TRUE;
}

IohEnd *
ioh_end_from_fd(int fd, const char *name, GError **error)
{
    if (fcntl(fd, F_GETFD) < 0) {
        ioh_error_set(error, EBADF, NULL, name, "not an open file descriptor");
        return NULL;
    }
    return end_new(fd, name, FALSE, error);
}

gboolean
ioh_end_is_storage(const IohEnd *end)
{
    return end->kind == IOH_KIND_FILE || end->kind == IOH_KIND_BLOCK;
}

gboolean
ioh_end_set_direct(IohEnd *end, gboolean direct, GError **error)
{
    off_t pos = end->direct && !direct ? lseek(end->fd, 0, SEEK_CUR) : -1;

    if (!ioh_dio_set(end->fd, direct, end->name, error)) {
        return FALSE;
    }
    if (pos >= 0 && !end->direct_cleared) {
        end->direct_cleared = TRUE;
        end->direct_cleared_at = (guint64)pos;
    }
    end->direct = direct;
    return TRUE;
}

gboolean
ioh_fd_access_mode(int fd, int *ret_mode, gboolean *ret_direct, GError **error)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0) {
        int errsv = errno;
        return ioh_error_set(error, errsv, NULL, NULL, "fd %d: %s", fd, g_strerror(errsv));
    }
    *ret_mode = fl & O_ACCMODE;
    if (ret_direct) {
        *ret_direct = (fl & O_DIRECT) != 0;
    }
    return TRUE;
}

gboolean
ioh_end_close(IohEnd *end, GError **error)
{
    int fd = end->fd;

    end->fd = -1;
    end->owned = FALSE;
    if (fd >= 0 && close(fd) < 0 && errno != EINTR) {
        /* EINTR on close leaves the fd closed on Linux; anything else lost data. */
        return ioh_error_set_errno(error, errno, "close", end->name);
    }
    return TRUE;
}

void
ioh_end_free(IohEnd *end)
{
    if (!end) {
        return;
    }
    if (end->priv_free) {
        end->priv_free(end->priv);
    }
    if (end->owned && end->fd >= 0) {
        close(end->fd);
    }
    g_free(end->uri);
    g_free(end->name);
    g_free(end);
}
