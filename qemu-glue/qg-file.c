/* qg-file.c - the image file, checked before QEMU is touched */
#include "qg-file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gio/gio.h>

#include "ioh-dio.h"
#include "ioh-error.h"
#include "ioh-fd.h"

/* Links followed at most, as the kernel's MAXSYMLINKS. */
#define QG_FILE_MAX_LINKS 40

static void
qg_file_refuse(const char *what, const char *path, const char *target, mode_t mode,
               GError **error)
{
    GIOErrorEnum code = S_ISDIR(mode) ? G_IO_ERROR_IS_DIRECTORY
                                      : G_IO_ERROR_NOT_REGULAR_FILE;

    if (g_strcmp0(path, target) == 0) {
        g_set_error(error, G_IO_ERROR, code, "cannot %s %s: it is %s, not a regular file",
                    what, path, ioh_fd_kind_name(mode));
    } else {
        g_set_error(error, G_IO_ERROR, code,
                    "cannot %s %s: it links to %s, which is %s, not a regular file", what,
                    path, target, ioh_fd_kind_name(mode));
    }
}

/* Where the link at @link points to, taken from the link's folder when relative. */
static char *
qg_file_follow(const char *link, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *dest = g_file_read_link(link, &local);
    g_autofree char *dir = NULL;

    if (!dest) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot read the link %s: %s",
                    link, local->message);
        return NULL;
    }
    if (g_path_is_absolute(dest)) {
        return g_steal_pointer(&dest);
    }
    dir = g_path_get_dirname(link);
    return g_build_filename(dir, dest, NULL);
}

char *
qg_file_save_target(const char *path, GError **error)
{
    g_autofree char *cur = g_strdup(path);

    if (!*path) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_FILENAME,
                            "cannot save to an empty file name");
        return NULL;
    }
    for (int links = 0;; links++) {
        struct stat st;
        char *next;

        if (lstat(cur, &st) < 0) {
            int e = errno;
            if (e == ENOENT) {
                return g_steal_pointer(&cur);   /* a new file; its folder is checked
                                                 * when the save creates it */
            }
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "cannot save to %s: %s",
                        cur, g_strerror(e));
            return NULL;
        }
        if (S_ISREG(st.st_mode)) {
            return g_steal_pointer(&cur);
        }
        if (!S_ISLNK(st.st_mode)) {
            qg_file_refuse("save to", path, cur, st.st_mode, error);
            return NULL;
        }
        if (links == QG_FILE_MAX_LINKS) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TOO_MANY_LINKS,
                        "cannot save to %s: %s", path, g_strerror(ELOOP));
            return NULL;
        }
        next = qg_file_follow(cur, error);
        if (!next) {
            return NULL;
        }
        g_free(cur);
        cur = next;
    }
}

int
qg_file_open_image(const char *path, GError **error)
{
    struct stat st;
    int fd;

    /* O_NONBLOCK: a FIFO would block open() until a writer came. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            qg_file_refuse("restore from", path, path, st.st_mode, error);
        } else {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                        "cannot open the image %s: %s", path, g_strerror(e));
        }
        return -1;
    }
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        qg_file_refuse("restore from", path, path, st.st_mode, error);
        close(fd);
        return -1;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
        int e = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "cannot open the image %s: %s", path, g_strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

gboolean
qg_file_probe_direct(const char *path, int access, GError **error)
{
    int fd = open(path, access | O_CLOEXEC | O_NOCTTY);
    int e = fd < 0 ? errno : ioh_dio_probe(fd);

    if (fd >= 0) {
        close(fd);
    }
    if (e) {
        g_autofree char *msg = e == EINVAL ? g_strdup_printf(IOH_DIO_REFUSED " (%s)",
                                                             g_strerror(e))
                                           : g_strdup(g_strerror(e));

        g_propagate_error(error, ioh_error_new_literal(e, "open", path, msg));
        return FALSE;
    }
    return TRUE;
}
