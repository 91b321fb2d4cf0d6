/* ioh-sink-file.c - the file sink: writes the stream into a regular file or block device
 * in the cache mode asked, and makes it durable: the file ends where the stream ends,
 * then fdatasync (the cache policy, ioh-cache-policy.c, writes back behind the head) */
#include "ioh-layer.h"
#include "ioh-dio.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static gboolean
file_accepts(const IohEnd *end)
{
    return ioh_end_is_storage(end);
}

static gboolean
file_prepare(IohCopy *c, GError **error)
{
    return ioh_storage_prepare(c, c->dst, &c->dst_start, error);
}

/* TRUE when writing @len bytes at @fd's position goes past RLIMIT_FSIZE. */
static gboolean
crosses_fsize_limit(int fd, gsize len)
{
    struct rlimit rl;
    off_t pos = lseek(fd, 0, SEEK_CUR);

    return pos >= 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
           (guint64)pos + len > (guint64)rl.rlim_cur;
}

/* What an O_DIRECT write failing with EINVAL means: FALSE with the error, or TRUE when
 * O_DIRECT was cleared and the write is to be tried again through the page cache. */
static gboolean
direct_einval(IohEnd *dst, gsize chunk, GError **error)
{
    if (crosses_fsize_limit(dst->fd, chunk)) {
        /* The kernel clipped this write at RLIMIT_FSIZE to an unaligned length, which
         * O_DIRECT refuses: retry through the page cache to get the real error (EFBIG),
         * not a wrong "O_DIRECT refused". */
        return ioh_end_set_direct(dst, FALSE, error);
    }
    return ioh_error_set(error, EINVAL, "write", dst->name, IOH_DIO_REFUSED " (%s)",
                         g_strerror(EINVAL));
}

/* How much of @len bytes at @buf one write may take: O_DIRECT writes aligned lengths
 * from aligned buffers. The unaligned tail of the stream (or the rest after a short
 * write) goes through the page cache, O_DIRECT cleared with F_SETFL: the fdatasync that
 * ends every save makes it durable. Unlike pad-then-ftruncate this works on block devices
 * and never leaves padding behind for a reader to trip over. 0 with @error on failure. */
static gsize
direct_chunk(IohEnd *dst, const char *buf, gsize len, GError **error)
{
    gsize chunk = IOH_ALIGN_DOWN(len, dst->align);

    if (chunk > 0 && ((guintptr)buf % dst->align) == 0) {
        return chunk;
    }
    return ioh_end_set_direct(dst, FALSE, error) ? len : 0;
}

/* What a write call of @len bytes that returned @n (errno as it left it) means: 1 bytes
 * were written, 0 try again (EINTR; EAGAIN, once writable; O_DIRECT cleared after EINVAL),
 * -1 failed with @error set. */
static int
wrote(IohCopy *c, gssize n, gsize len, GError **error)
{
    c->stats->writes++;
    if (n < 0 && errno == EINVAL && c->dst->direct) {
        return direct_einval(c->dst, len, error) ? 0 : -1;
    }
    if (n < 0) {
        return ioh_copy_retry(c, errno, c->dst->fd, POLLOUT, "write", c->dst->name, error)
               ? 0 : -1;
    }
    if (n == 0) {
        ioh_error_set_errno(error, EIO, "write", c->dst->name);
        return -1;
    }
    if (c->dst->direct) {
        /* O_DIRECT data has left the host's cache; fdatasync flushes the device's. */
        c->stats->synced += (guint64)n;
    }
    return 1;
}

static gboolean
file_write(IohCopy *c, const char *buf, gsize len, GError **error)
{
    IohEnd *dst = c->dst;

    while (len > 0) {
        gsize chunk = dst->direct ? direct_chunk(dst, buf, len, error) : len;
        gssize n;
        int r;

        if (chunk == 0) {
            return FALSE;
        }
        n = write(dst->fd, buf, chunk);
        if ((r = wrote(c, n, chunk, error)) <= 0) {
            if (r < 0) {
                return FALSE;
            }
            continue;
        }
        buf += n;
        len -= (gsize)n;
    }
    return TRUE;
}

/* The length of @cnt pieces, or 0 when one does not start and end on a multiple of
 * @align. */
static gsize
pieces_aligned(const struct iovec *iov, int cnt, gsize align)
{
    gsize len = 0;

    for (int i = 0; i < cnt; i++) {
        if ((guintptr)iov[i].iov_base % align != 0 || iov[i].iov_len % align != 0) {
            return 0;
        }
        len += iov[i].iov_len;
    }
    return len;
}

/* Writes @cnt pieces, as many per call as writev takes; through O_DIRECT so when all of
 * them are aligned, else one at a time. What a short writev left of a piece goes by
 * file_write (O_DIRECT where it is still aligned). */
static gboolean
file_writev(IohCopy *c, const struct iovec *iov, int cnt, GError **error)
{
    IohEnd *dst = c->dst;

    while (cnt > 0) {
        int now = MIN(cnt, IOV_MAX);
        gssize n;
        int r;

        if (iov->iov_len == 0 || (dst->direct && !pieces_aligned(iov, now, dst->align))) {
            if (!file_write(c, iov->iov_base, iov->iov_len, error)) {
                return FALSE;
            }
            iov++, cnt--;
            continue;
        }
        n = writev(dst->fd, iov, now);
        if ((r = wrote(c, n, dst->direct ? pieces_aligned(iov, now, dst->align) : 0,
                       error)) <= 0) {
            if (r < 0) {
                return FALSE;
            }
            continue;
        }
        for (; cnt > 0 && (gsize)n >= iov->iov_len; iov++, cnt--) {
            n -= (gssize)iov->iov_len;
        }
        if (n > 0 && !file_write(c, (const char *)iov->iov_base + n, iov->iov_len - (gsize)n,
                                 error)) {
            return FALSE;
        }
        if (n > 0) {
            iov++, cnt--;
        }
    }
    return TRUE;
}

/* A regular file ends where the stream ends: old bytes past it would be read back as
 * part of the stream. Not an O_APPEND file (the stream went to its end) and not a block
 * device (it has a fixed size: the bytes past the stream stay). */
static gboolean
truncate_at_end(IohCopy *c, GError **error)
{
    guint64 end = c->dst_start + c->out;
    struct stat st;

    if (c->dst->kind != IOH_KIND_FILE || c->opts->no_truncate ||
        (fcntl(c->dst->fd, F_GETFL) & O_APPEND)) {
        return TRUE;
    }
    if (fstat(c->dst->fd, &st) < 0) {
        return ioh_error_set_errno(error, errno, "stat", c->dst->name);
    }
    if ((guint64)st.st_size > end && ftruncate(c->dst->fd, (off_t)end) < 0) {
        return ioh_error_set_errno(error, errno, "truncate", c->dst->name);
    }
    return TRUE;
}

static gboolean
file_finish(IohCopy *c, GError **error)
{
    gint64 t0 = g_get_monotonic_time();

    if (!truncate_at_end(c, error) || !ioh_cache_finish_write(c, error)) {
        return FALSE;
    }
    if (fdatasync(c->dst->fd) < 0) {
        return ioh_error_set_errno(error, errno, "fdatasync", c->dst->name);
    }
    c->stats->sync_us += g_get_monotonic_time() - t0;
    ioh_cache_drop_written(c);
    return TRUE;
}

const IohSinkClass ioh_sink_file = {
    .name = "file",
    .accepts = file_accepts,
    .prepare = file_prepare,
    .write = file_write,
    .writev = file_writev,
    .finish = file_finish,
};
