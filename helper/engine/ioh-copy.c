/* ioh-copy.c - the copy engine: move a stream between a pipe and a file
 *
 * Shape, by what measured fastest on this machine class (ext4 on a virtual disk, 2 cores
 * shared with the producer; benchmarks/RESULTS.md):
 *
 * - O_DIRECT (either direction) and every restore: reader threads and a writer (the calling
 *   thread) share a ring of opts->ring aligned buffers of opts->buffer_size bytes, so the
 *   disk works on one part of the stream while the pipe moves the next (the stock
 *   libvirt_iohelper reads, then writes: its disk idles while it reads the pipe).
 *   - An O_DIRECT destination gets consecutive full buffers coalesced into one write
 *     (IOH_COPY_MAX_SPAN): fio qd1, 1 MiB 1.77 GB/s, 4 MiB 2.4 GB/s. More writes in flight
 *     would not help: extending O_DIRECT writes hold ext4's inode lock for their duration.
 *   - An O_DIRECT source is read by up to IOH_COPY_MAX_READERS threads at once (half the
 *     ring), each on its own fd and offset: reads do run in parallel, and 1 MiB at qd4 is
 *     the fastest O_DIRECT read fio finds here (2.6 GB/s, vs 2.3 for 4 MiB at qd1).
 *   - The pipe side, and a buffered file, move one buffer per call, so buffers come back to
 *     the other side as soon as possible.
 * - A save into the page cache (buffered, --fadvise) runs read-then-write in one thread
 *   (copy_inline): both sides copy there, and a second copying thread on 2 cores only adds
 *   a cross-core hand-over (the ring measured 7% slower for a --fadvise save).
 * - Plain read()/write() rather than splice(2) or io_uring: splice measured faster for a
 *   --fadvise save in a one-thread test (1.67 vs 1.39 GB/s, 1 GiB, median of 4), but the
 *   fault-injection tests interpose read/write/fdatasync with LD_PRELOAD and count those
 *   calls, which splice and io_uring would bypass; io_uring is not needed for O_DIRECT
 *   reads (threads give the queue) and cannot beat the inode lock for writes.
 *
 * Threads: the first error of any thread is kept and stops the others: the writer sees it
 * at its next slot, a reader of a pipe waits in poll() on the pipe and an eventfd, so it
 * wakes even when the producer has stalled. None blocks forever when an end dies: a killed
 * producer is EOF, a consumer gone is EPIPE (SIGPIPE is the caller's to ignore).
 */
#include "ioh-copy.h"
#include "ioh-error.h"
#include "ioh-filter.h"
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <unistd.h>

#define IOH_COPY_MAX_READERS 4
/* Slots per coalesced O_DIRECT write: 4 MiB with the default buffers, measured 8-10% faster
 * than 2 MiB (fio psync qd1, 1/2/4 MiB: 1.62/1.73/1.94 GB/s) and no slower than 8 MiB. */
#define IOH_COPY_MAX_SPAN 4

#define ALIGN_DOWN(x, a) ((x) / (a) * (a))
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* The ring shared by the reader threads and the writer. Slots are numbered by monotonic
 * counters: [drained, filled) hold data in stream order, [filled, claimed) are being read
 * (several at once by parallel readers, each completing in any order: `done`), and
 * [claimed, drained + n) are free. Slot s holds stream bytes from s * slot on. */
typedef struct {
    char *mem;               /* n * slot bytes, aligned */
    gsize slot;              /* bytes per slot */
    guint n;                 /* slots */
    gsize *len;              /* bytes held by each slot (slot, except the last of a stream) */
    GMutex lock;
    GCond cond;
    gboolean *done;          /* read complete, not yet drained */
    guint64 claimed;         /* slots taken by a reader */
    guint64 filled;          /* slots handed to the writer (all done, in order) */
    guint64 end_seq;         /* first slot past the end of the stream, once known */
    guint readers;           /* reader threads: 1, or several for O_DIRECT storage */
    guint64 drained;         /* slots handed back to the reader */
    guint64 reads;           /* the reader's read calls, folded into stats under lock */
    gboolean eof;            /* filled == end_seq: the writer drains what is left */
    gboolean stop;           /* an error happened: both threads leave */
    GError *error;           /* the first error */
    int wake_fd;             /* eventfd, readable once stop is set */
    gboolean poll_src;       /* the source is a readable pipe: poll it with wake_fd first */
} IohRing;

typedef struct {
    IohEnd *src;
    IohEnd *dst;
    const IohCopyOptions *opts;
    IohStats *stats;
    IohRing *ring;
    guint64 src_start;       /* file offset where reading began (storage source) */
    guint64 dst_start;       /* file offset where writing began (storage destination) */
    guint64 dropped;         /* fadvise: stream bytes already written back and dropped */
    guint64 started;         /* fadvise save: stream bytes whose write-back was started */
    gboolean no_writeback;   /* sync_file_range does not apply to the destination */
    gint64 last_progress_us;
    IohFilterChain *filters; /* between the source and the sink, run by the writer */
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

static gboolean
ring_stopped(IohRing *r)
{
    gboolean stop;

    g_mutex_lock(&r->lock);
    stop = r->stop;
    g_mutex_unlock(&r->lock);
    return stop;
}

/* Keeps @err as the ring's error if it is the first, and stops both threads. */
static void
ring_fail(IohRing *r, GError *err)
{
    guint64 one = 1;

    g_mutex_lock(&r->lock);
    if (!r->error) {
        r->error = err;
        err = NULL;
    }
    r->stop = TRUE;
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
    g_clear_error(&err);
    if (write(r->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter cannot overflow with one write; the flag is set anyway */
    }
}

/* Waits until @fd is ready for @events, or the ring is stopped (returns FALSE). Both a
 * blocking pipe (before each read, so a stop wakes us) and a non-blocking fd handed to us
 * (after EAGAIN) go through here. */
static gboolean
wait_ready(IohCopy *c, int fd, short events)
{
    struct pollfd p[2] = {
        { .fd = fd, .events = events },
        { .fd = c->ring->wake_fd, .events = POLLIN },
    };

    for (;;) {
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return TRUE;    /* let the read or write itself report what is wrong */
        }
        if (p[1].revents) {
            return FALSE;
        }
        return TRUE;
    }
}

/* One reader thread and the fd it reads. The only reader reads the source's fd itself;
 * parallel readers each read an fd of their own, opened anew on the same file (through
 * /proc/self/fd), so each has its own position: lseek() to its buffer's offset, then plain
 * read()s, so that what tests interpose on read() sees every call. */
typedef struct {
    IohCopy *c;
    int fd;
    gboolean own;            /* fd is ours: the source's own fd otherwise */
    gboolean direct;         /* O_DIRECT is set on fd */
} IohReader;

static gboolean
reader_clear_direct(IohReader *rd, GError **error)
{
    IohEnd *src = rd->c->src;
    int fl;

    if (!rd->own) {
        if (!ioh_end_set_direct(src, FALSE, error)) {
            return FALSE;
        }
        rd->direct = FALSE;
        return TRUE;
    }
    fl = fcntl(rd->fd, F_GETFL);
    if (fl < 0 || fcntl(rd->fd, F_SETFL, fl & ~O_DIRECT) < 0) {
        return ioh_error_set_errno(error, errno, "fcntl", src->name);
    }
    rd->direct = FALSE;
    return TRUE;
}

/* Reads until @len bytes or EOF, from @pos (< 0: where the fd is). Returns bytes read, or
 * -1 with @error set (or with nothing set when the ring was stopped by the other side). */
static gssize
read_full(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error)
{
    IohCopy *c = rd->c;
    IohEnd *src = c->src;
    gsize have = 0;

    if (pos >= 0 && lseek(rd->fd, (off_t)pos, SEEK_SET) < 0) {
        ioh_error_set_errno(error, errno, "seek", src->name);
        return -1;
    }
    while (have < len) {
        gsize want = len - have;
        gssize n;

        if (rd->direct && (have % src->align) != 0) {
            /* A short read left us unaligned: finish this stream buffered. */
            if (!reader_clear_direct(rd, error)) {
                return -1;
            }
        }
        if (rd->direct) {
            want = ALIGN_UP(want, src->align);
        }
        if (c->ring->poll_src && !wait_ready(c, src->fd, POLLIN)) {
            return -1;
        }
        n = read(rd->fd, buf + have, want);
        g_mutex_lock(&c->ring->lock);
        c->ring->reads++;
        g_mutex_unlock(&c->ring->lock);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                if (!wait_ready(c, rd->fd, POLLIN)) {
                    return -1;
                }
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

/* TRUE when writing @len bytes at @fd's position goes past RLIMIT_FSIZE. */
static gboolean
crosses_fsize_limit(int fd, gsize len)
{
    struct rlimit rl;
    off_t pos = lseek(fd, 0, SEEK_CUR);

    return pos >= 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
           (guint64)pos + len > (guint64)rl.rlim_cur;
}

static gboolean
write_all(IohCopy *c, const char *buf, gsize len, GError **error)
{
    IohEnd *dst = c->dst;

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
                if (!wait_ready(c, dst->fd, POLLOUT)) {
                    return TRUE;    /* stopped: the caller finds the ring's error */
                }
                continue;
            }
            if (errno == EINVAL && dst->direct && crosses_fsize_limit(dst->fd, chunk)) {
                /* The kernel clipped this write at RLIMIT_FSIZE to an unaligned length,
                 * which O_DIRECT refuses: retry through the page cache to get the real
                 * error (EFBIG), not a wrong "O_DIRECT refused". */
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
    g_set_error(error, IOH_ERROR, EINVAL,
                "read %s: offset %" G_GUINT64_FORMAT " is past its end (%" G_GINT64_FORMAT
                " bytes)", end->name, c->opts->offset, size);
    return FALSE;
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
        g_set_error(error, IOH_ERROR, EINVAL, "seek %s: open with O_APPEND, so an offset "
                    "cannot apply: every write lands at its end", end->name);
        return FALSE;
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
    if (end->direct && (guint64)pos % end->align != 0) {
        if (append) {
            g_set_error(error, IOH_ERROR, EINVAL,
                        "write %s: open with O_APPEND, so writes land at its end, offset "
                        "%lld, which is not a multiple of %u, as O_DIRECT needs",
                        end->name, (long long)pos, end->align);
            return FALSE;
        }
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

/* A regular file ends where the stream ends: old bytes past it would be read back as
 * part of the stream. Not an O_APPEND file (the stream went to its end) and not a block
 * device (it has a fixed size: the bytes past the stream stay). */
static gboolean
truncate_destination(IohCopy *c, GError **error)
{
    guint64 end = c->dst_start + c->stats->bytes;
    struct stat st;

    if (c->dst->kind != IOH_KIND_FILE || (fcntl(c->dst->fd, F_GETFL) & O_APPEND)) {
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
sync_destination(IohCopy *c, GError **error)
{
    gint64 t0 = g_get_monotonic_time();

    if (!ioh_end_is_storage(c->dst)) {
        return TRUE;
    }
    if (!truncate_destination(c, error)) {
        return FALSE;
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


/* How many slots one read or write of @end may span. O_DIRECT: half the ring, so that the
 * other thread always has the other half to work on, and at most IOH_COPY_MAX_SPAN. Through the page cache the size of a
 * call does not matter to the disk (write-back and readahead decide), and a pipe is best
 * moved one slot at a time: both move one buffer per call. */
static guint
io_span(const IohRing *r, const IohEnd *end)
{
    return end->direct ? CLAMP(r->n / 2, 1, IOH_COPY_MAX_SPAN) : 1;
}

/* Moves `filled` over the slots whose reads are done, in stream order. Under the lock. */
static void
ring_advance(IohRing *r)
{
    while (r->filled < r->end_seq && r->filled < r->claimed && r->done[r->filled % r->n]) {
        r->filled++;
    }
    if (r->filled >= r->end_seq) {
        r->eof = TRUE;
    }
    g_cond_broadcast(&r->cond);
}

/* A reader thread: claims the next free slot, fills it from the source, hands it over in
 * stream order; until EOF, the length, or a stop. One reader uses read() at the fd's
 * position; parallel readers (O_DIRECT storage) read their slot's own offset. */
static gpointer
reader_main(gpointer data)
{
    IohReader *rd = data;
    IohCopy *c = rd->c;
    IohRing *r = c->ring;
    const IohCopyOptions *opts = c->opts;
    gboolean parallel = r->readers > 1;

    for (;;) {
        GError *err = NULL;
        guint64 seq, off;
        gsize want;
        gssize got;
        char *buf;

        g_mutex_lock(&r->lock);
        while (!r->stop && r->claimed < r->end_seq && r->claimed - r->drained == r->n) {
            g_cond_wait(&r->cond, &r->lock);
        }
        if (!r->stop && opts->has_length && r->claimed * r->slot >= opts->length) {
            r->end_seq = MIN(r->end_seq, r->claimed);
            ring_advance(r);
        }
        if (r->stop || r->claimed >= r->end_seq) {
            g_mutex_unlock(&r->lock);
            return NULL;
        }
        seq = r->claimed++;
        g_mutex_unlock(&r->lock);

        off = seq * r->slot;
        want = r->slot;
        if (opts->has_length) {
            want = (gsize)MIN((guint64)want, opts->length - off);
        }
        buf = r->mem + (seq % r->n) * r->slot;
        got = read_full(rd, buf, want, parallel ? (gint64)(c->src_start + off) : -1, &err);
        if (got < 0) {
            if (err) {
                ring_fail(r, err);
            }
            return NULL;
        }

        g_mutex_lock(&r->lock);
        r->len[seq % r->n] = (gsize)got;
        r->done[seq % r->n] = TRUE;
        if ((gsize)got < r->slot) {
            /* The stream ends in this slot (or before it, when it is empty). */
            r->end_seq = MIN(r->end_seq, got > 0 ? seq + 1 : seq);
        }
        ring_advance(r);
        g_mutex_unlock(&r->lock);
    }
}

/* The writer (the calling thread): drains filled slots to the destination, with the
 * fadvise window and progress reports behind it, until the reader's EOF or a stop.
 * Returns FALSE when the ring stopped; the error is the ring's. */
static gboolean
writer_loop(IohCopy *c)
{
    IohRing *r = c->ring;
    IohStats *stats = c->stats;
    const IohCopyOptions *opts = c->opts;
    guint span = io_span(r, c->dst);

    for (;;) {
        GError *err = NULL;
        guint64 idx, avail;
        guint k, i;
        gsize len = 0;

        g_mutex_lock(&r->lock);
        while (!r->stop && !r->eof && r->filled == r->drained) {
            g_cond_wait(&r->cond, &r->lock);
        }
        stats->reads = r->reads;
        if (r->stop) {
            g_mutex_unlock(&r->lock);
            return FALSE;
        }
        if (r->filled == r->drained) {
            g_mutex_unlock(&r->lock);
            return TRUE;    /* eof, and everything written */
        }
        idx = r->drained % r->n;
        avail = MIN(r->filled - r->drained, (guint64)(r->n - idx));
        k = (guint)MIN(avail, (guint64)span);
        /* Only full slots are contiguous with what follows; a short one ends the run. */
        for (i = 0; i < k; i++) {
            len += r->len[idx + i];
            if (r->len[idx + i] < r->slot) {
                i++;
                break;
            }
        }
        k = i;
        g_mutex_unlock(&r->lock);

        if (!ioh_filter_chain_data(c->filters, r->mem + idx * r->slot, len, &err) ||
            !write_all(c, r->mem + idx * r->slot, len, &err)) {
            ring_fail(r, err);
            return FALSE;
        }
        if (ring_stopped(r)) {
            return FALSE;
        }
        stats->bytes += (guint64)len;
        if (opts->mode == IOH_MODE_FADVISE) {
            if (ioh_end_is_storage(c->dst) && !fadvise_after_write(c, FALSE, &err)) {
                ring_fail(r, err);
                return FALSE;
            }
            if (ioh_end_is_storage(c->src)) {
                fadvise_after_read(c, FALSE);
            }
        }

        g_mutex_lock(&r->lock);
        for (i = 0; i < k; i++) {
            r->done[(r->drained + i) % r->n] = FALSE;
        }
        r->drained += k;
        g_cond_broadcast(&r->cond);
        g_mutex_unlock(&r->lock);
        report_progress(c, FALSE);
    }
}

/* Buffered save: start write-back of each full window as soon as it is written, without
 * waiting and without dropping it (the pages stay cached: that is the buffered mode). The
 * kernel would wait for dirty_background_ratio (gigabytes here) and leave it all to the
 * final fdatasync; started early, the disk writes while the pipe is read (1 GiB buffered
 * save, median of 5 interleaved: 1.0 GB/s without, 1.5 GB/s with; waiting for the window
 * before, as --fadvise does, measured slower: 1.1 GB/s). */
static gboolean
writeback_early(IohCopy *c, GError **error)
{
    guint64 win = MAX(c->opts->fadvise_window, 1);

    while (!c->no_writeback && c->stats->bytes - c->started >= win) {
        if (sync_file_range(c->dst->fd, (off_t)(c->dst_start + c->started), (off_t)win,
                            SYNC_FILE_RANGE_WRITE) < 0) {
            if (errno == ESPIPE || errno == EINVAL || errno == ENOSYS) {
                c->no_writeback = TRUE;    /* not for this file: leave it to fdatasync */
                return TRUE;
            }
            return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
        }
        c->started += win;
    }
    return TRUE;
}

/* Read then write in one thread, one buffer: for a save through the page cache (buffered,
 * --fadvise). Both sides copy there (pipe -> buffer -> page cache), and on a 2-core machine
 * that also runs the producer a second copying thread only adds a cross-core hand-over:
 * measured, the ring cost 7% against this loop (1 GiB --fadvise save, helper wall time
 * 0.53 s vs 0.57 s over 3 interleaved runs, same CPU time), while with O_DIRECT (no copy on
 * the write side, the disk busy) the ring wins. The buffer stays hot in this core's cache. */
static gboolean
copy_inline(IohCopy *c, GError **error)
{
    IohRing *r = c->ring;
    IohStats *stats = c->stats;
    const IohCopyOptions *opts = c->opts;
    IohReader rd = { .c = c, .fd = c->src->fd, .direct = c->src->direct };

    for (;;) {
        gsize want = r->slot;
        gssize got;

        if (opts->has_length) {
            if (stats->bytes >= opts->length) {
                break;
            }
            want = (gsize)MIN((guint64)want, opts->length - stats->bytes);
        }
        got = read_full(&rd, r->mem, want, -1, error);
        stats->reads = r->reads;
        if (got < 0) {
            return FALSE;
        }
        if (!ioh_filter_chain_data(c->filters, r->mem, (gsize)got, error) ||
            (got > 0 && !write_all(c, r->mem, (gsize)got, error))) {
            return FALSE;
        }
        stats->bytes += (guint64)got;
        if (opts->mode == IOH_MODE_FADVISE) {
            if (ioh_end_is_storage(c->dst) && !fadvise_after_write(c, FALSE, error)) {
                return FALSE;
            }
            if (ioh_end_is_storage(c->src)) {
                fadvise_after_read(c, FALSE);
            }
        } else if (ioh_end_is_storage(c->dst) && !writeback_early(c, error)) {
            return FALSE;
        }
        report_progress(c, FALSE);
        if ((gsize)got < want) {
            break;
        }
    }
    return TRUE;
}

gboolean
ioh_copy(IohEnd *src, IohEnd *dst, const IohCopyOptions *opts, IohStats *stats,
         GError **error)
{
    IohRing ring = { .wake_fd = -1 };
    g_autoptr(IohFilterChain) filters = NULL;
    IohCopy c = { .src = src, .dst = dst, .opts = opts, .stats = stats, .ring = &ring };
    g_autofree gsize *lens = NULL;
    g_autofree gboolean *done = NULL;
    GThread *readers[IOH_COPY_MAX_READERS] = { NULL };
    IohReader rds[IOH_COPY_MAX_READERS];
    gsize align, slot;
    gboolean ok, inline_copy;
    guint i;

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

    filters = ioh_filter_chain_new(opts, error);
    c.filters = filters;
    if (!filters || !prepare_end(&c, src, &c.src_start, error) ||
        !prepare_end(&c, dst, &c.dst_start, error)) {
        goto out;
    }
    align = MAX(src->direct ? src->align : 1, dst->direct ? dst->align : 1);
    align = MAX(align, 4096);
    slot = ALIGN_UP(MAX(opts->buffer_size, 1), align);
    /* The ring for O_DIRECT and for restores; one thread for saves into the page cache. */
    inline_copy = ioh_end_is_storage(dst) && !dst->direct &&
                  !(ioh_end_is_storage(src) && src->direct);
    ring.n = inline_copy ? 1 : MAX(opts->ring, 1);
    ring.slot = slot;
    if (slot > G_MAXSIZE / ring.n ||
        posix_memalign((void **)&ring.mem, align, slot * ring.n) != 0) {
        g_set_error(error, IOH_ERROR, ENOMEM, "allocate %u buffers of %zu bytes: %s", ring.n,
                    slot, g_strerror(ENOMEM));
        goto out;
    }
    lens = g_new0(gsize, ring.n);
    ring.len = lens;
    done = g_new0(gboolean, ring.n);
    ring.done = done;
    ring.end_seq = G_MAXUINT64;
    /* An O_DIRECT file or device is read by several threads at once, each reading one
     * buffer at its own offset: the disk then has a queue (fio: 1 MiB reads at qd4 beat
     * 4 MiB at qd1 by 15% here, and by 1.5x-2x when the disk is shared). They take half the
     * ring, so the pipe side keeps the other half. A pipe has one reader. Parallel O_DIRECT
     * writes would not help: extending writes hold ext4's inode lock for their duration,
     * so a save coalesces instead (writer_loop). */
    ring.readers = ioh_end_is_storage(src) && src->direct
                       ? CLAMP(ring.n / 2, 1, IOH_COPY_MAX_READERS) : 1;
    rds[0] = (IohReader){ .c = &c, .fd = src->fd, .direct = src->direct };
    if (ring.readers > 1) {
        g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", src->fd);
        for (i = 0; i < ring.readers; i++) {
            int fd = open(self, O_RDONLY | O_DIRECT | O_CLOEXEC);
            if (fd < 0) {
                break;    /* no /proc, or not ours to open again: fewer readers */
            }
            rds[i] = (IohReader){ .c = &c, .fd = fd, .own = TRUE, .direct = TRUE };
        }
        if (i < 2) {
            if (i == 1) {
                close(rds[0].fd);
            }
            rds[0] = (IohReader){ .c = &c, .fd = src->fd, .direct = src->direct };
            i = 1;
        }
        ring.readers = i;
    }
    ring.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ring.wake_fd < 0) {
        g_set_error(error, IOH_ERROR, errno, "eventfd: %s", g_strerror(errno));
        goto out;
    }
    /* Every check that could refuse the copy has passed: only now may a save target
     * opened by path lose its old contents. */
    if (!ioh_end_apply_truncate(dst, error)) {
        goto out;
    }
    if (opts->mode == IOH_MODE_FADVISE && ioh_end_is_storage(src)) {
        posix_fadvise(src->fd, (off_t)c.src_start, 0, POSIX_FADV_SEQUENTIAL);
    }
    /* Any stream source (pipe, socket, char device) open for reading: a reader blocked in
     * read() on a silent producer would never see the writer's failure. Not a write-only
     * fd: poll would wait forever for POLLIN where read fails at once with EBADF. And only
     * with a writer thread to wake us. */
    ring.poll_src = !inline_copy && !ioh_end_is_storage(src) &&
                    (ioh_fd_access_mode(src->fd, NULL) == O_RDONLY ||
                     ioh_fd_access_mode(src->fd, NULL) == O_RDWR);
    g_mutex_init(&ring.lock);
    g_cond_init(&ring.cond);

    if (inline_copy) {
        ok = copy_inline(&c, error);
        g_mutex_clear(&ring.lock);
        g_cond_clear(&ring.cond);
        if (!ok) {
            goto out;
        }
        goto finish;
    }
    for (i = 0; i < ring.readers; i++) {
        GError *err = NULL;
        readers[i] = g_thread_try_new("ioh-reader", reader_main, &rds[i], &err);
        if (!readers[i]) {
            ring_fail(&ring, err);
            break;
        }
    }
    ok = writer_loop(&c);
    for (i = 0; i < ring.readers; i++) {
        if (readers[i]) {
            g_thread_join(readers[i]);
        }
        if (rds[i].own) {
            close(rds[i].fd);    /* read-only: nothing to lose */
        }
    }
    stats->reads = ring.reads;
    g_mutex_clear(&ring.lock);
    g_cond_clear(&ring.cond);
    if (!ok) {
        g_propagate_error(error, g_steal_pointer(&ring.error));
        goto out;
    }
    /* A parallel reader's read past the end may have failed after the stream was whole. */
    g_clear_error(&ring.error);
    if (ring.readers > 1) {
        /* The source's own fd was not read: put its position where read() would have. */
        lseek(src->fd, (off_t)(c.src_start + stats->bytes), SEEK_SET);
    }

finish:
    if (opts->has_length && stats->bytes < opts->length) {
        g_set_error(error, IOH_ERROR, EIO,
                    "read %s: stream ended after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " bytes", src->name, stats->bytes, opts->length);
        goto out;
    }
    if (opts->mode == IOH_MODE_FADVISE && ioh_end_is_storage(src)) {
        fadvise_after_read(&c, TRUE);
    }
    if (!sync_destination(&c, error)) {
        goto out;
    }
    stats->synced = stats->bytes;
    if (!ioh_filter_chain_finish(filters, src, dst, stats, error)) {
        goto out;
    }
    stats->end_us = g_get_monotonic_time();
    report_progress(&c, TRUE);
    free(ring.mem);
    close(ring.wake_fd);
    return TRUE;

out:
    stats->end_us = g_get_monotonic_time();
    free(ring.mem);
    if (ring.wake_fd >= 0) {
        close(ring.wake_fd);
    }
    return FALSE;
}
