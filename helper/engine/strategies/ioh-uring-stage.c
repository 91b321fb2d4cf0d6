/* ioh-uring-stage.c - the io_uring save's filter stage (ioh-uring-stage.h)
 *
 * Why: a filtered --direct save (age encryption, zstd, a checksum) ran on the ring's two
 * threads, handing each buffer over both ways, while the unfiltered one runs on one
 * thread through io_uring (ioh-strategy-uring.c); the filters' own threads (age's sealing,
 * zstd's workers) do the heavy work either way. Here the strategy's thread runs the
 * filters on what it read, and their output goes to the disk as the unfiltered save's
 * does: O_DIRECT io_uring writes, two in flight (more would not help: ext4 holds the
 * inode lock through an extending O_DIRECT write), from registered buffers.
 *
 * The filters hand on their output from buffers of their own, which are theirs again
 * once the call returns, so it is copied into the stage's ring of bytes: stream bytes
 * [done, sub) of the output are being written, [sub, put) wait for a write, the rest is
 * free. When the filters hand on more than the ring has room for, the stage waits through
 * the strategy, which goes on reading the pipe meanwhile. The unaligned tail goes through
 * the file sink once every write is done, as without filters.
 */
#include "ioh-uring-stage.h"
#include "ioh-uring.h"
#include "ioh-error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes in flight at most (see the top). */
#define STAGE_WRITES 2
/* The ring holds this many writes' worth: as the unfiltered save's ring, the writes in
 * flight fill it and the filters wait for the first to end. No deeper: --compress=auto
 * tells a slow disk by the time its thread waits in the sink, which a deeper ring hides
 * for its first windows (/compress/auto/throttled-compresses failed with 4). */
#define STAGE_SPANS 2

typedef struct {
    IohUringWrite io;    /* output offsets; as the strategy's writes (ioh-uring-stage.h);
                          * first, so that ioh_uring_write_done()'s callbacks find the rest */
    const char *ext;     /* the filter's own buffer holding output offset @ext_start on
                          * (written in place), or NULL: the ring */
    guint64 ext_start;
} StageWrite;

struct _IohUringStage {
    IohCopy *c;
    IohUringLink link;
    char *mem;           /* the ring of output bytes, aligned */
    gsize size;
    gsize span;          /* bytes per write at most */
    guint64 put;         /* output bytes the filters handed on */
    guint64 sub;         /* ... handed to writes */
    guint64 done;        /* ... written, in order */
    StageWrite w[STAGE_WRITES];   /* in output order from wh, wn of them */
    guint wh, wn;
};

gboolean
ioh_uring_stage_wanted(IohCopy *c, const char *env)
{
    if (!c->opts->filters || !c->opts->filters[0] || (env && g_str_equal(env, "filters"))) {
        return TRUE;
    }
    g_strlcpy(c->stats->io_uring, "not used (filters: threads, measured faster)",
              sizeof(c->stats->io_uring));
    return FALSE;
}

IohUringStage *
ioh_uring_stage_new(IohCopy *c, gsize span)
{
    gsize huge = 2 << 20;
    IohUringStage *s;
    void *p = NULL;
    gsize size = IOH_ALIGN_UP(span * STAGE_SPANS, huge);

    if (!c->opts->filters || !c->opts->filters[0]) {
        return NULL;
    }
    if (posix_memalign(&p, MAX(huge, c->align), size) != 0) {
        g_error("io_uring: cannot allocate %" G_GSIZE_FORMAT " bytes", size);
    }
    madvise(p, size, MADV_HUGEPAGE);    /* fewer pages for the kernel to pin and map */
    s = g_new0(IohUringStage, 1);
    s->c = c;
    s->mem = p;
    s->size = size;
    s->span = span;
    s->link.buf_index = -1;
    /* No budget reaches here (ioh_uring_fits()): the layer is accounted, never scaled. */
    (void)ioh_mem_claim(c->opts->memory, "uring-out", size, size, 0, NULL, NULL);
    return s;
}

struct iovec
ioh_uring_stage_buffer(const IohUringStage *s)
{
    return (struct iovec){ .iov_base = s->mem, .iov_len = s->size };
}

/* Keeps @err as the copy's error if it is the first. */
static void
stage_fail(IohUringStage *s, GError *err)
{
    if (!*s->link.error) {
        *s->link.error = err;
    } else {
        g_error_free(err);
    }
}

/* FALSE with a copy of the copy's first error in @error, when there is one. */
static gboolean
stage_ok(const IohUringStage *s, GError **error)
{
    if (*s->link.error) {
        g_propagate_error(error, g_error_copy(*s->link.error));
        return FALSE;
    }
    return TRUE;
}

static struct io_uring_sqe *
stage_sqe(IohUringStage *s)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(s->link.ring);

    if (!sqe) {
        /* A full submission queue: hand it to the kernel, then take one. */
        io_uring_submit(s->link.ring);
        sqe = io_uring_get_sqe(s->link.ring);
    }
    return sqe;
}

static void stage_write_done(IohUringStage *s, StageWrite *w, int res);

/* Submits write @w (or completes it at once with the fault shim's result). */
static void
stage_submit(IohUringStage *s, StageWrite *w)
{
    IohCopy *c = s->c;
    gsize len = w->io.len;
    guint64 pos = c->dst_start + w->io.start;
    const char *buf = w->ext ? w->ext + (gsize)(w->io.start - w->ext_start)
                             : s->mem + (gsize)(w->io.start % s->size);
    struct io_uring_sqe *sqe;
    int f;

    w->io.queued = FALSE;
    w->io.direct = c->dst->direct;
    if ((f = ioh_uring_fault(c->dst->fd, TRUE, &len, (gint64)pos)) < 0) {
        stage_write_done(s, w, f);
        return;
    }
    w->io.asked = len;
    if (!(sqe = stage_sqe(s))) {
        w->io.queued = TRUE;    /* the queue stays full: again after the next wait */
        return;
    }
    if (s->link.buf_index >= 0 && !w->ext) {
        io_uring_prep_write_fixed(sqe, c->dst->fd, buf, (unsigned)len, pos,
                                  s->link.buf_index);
    } else {
        io_uring_prep_write(sqe, c->dst->fd, buf, (unsigned)len, pos);
    }
    io_uring_sqe_set_data64(sqe, IOH_URING_STAGE_TAG + (guint64)(w - s->w));
    (*s->link.inflight)++;
    w->io.busy = TRUE;
}

/* The writes at the head that are done: their bytes count as stored, in order. */
static void
stage_retire(IohUringStage *s)
{
    while (s->wn > 0 && s->w[s->wh].io.len == 0 && !s->w[s->wh].io.busy) {
        guint64 end = s->w[s->wh].io.start;

        ioh_uring_write_retired(s->c, &s->w[s->wh].io);
        s->wh = (s->wh + 1) % STAGE_WRITES;
        s->wn--;
        ioh_copy_stored(s->c, (gsize)(end - s->done));
        s->done = end;
    }
    ioh_copy_report_progress(s->c, FALSE);
}

/* ioh_uring_write_through() for write @w of a filter's own buffer. */
static gboolean
stage_through_in_place(IohCopy *c, const StageWrite *w, GError **error)
{
    if (lseek(c->dst->fd, (off_t)(c->dst_start + w->io.start), SEEK_SET) < 0) {
        return ioh_error_set_errno(error, errno, "seek", c->dst->name);
    }
    return c->sink->write(c, w->ext + (gsize)(w->io.start - w->ext_start), w->io.len, error);
}

/* An O_DIRECT write refused (EINVAL): through the file sink (ioh_uring_write_done()). */
static gboolean
stage_through(gpointer data, IohUringWrite *io, GError **error)
{
    IohUringStage *s = data;
    StageWrite *w = (StageWrite *)io;   /* io is its first member */

    return w->ext ? stage_through_in_place(s->c, w, error)
                  : ioh_uring_write_through(s->c, s->mem, s->size, io->start, io->len, error);
}

static void
stage_fail_cb(gpointer data, GError *error)
{
    stage_fail(data, error);
}

static void
stage_write_done(IohUringStage *s, StageWrite *w, int res)
{
    if (ioh_uring_write_done(s->c, &w->io, res, *s->link.error != NULL, stage_through,
                             stage_fail_cb, s)) {
        stage_retire(s);
    }
}

void
ioh_uring_stage_done(IohUringStage *s, guint64 tag, int res)
{
    StageWrite *w = &s->w[(tag - IOH_URING_STAGE_TAG) % STAGE_WRITES];

    ioh_uring_fault_done(s->c->dst->fd, TRUE, w->io.asked, res);
    stage_write_done(s, w, res);
}

/* Submits the writes to redo, then new ones: a span at a time (less at the end of the
 * ring), the aligned part of what is left at the end of the stream (@final). */
static void
stage_queue(IohUringStage *s, gboolean final)
{
    IohCopy *c = s->c;
    gsize align = c->dst->direct ? c->dst->align : 1;

    for (guint i = 0; i < s->wn && !*s->link.error; i++) {
        StageWrite *w = &s->w[(s->wh + i) % STAGE_WRITES];

        if (w->io.queued) {
            stage_submit(s, w);
        }
    }
    while (!*s->link.error && s->wn < STAGE_WRITES) {
        gsize off = (gsize)(s->sub % s->size);
        gsize room = s->size - off;
        gsize len = (gsize)MIN(s->put - s->sub, (guint64)MIN(room, s->span));
        StageWrite *w;

        len = IOH_ALIGN_DOWN(len, align);
        if (len == 0 || (len < s->span && len < room && !final)) {
            return;
        }
        w = &s->w[(s->wh + s->wn++) % STAGE_WRITES];
        *w = (StageWrite){ .io = { .start = s->sub, .len = len } };
        s->sub += len;
        stage_submit(s, w);
    }
}

/* Waits through the strategy for a completion (the pipe's reads go on). */
static gboolean
stage_wait(IohUringStage *s, GError **error)
{
    stage_queue(s, FALSE);
    if (!stage_ok(s, error)) {
        return FALSE;
    }
    (void)s->link.wait(s->link.data);    /* FALSE: the copy's error is set */
    return stage_ok(s, error);
}

/* Writes @len bytes at @buf (aligned, whole alignments) where they lie, after what the
 * ring holds, as two writes in flight, and waits for them: @buf is the filter's again on
 * the return. */
static gboolean
stage_sink_in_place(IohUringStage *s, const char *buf, gsize len, GError **error)
{
    gsize align = s->c->dst->align;
    gsize piece = MIN(s->span, MAX(IOH_ALIGN_UP(len / STAGE_WRITES, align), align));
    guint64 start = s->put;

    for (gsize off = 0; off < len;) {
        StageWrite *w;
        gsize n = MIN(piece, len - off);

        while (s->wn == STAGE_WRITES) {
            if (!stage_wait(s, error)) {
                return FALSE;
            }
        }
        w = &s->w[(s->wh + s->wn++) % STAGE_WRITES];
        *w = (StageWrite){ .io = { .start = start + off, .len = n }, .ext = buf,
                            .ext_start = start };
        s->put += n;    /* past the ring's bytes: none wait there (put == sub) */
        s->sub += n;
        stage_submit(s, w);
        off += n;
    }
    while (s->done < s->put) {
        if (!stage_wait(s, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* IohFilterSinkFunc: what leaves the last filter. Whole alignments in aligned memory,
 * with nothing in the ring before them (the filters' usual output: age's and zstd's
 * batches, the stream itself past a checksum), are written where they lie, no copy (the
 * copy cost as much CPU as the pipe's reads: benchmarks/results/encrypt.md); the rest
 * goes into the ring, then written. */
static gboolean
stage_sink(gpointer data, const void *buf, gsize len, GError **error)
{
    IohUringStage *s = data;
    const char *p = buf;
    gsize align = s->c->dst->align;

    if (s->c->dst->direct && s->put == s->sub && len >= align && len % align == 0 &&
        (guintptr)p % align == 0) {
        return stage_sink_in_place(s, p, len, error);
    }
    while (len > 0) {
        gsize off = (gsize)(s->put % s->size);
        gsize free_bytes = s->size - (gsize)(s->put - s->done);
        gsize n = MIN(len, MIN(free_bytes, s->size - off));

        if (n == 0) {
            if (!stage_wait(s, error)) {
                return FALSE;
            }
            continue;
        }
        memcpy(s->mem + off, p, n);
        s->put += n;
        p += n;
        len -= n;
        stage_queue(s, FALSE);
    }
    return stage_ok(s, error);
}

void
ioh_uring_stage_link(IohUringStage *s, const IohUringLink *link)
{
    IohCopy *c = s->c;

    s->link = *link;
    ioh_filter_chain_set_sink(c->filters, c->dst->name, c->dst->direct ? c->align : 1,
                              stage_sink, NULL, s);
}

gboolean
ioh_uring_stage_feed(IohUringStage *s, const char *mem, gsize size, guint64 *from,
                     guint64 to, gboolean eof, GError **error)
{
    stage_queue(s, FALSE);    /* a write to redo (a short one, EAGAIN) */
    while (*from < to) {
        gsize off = (gsize)(*from % size);
        gsize len = (gsize)MIN(to - *from, (guint64)(size - off));

        if (len < s->span && off + len < size && !eof) {
            break;    /* a span at a time: the filters' batches, the reads' room */
        }
        len = MIN(len, s->span);
        if (!ioh_copy_deliver(s->c, mem + off, len, FALSE, error)) {
            return FALSE;
        }
        *from += len;
    }
    return stage_ok(s, error);
}

gboolean
ioh_uring_stage_end(IohUringStage *s, GError **error)
{
    IohCopy *c = s->c;
    gsize tail;

    if (!ioh_filter_chain_flush(c->filters, error)) {
        return FALSE;
    }
    for (;;) {
        stage_queue(s, TRUE);
        if (!stage_ok(s, error)) {
            return FALSE;
        }
        if (s->wn == 0) {
            break;
        }
        if (!s->link.wait(s->link.data)) {
            return stage_ok(s, error);
        }
    }
    /* Less than the alignment is left: through the page cache, as without filters. */
    tail = (gsize)(s->put - s->sub);
    if (tail > 0 && !ioh_uring_write_through(c, s->mem, s->size, s->sub, tail, error)) {
        return FALSE;
    }
    ioh_copy_stored(c, tail);
    s->sub = s->done = s->put;
    ioh_copy_route_filters(c);
    return TRUE;
}

void
ioh_uring_stage_free(IohUringStage *s)
{
    if (!s) {
        return;
    }
    ioh_copy_route_filters(s->c);
    free(s->mem);
    g_free(s);
}

void
ioh_uring_write_retired(IohCopy *c, IohUringWrite *w)
{
    c->stats->synced += w->synced;
    w->synced = 0;
}

gboolean
ioh_uring_write_done(IohCopy *c, IohUringWrite *w, int res, gboolean failed,
                     IohUringThroughFunc through, IohUringFailFunc fail, gpointer data)
{
    GError *err = NULL;

    c->stats->writes++;
    w->busy = FALSE;
    if (failed) {
        return FALSE;
    }
    if (res == -EAGAIN || res == -EINTR) {
        w->queued = TRUE;
    } else if (res == -EINVAL && w->direct) {
        /* The sink tells a clipped write at RLIMIT_FSIZE (EFBIG) from a refusal. What the
         * write was submitted with counts, not the mode now: another write's EINVAL,
         * handled first in the same batch, may have had the sink clear O_DIRECT (an
         * unaligned rest), and this one's refusal is then no error of its own. */
        guint64 synced = c->stats->synced;

        if (through(data, w, &err)) {
            w->start += w->len;
            w->len = 0;
        }
        /* The sink counted what it wrote O_DIRECT as synced at once: it counts when this
         * write retires, in stream order with stored, like the write's own bytes. */
        w->synced += c->stats->synced - synced;
        c->stats->synced = synced;
    } else if (res <= 0) {
        ioh_error_set_errno(&err, res < 0 ? -res : EIO, "write", c->dst->name);
    } else {
        w->synced += w->direct ? (guint64)res : 0;
        w->start += (guint64)res;
        w->len -= (gsize)res;
        w->queued = w->len > 0;    /* a short write: the rest again */
    }
    if (err) {
        fail(data, err);
        return FALSE;
    }
    return TRUE;
}

gboolean
ioh_uring_write_through(IohCopy *c, const char *mem, gsize size, guint64 start, gsize len,
                        GError **error)
{
    if (lseek(c->dst->fd, (off_t)(c->dst_start + start), SEEK_SET) < 0) {
        return ioh_error_set_errno(error, errno, "seek", c->dst->name);
    }
    while (len > 0) {
        gsize off = (gsize)(start % size);
        gsize now = MIN(len, size - off);

        if (!c->sink->write(c, mem + off, now, error)) {
            return FALSE;
        }
        start += now;
        len -= now;
    }
    return TRUE;
}
