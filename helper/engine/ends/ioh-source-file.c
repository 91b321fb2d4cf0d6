/* ioh-source-file.c - the file source: reads the stream from a regular file or block
 * device, in the cache mode asked (O_DIRECT with aligned reads; --fadvise drops what was
 * read behind the head, ioh-cache-policy.c) */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

static gboolean
file_accepts(const IohEnd *end)
{
    return ioh_end_is_storage(end);
}

static gboolean
file_prepare(IohCopy *c, GError **error)
{
    if (!ioh_storage_prepare(c, c->src, &c->src_start, error)) {
        return FALSE;
    }
    if (c->opts->mode == IOH_CACHE_FADVISE) {
        posix_fadvise(c->src->fd, (off_t)c->src_start, 0, POSIX_FADV_SEQUENTIAL);
    }
    return TRUE;
}

/* A short read left an O_DIRECT reader unaligned: it reads the rest buffered. */
static gboolean
clear_direct(IohReader *rd, GError **error)
{
    IohEnd *src = rd->c->src;
    int fl;

    if (!rd->own) {
        if (!ioh_end_set_direct(src, FALSE, error)) {
            return FALSE;
        }
    } else {
        fl = fcntl(rd->fd, F_GETFL);
        if (fl < 0 || fcntl(rd->fd, F_SETFL, fl & ~O_DIRECT) < 0) {
            return ioh_error_set_errno(error, errno, "fcntl", src->name);
        }
    }
    rd->direct = FALSE;
    return TRUE;
}

/* Parallel readers each have their own fd: lseek() to the buffer's offset, then plain
 * read()s, so that what tests interpose on read() sees every call. */
static gssize
file_read(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error)
{
    IohEnd *src = rd->c->src;
    gsize have = 0;

    if (pos >= 0 && lseek(rd->fd, (off_t)(rd->c->src_start + (guint64)pos), SEEK_SET) < 0) {
        ioh_error_set_errno(error, errno, "seek", src->name);
        return -1;
    }
    while (have < len) {
        gsize want = len - have;
        gssize n;

        if (rd->direct && (have % src->align) != 0 && !clear_direct(rd, error)) {
            return -1;
        }
        if (rd->direct) {
            want = IOH_ALIGN_UP(want, src->align);
        }
        n = read(rd->fd, buf + have, want);
        ioh_copy_count_read(rd->c);
        if (n < 0) {
            if (!ioh_copy_retry(rd->c, errno, rd->fd, POLLIN, "read", src->name, error)) {
                return -1;
            }
            continue;
        }
        if (n == 0) {
            break;
        }
        have += (gsize)n;
    }
    return (gssize)MIN(have, len);
}

const IohSourceClass ioh_source_file = {
    .name = "file",
    .accepts = file_accepts,
    .prepare = file_prepare,
    .read = file_read,
    .finish = ioh_cache_finish_read,
};
