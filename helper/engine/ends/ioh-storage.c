/* ioh-storage.c - a storage end (file or block device) before a copy: its cache mode and
 * where the stream starts in it; shared by the file source and the file sink */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <unistd.h>

/* The size of a file or block device, or -1. */
static gint64
storage_size(const IohEnd *end)
{
    struct stat st;
    guint64 size;

    if (end->kind == IOH_KIND_BLOCK) {
        return ioctl(end->fd, BLKGETSIZE64, &size) == 0 ? (gint64)size : -1;
    }
    return fstat(end->fd, &st) == 0 ? (gint64)st.st_size : -1;
}

/* A source read from opts->offset: past its end there is no stream, only a wrong empty
 * success (unless the caller asked for nothing, --length=0). */
static gboolean
check_source_offset(IohCopy *c, IohEnd *end, GError **error)
{
    gint64 size = storage_size(end);

    if (end != c->src || !c->opts->has_offset || size < 0 ||
        c->opts->offset <= (guint64)size || (c->opts->has_length && c->opts->length == 0)) {
        return TRUE;
    }
    return ioh_error_set(error, EINVAL, "read", end->name, "offset %" G_GUINT64_FORMAT
                         " is past its end (%" G_GINT64_FORMAT " bytes)", c->opts->offset,
                         size);
}

/* O_DIRECT needs the stream to start on an aligned offset. */
static gboolean
check_aligned(IohEnd *end, gboolean append, off_t pos, GError **error)
{
    if (!end->direct || (guint64)pos % end->align == 0) {
        return TRUE;
    }
    if (append) {
        return ioh_error_set(error, EINVAL, "write", end->name, "open with O_APPEND, so "
                             "writes land at its end, offset %lld, which is not a multiple "
                             "of %u, as O_DIRECT needs", (long long)pos, end->align);
    }
    return ioh_error_set(error, EINVAL, "seek", end->name, "offset %lld is not a multiple "
                         "of %u, as O_DIRECT needs", (long long)pos, end->align);
}

/* Where the stream starts in a storage end: --offset, else the fd's own position (libvirt
 * writes its header first and hands us the fd positioned after it); for an O_APPEND
 * destination its end, where every write lands. */
static gboolean
position_storage(IohCopy *c, IohEnd *end, guint64 *ret_start, GError **error)
{
    gboolean append = end == c->dst && (fcntl(end->fd, F_GETFL) & O_APPEND);
    off_t pos;

    if (append && c->opts->has_offset) {
        return ioh_error_set(error, EINVAL, "seek", end->name, "open with O_APPEND, so an "
                             "offset cannot apply: every write lands at its end");
    }
    if (!check_source_offset(c, end, error)) {
        return FALSE;
    }
    if (append) {
        pos = lseek(end->fd, 0, SEEK_END);
    } else if (c->opts->has_offset) {
        pos = lseek(end->fd, (off_t)c->opts->offset, SEEK_SET);
    } else {
        pos = lseek(end->fd, 0, SEEK_CUR);
    }
    if (pos < 0) {
        return ioh_error_set_errno(error, errno, "seek", end->name);
    }
    if (!check_aligned(end, append, pos, error)) {
        return FALSE;
    }
    *ret_start = (guint64)pos;
    return TRUE;
}

gboolean
ioh_storage_prepare(IohCopy *c, IohEnd *end, guint64 *ret_start, GError **error)
{
    if (c->opts->mode == IOH_CACHE_DIRECT && !end->direct &&
        !ioh_end_set_direct(end, TRUE, error)) {
        return FALSE;
    }
    if (!position_storage(c, end, ret_start, error)) {
        return FALSE;
    }
    g_debug("%s: %s, O_DIRECT %s, alignment %u, stream starts at %" G_GUINT64_FORMAT,
            end->name, end->kind == IOH_KIND_BLOCK ? "block device" : "regular file",
            end->direct ? "on" : "off", end->align, *ret_start);
    return TRUE;
}
