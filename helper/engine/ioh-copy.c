/* ioh-copy.c - the copy engine: move a stream between a pipe and a file */
#include "ioh-copy.h"
#include "ioh-error.h"
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN_DOWN(x, a) ((x) / (a) * (a))
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

typedef struct {
    IohEnd *src;
    IohEnd *dst;
    const IohCopyOptions *opts;
    IohStats *stats;
    guint64 src_start;       /* file offset where reading began (storage source) */
    guint64 dst_start;       /* file offset where writing began (storage destination) */
    guint64 dropped;         /* fadvise: stream bytes already written back and dropped */
    guint64 started;         /* fadvise save: stream bytes whose write-back was started */
    gint64 last_progress_us;
} IohCopy;

const char *
ioh_mode_name(IohMode mode)
{
    switch (mode) {
    case IOH_MODE_DIRECT:
        return "direct";
    case IOH_MODE_FADVISE:
        return "fadvise";
    case IOH_MODE_BUFFERED:
    default:
        return "buffered";
    }
}

void
ioh_copy_options_init(IohCopyOptions *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->mode = IOH_MODE_BUFFERED;
    opts->buffer_size = IOH_COPY_DEFAULT_BUFFER;
    opts->ring = IOH_COPY_DEFAULT_RING;
    opts->pipe_size = IOH_PIPE_DEFAULT_SIZE;
    opts->fadvise_window = IOH_COPY_DEFAULT_WINDOW;
    opts->progress_interval_us = G_USEC_PER_SEC;
}

/* A non-blocking fd handed to us would return EAGAIN: wait for it instead. */
static void
wait_ready(int fd, short events)
{
    struct pollfd p = { .fd = fd, .events = events };

    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
}

/* Reads until @len bytes or EOF. Returns bytes read, or -1 with @error set. */
static gssize
read_full(IohCopy *c, char *buf, gsize len, GError **error)
{
    IohEnd *src = c->src;
    gsize have = 0;

    while (have < len) {
        gsize want = len - have;
        gssize n;

        if (src->direct && (have % src->align) != 0) {
            /* A short read left us unaligned: finish this stream buffered. */
            if (!ioh_end_set_direct(src, FALSE, error)) {
                return -1;
            }
        }
        if (src->direct) {
            want = ALIGN_UP(want, src->align);
        }
        n = read(src->fd, buf + have, want);
        c->stats->reads++;
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                wait_ready(src->fd, POLLIN);
                continue;
            }
            ioh_error_set_errno(error, errno, "read", src->name);
            return -1;
        }
        if (n == 0) {
            break;
        }
        have += (gsize)n;
    }
    return (gssize)MIN(have, len);
}

static gboolean
write_all(IohCopy *c, const char *buf, gsize len, GError **error)
{
    IohEnd *dst = c->dst;
    const char *start = buf;

    while (len > 0) {
        gsize chunk = len;
        gssize n;

        if (dst->direct) {
            chunk = ALIGN_DOWN(len, dst->align);
            if (chunk == 0 || ((guintptr)buf % dst->align) != 0) {
                /* The unaligned tail of the stream (or the rest after a short write):
                 * O_DIRECT cannot write it, so clear the flag with F_SETFL and write it
                 * through the page cache; the fdatasync that ends every save makes it
                 * durable. Unlike pad-then-ftruncate this works on block devices and
                 * never leaves padding behind for a reader to trip over. */
                if (!ioh_end_set_direct(dst, FALSE, error)) {
                    return FALSE;
                }
                chunk = len;
            }
        }
        n = write(dst->fd, buf, chunk);
        c->stats->writes++;
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                wait_ready(dst->fd, POLLOUT);
                continue;
            }
            if (errno == EINVAL && dst->direct && c->stats->bytes + (guint64)(buf - start) > 0) {
                /* O_DIRECT worked until now: the kernel clipped this write to an
                 * unaligned length (RLIMIT_FSIZE, the file system's size limit). Retry
                 * through the page cache to get the real error (EFBIG) or finish. */
                if (!ioh_end_set_direct(dst, FALSE, error)) {
                    return FALSE;
                }
                continue;
            }
            if (errno == EINVAL && dst->direct) {
                g_set_error(error, IOH_ERROR, EINVAL,
                            "write %s: O_DIRECT refused by its file system (%s)", dst->name,
                            g_strerror(EINVAL));
                return FALSE;
            }
            return ioh_error_set_errno(error, errno, "write", dst->name);
        }
        if (n == 0) {
            return ioh_error_set_errno(error, EIO, "write", dst->name);
        }
        if (dst->direct) {
            /* O_DIRECT data has left the host's cache; fdatasync flushes the device's. */
            c->stats->synced += (guint64)n;
        }
        buf += n;
        len -= (gsize)n;
    }
    return TRUE;
}

/* fadvise save: start write-back of each full window as soon as it is written, and
 * wait for and drop the window before it, so the page cache holds about two windows
 * of the image whatever its size. */
static gboolean
fadvise_after_write(IohCopy *c, gboolean final, GError **error)
{
    guint64 win = c->opts->fadvise_window;
    guint64 done = c->stats->bytes;
    int fd = c->dst->fd;

    while (done - c->started >= win || (final && done > c->started)) {
        guint64 len = MIN(win, done - c->started);
        if (sync_file_range(fd, (off_t)(c->dst_start + c->started), (off_t)len,
                            SYNC_FILE_RANGE_WRITE) < 0) {
            return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
        }
        c->started += len;
        if (final) {
            break;
        }
        if (c->started - c->dropped > win) {
            gint64 t0 = g_get_monotonic_time();
            guint64 dlen = c->started - win - c->dropped;
            off_t off = (off_t)(c->dst_start + c->dropped);
            if (sync_file_range(fd, off, (off_t)dlen,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
                return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
            }
            c->stats->sync_us += g_get_monotonic_time() - t0;
            posix_fadvise(fd, off, (off_t)dlen, POSIX_FADV_DONTNEED);
            c->dropped += dlen;
            c->stats->synced = c->dropped;
        }
    }
    return TRUE;
}

/* fadvise restore: drop what has been read, a window behind the head. */
static void
fadvise_after_read(IohCopy *c, gboolean final)
{
    guint64 win = c->opts->fadvise_window;
    guint64 done = c->stats->bytes;

    if (done - c->dropped >= win || (final && done > c->dropped)) {
        posix_fadvise(c->src->fd, (off_t)(c->src_start + c->dropped),
                      (off_t)(done - c->dropped), POSIX_FADV_DONTNEED);
        c->dropped = done;
    }
}

static void
report_progress(IohCopy *c, gboolean final)
{
    gint64 now;

    if (!c->opts->progress) {
        return;
    }
    now = g_get_monotonic_time();
    if (final || now - c->last_progress_us >= c->opts->progress_interval_us) {
        c->last_progress_us = now;
        c->opts->progress(c->stats, c->opts->progress_data);
    }
}

/* Where the stream starts in a storage end: --offset, else the fd's own position (libvirt
 * writes its header first and hands us the fd positioned after it). */
static gboolean
position_storage(IohCopy *c, IohEnd *end, guint64 *ret_start, GError **error)
{
    off_t pos;

    if (c->opts->has_offset) {
        pos = lseek(end->fd, (off_t)c->opts->offset, SEEK_SET);
    } else {
        pos = lseek(end->fd, 0, SEEK_CUR);
    }
    if (pos < 0) {
        return ioh_error_set_errno(error, errno, "seek", end->name);
    }
    if (end->direct && (guint64)pos % end->align != 0) {
        g_set_error(error, IOH_ERROR, EINVAL,
                    "seek %s: offset %lld is not a multiple of %u, as O_DIRECT needs",
                    end->name, (long long)pos, end->align);
        return FALSE;
    }
    *ret_start = (guint64)pos;
    return TRUE;
}

static gboolean
prepare_end(IohCopy *c, IohEnd *end, guint64 *ret_start, GError **error)
{
    if (end->kind == IOH_KIND_PIPE && c->opts->pipe_size > 0) {
        ioh_pipe_raise(end->fd, c->opts->pipe_size);
    }
    if (!ioh_end_is_storage(end)) {
        return TRUE;
    }
    if (c->opts->mode == IOH_MODE_DIRECT && !end->direct) {
        if (!ioh_end_set_direct(end, TRUE, error)) {
            return FALSE;
        }
    }
    return position_storage(c, end, ret_start, error);
}

static gboolean
sync_destination(IohCopy *c, GError **error)
{
    gint64 t0 = g_get_monotonic_time();

    if (!ioh_end_is_storage(c->dst)) {
        return TRUE;
    }
    if (c->opts->mode == IOH_MODE_FADVISE && !fadvise_after_write(c, TRUE, error)) {
        return FALSE;
    }
    if (fdatasync(c->dst->fd) < 0) {
        return ioh_error_set_errno(error, errno, "fdatasync", c->dst->name);
    }
    c->stats->sync_us += g_get_monotonic_time() - t0;
    if (c->opts->mode == IOH_MODE_FADVISE) {
        posix_fadvise(c->dst->fd, (off_t)c->dst_start, (off_t)c->stats->bytes,
                      POSIX_FADV_DONTNEED);
    }
    return TRUE;
}

gboolean
ioh_copy(IohEnd *src, IohEnd *dst, const IohCopyOptions *opts, IohStats *stats,
         GError **error)
{
    IohCopy c = { .src = src, .dst = dst, .opts = opts, .stats = stats };
    g_autofree char *buf = NULL;
    gsize align, bufsize;
    gboolean eof = FALSE;

    memset(stats, 0, sizeof(*stats));
    stats->start_us = g_get_monotonic_time();
    stats->mode = ioh_mode_name(opts->mode);
    if (ioh_end_is_storage(dst) && !ioh_end_is_storage(src)) {
        stats->direction = "save";
    } else if (ioh_end_is_storage(src) && !ioh_end_is_storage(dst)) {
        stats->direction = "restore";
    } else {
        stats->direction = "copy";
    }

    if (!prepare_end(&c, src, &c.src_start, error) ||
        !prepare_end(&c, dst, &c.dst_start, error)) {
        return FALSE;
    }
    align = MAX(src->direct ? src->align : 1, dst->direct ? dst->align : 1);
    align = MAX(align, 4096);
    bufsize = ALIGN_UP(MAX(opts->buffer_size, 1), align);
    if (posix_memalign((void **)&buf, align, bufsize) != 0) {
        g_set_error(error, IOH_ERROR, ENOMEM, "allocate %zu bytes: %s", bufsize,
                    g_strerror(ENOMEM));
        return FALSE;
    }
    if (opts->mode == IOH_MODE_FADVISE && ioh_end_is_storage(src)) {
        posix_fadvise(src->fd, (off_t)c.src_start, 0, POSIX_FADV_SEQUENTIAL);
    }

    while (!eof) {
        gsize want = bufsize;
        gssize got;

        if (opts->has_length) {
            if (stats->bytes >= opts->length) {
                break;
            }
            want = (gsize)MIN((guint64)bufsize, opts->length - stats->bytes);
        }
        got = read_full(&c, buf, want, error);
        if (got < 0) {
            goto fail;
        }
        eof = (gsize)got < want;
        if (got > 0 && !write_all(&c, buf, (gsize)got, error)) {
            goto fail;
        }
        stats->bytes += (guint64)got;
        if (opts->mode == IOH_MODE_FADVISE) {
            if (ioh_end_is_storage(dst) && !fadvise_after_write(&c, FALSE, error)) {
                goto fail;
            }
            if (ioh_end_is_storage(src)) {
                fadvise_after_read(&c, eof);
            }
        }
        report_progress(&c, FALSE);
    }
    if (opts->has_length && stats->bytes < opts->length) {
        g_set_error(error, IOH_ERROR, EIO,
                    "read %s: stream ended after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " bytes", src->name, stats->bytes, opts->length);
        goto fail;
    }
    if (opts->mode == IOH_MODE_FADVISE && ioh_end_is_storage(src)) {
        fadvise_after_read(&c, TRUE);
    }
    if (!sync_destination(&c, error)) {
        goto fail;
    }
    stats->synced = stats->bytes;
    stats->end_us = g_get_monotonic_time();
    report_progress(&c, TRUE);
    return TRUE;

fail:
    stats->end_us = g_get_monotonic_time();
    return FALSE;
}
