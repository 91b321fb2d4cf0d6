/* qg-save-file.c - the image a save makes: "FILE.part-XXXXXX" beside the file it
 * replaces, the header once the stream is durable, then rename(2) and fsync of the
 * folder; removed on any failure, so an old FILE is left as it was */
#include "qg-migrate-private.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "qg-file.h"
#include "qg-text.h"

/* IOH_ERROR with @errsv, the operation and the path as fields, and a message of ours. */
static gboolean G_GNUC_PRINTF(5, 6)
qg_save_file_error(GError **error, int errsv, const char *op, const char *path,
                   const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_propagate_error(error, ioh_error_new_literal(errsv, op, path, msg));
    return FALSE;
}

void
qg_save_file_free(QgSaveFile *file)
{
    if (!file) {
        return;
    }
    ioh_fd_clear(&file->fd);
    ioh_fd_clear(&file->hdr_fd);
    if (file->tmp_path) {
        g_unlink(file->tmp_path);
    }
    g_free(file->tmp_path);
    g_free(file->target);
    g_free(file->path);
    g_free(file);
}

/* Opens the header's own fd and checks @cache on the new file. */
static gboolean
qg_save_file_prepare(QgSaveFile *file, IohCacheMode cache, GError **error)
{
    g_autoptr(GError) local = NULL;

    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", file->fd);

    /* the file mkstemp made, never its name again: whoever can write the folder may
     * rename something else over it (qg_save_file_commit() then tells) */
    file->hdr_fd = open(self, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (file->hdr_fd < 0) {
        return qg_save_file_error(error, errno, "open", file->tmp_path,
                                  "cannot open the image %s: %s", file->tmp_path,
                                  g_strerror(errno));
    }
    if (cache == IOH_CACHE_DIRECT &&
        !qg_file_probe_direct(self, O_WRONLY, &local)) {
        return qg_save_file_error(error, ioh_error_get_errno(local), "open", file->tmp_path,
                                  "cannot save to %s bypassing the cache with O_DIRECT: %s",
                                  file->path, local->message);
    }
    return qg_image_write_placeholder(file->hdr_fd, file->path, error);
}

QgSaveFile *
qg_save_file_new(const char *path, const char *target, IohCacheMode cache,
                 GError **error)
{
    g_autoptr(QgSaveFile) file = g_new0(QgSaveFile, 1);

    file->fd = file->hdr_fd = -1;
    file->path = g_strdup(path);
    file->target = g_strdup(target);
    file->tmp_path = g_strdup_printf("%s.part-XXXXXX", file->target);
    file->fd = g_mkstemp_full(file->tmp_path, O_WRONLY | O_CLOEXEC, 0600);
    if (file->fd < 0) {
        qg_save_file_error(error, errno, "create", file->tmp_path,
                           "cannot create the image %s: %s", file->tmp_path,
                           g_strerror(errno));
        g_clear_pointer(&file->tmp_path, g_free);   /* nothing to remove */
        return NULL;
    }
    if (!qg_save_file_prepare(file, cache, error)) {
        return NULL;
    }
    if (!g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN)) {
        g_autofree char *line = qg_text_one_line(file->tmp_path);
        g_debug("save: writing %s, renamed over its target once durable", line);
    }
    return g_steal_pointer(&file);
}

/* rename(2), then fsync the directory so the new name is durable too. */
static gboolean
qg_save_file_rename(const char *from, const char *to, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(to);
    int dfd;

    if (rename(from, to) < 0) {
        return qg_save_file_error(error, errno, "rename", from, "cannot rename %s to %s: %s",
                                  from, to, g_strerror(errno));
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0) {
        int e = errno;
        ioh_fd_clear(&dfd);
        return qg_save_file_error(error, e, "fsync", dir, "cannot sync the folder %s: %s",
                                  dir, g_strerror(e));
    }
    close(dfd);
    return TRUE;
}

/* FILE is the file the save wrote: not a link or file that another user who can write
 * the folder renamed over the .part while QEMU streamed (the rename moved that one: a
 * success would name an image that holds none of the stream). */
static gboolean
qg_save_file_check_renamed(QgSaveFile *file, GError **error)
{
    struct stat ours, named;

    if (fstat(file->hdr_fd, &ours) == 0 && lstat(file->target, &named) == 0 &&
        ours.st_dev == named.st_dev && ours.st_ino == named.st_ino) {
        return TRUE;
    }
    return qg_save_file_error(error, EEXIST, "rename", file->path, "cannot save to %s: "
                              "its temporary file was replaced during the save (can another "
                              "user write the folder?): %s holds none of the stream",
                              file->path, file->path);
}

gboolean
qg_save_file_commit(QgSaveFile *file, const QgImageInfo *info, GError **error)
{
    if (!qg_image_write_header(file->hdr_fd, file->path, info, error) ||
        !qg_save_file_rename(file->tmp_path, file->target, error)) {
        return FALSE;
    }
    g_clear_pointer(&file->tmp_path, g_free);   /* renamed: nothing to remove any more */
    return qg_save_file_check_renamed(file, error);
}
