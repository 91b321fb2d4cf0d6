/* ioh-strategy-parallel-splice.c - a restore from an O_DIRECT file into a pipe, no filter:
 * parallel readers, each splicing into a pipe of its own that the writer splices into the
 * output pipe (no copy through the helper, no page cache) (ioh-strategy-parallel-splice.h)
 *
 * splice(2) out of an O_DIRECT file reads straight from the disk into pages the kernel
 * allocates and puts into the pipe (Linux >= 6.5; before, through the file's read path);
 * the writer then moves those pages into the output pipe by reference. Slot s (chunk
 * bytes at s * chunk) is reader s % n's; a reader reads its next slot once the writer has
 * emptied its pipe, so up to n reads are in flight while the writer waits on the
 * consumer. Where the kernel refuses to splice out of the file (EINVAL), the parallel
 * strategy's ring goes on from the first byte the writer has not passed on.
 */
#include "ioh-strategy-parallel-splice.h"
#include "ioh-error.h"
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

/* A private pipe smaller than this is not worth a splice per chunk: the ring instead. */
#define IOH_PSPLICE_MIN_CHUNK (64 * 1024)

typedef struct _IohPsplice IohPsplice;

/* One reader of the splice path: its fd, its pipe, the slot its pipe holds. */
typedef struct {
    IohPsplice *ps;
    IohReader *rd;
    int pipe[2];
    guint64 seq;             /* the slot in the pipe, while full */
    gsize len;               /* its bytes */
    gboolean last;           /* the slot's last piece (a short read leaves more to come) */
    gboolean full;           /* read, not yet spliced on by the writer */
} IohPspliceReader;

struct _IohPsplice {
    IohCopy *c;
    IohPspliceReader rds[IOH_PSPLICE_MAX_READERS];
    guint n;
    gsize chunk;             /* bytes per slot: what every private pipe holds */
    guint64 splices;         /* splice calls, all threads (atomic) */
    GMutex lock;
    GCond cond;
    guint64 total;           /* the stream's bytes: the file's from src_start */
    guint64 end_seq;         /* first slot past the end of the stream */
    gboolean stop;
    gboolean refused;        /* the kernel refused a splice out of the file (EINVAL) */
    GError *error;           /* the first error */
};

/* Keeps @err as the first error and stops every thread. */
static void
psplice_fail(IohPsplice *ps, GError *err, gboolean refused)
{
    g_mutex_lock(&ps->lock);
    if (!ps->error && !ps->stop) {
        ps->error = g_steal_pointer(&err);
        ps->refused = refused;
    }
    ps->stop = TRUE;
    g_cond_broadcast(&ps->cond);
    g_mutex_unlock(&ps->lock);
    g_clear_error(&err);
}

/* A splice call done: counted as a read and a write (ioh-stats.h). */
static void
psplice_count(IohPsplice *ps)
{
    ioh_copy_count_read(ps->c);
    __atomic_fetch_add(&ps->splices, 1, __ATOMIC_RELAXED);
}

/* An O_DIRECT read that ended off alignment (a short read) goes on through the cache. */
static gboolean
psplice_clear_direct(IohPspliceReader *r, GError **error)
{
    int fl = fcntl(r->rd->fd, F_GETFL);

    if (fl < 0 || fcntl(r->rd->fd, F_SETFL, fl & ~O_DIRECT) < 0) {
        return ioh_error_set_errno(error, errno, "fcntl", r->ps->c->src->name);
    }
    r->rd->direct = FALSE;
    return TRUE;
}

/* One splice of the file from stream offset @pos into the reader's pipe, which is empty
 * (so it never waits, nor fills up): at most @want bytes, 0 at the end of the file, -1
 * with @error set (*@ret_refused: the kernel refused, EINVAL). An O_DIRECT read asks whole
 * blocks; at the end of the file it gets what is there. */
static gssize
psplice_piece(IohPspliceReader *r, guint64 pos, gsize want, gboolean *ret_refused,
              GError **error)
{
    IohCopy *c = r->ps->c;

    if (r->rd->direct && pos % c->src->align != 0 && !psplice_clear_direct(r, error)) {
        return -1;
    }
    if (lseek(r->rd->fd, (off_t)(c->src_start + pos), SEEK_SET) < 0) {
        ioh_error_set_errno(error, errno, "seek", c->src->name);
        return -1;
    }
    for (;;) {
        gsize ask = r->rd->direct ? IOH_ALIGN_UP(want, c->src->align) : want;
        gssize n = splice(r->rd->fd, NULL, r->pipe[1], NULL, ask, SPLICE_F_MOVE);

        psplice_count(r->ps);
        if (n >= 0) {
            return (gssize)MIN((gsize)n, want);
        }
        *ret_refused = errno == EINVAL;
        if (!ioh_copy_retry(c, errno, r->pipe[1], POLLOUT, "read", c->src->name, error)) {
            return -1;
        }
    }
}

/* Waits until the reader's pipe is empty; FALSE on a stop or past the end. */
static gboolean
psplice_wait_empty(IohPspliceReader *r, guint64 seq)
{
    IohPsplice *ps = r->ps;
    gboolean ok;

    g_mutex_lock(&ps->lock);
    while (!ps->stop && r->full) {
        g_cond_wait(&ps->cond, &ps->lock);
    }
    ok = !ps->stop && seq < ps->end_seq;
    g_mutex_unlock(&ps->lock);
    return ok;
}

/* Hands the @len bytes in the reader's pipe to the writer: a piece of slot @seq, its last
 * when @last (@have bytes of it in all: fewer than the slot's when the file shrank). */
static void
psplice_hand_over(IohPspliceReader *r, guint64 seq, gsize len, gsize have, gboolean last)
{
    IohPsplice *ps = r->ps;

    g_mutex_lock(&ps->lock);
    r->seq = seq;
    r->len = len;
    r->last = last;
    r->full = TRUE;
    if (last && len == 0) {
        ps->end_seq = MIN(ps->end_seq, have > 0 ? seq + 1 : seq);    /* it shrank */
    }
    g_cond_broadcast(&ps->cond);
    g_mutex_unlock(&ps->lock);
}

/* A reader thread: slots i, i + n, i + 2n, ... until the end of the stream or a stop.
 * A slot is one splice, or several pieces after short ones, each handed over alone. */
static gpointer
psplice_reader_main(gpointer data)
{
    IohPspliceReader *r = data;
    IohPsplice *ps = r->ps;

    for (guint64 seq = (guint64)(r - ps->rds);; seq += ps->n) {
        guint64 base = seq * ps->chunk;
        gsize want = (gsize)MIN((guint64)ps->chunk, ps->total - MIN(ps->total, base));
        gsize have = 0;
        gssize got;

        do {
            GError *err = NULL;
            gboolean refused = FALSE;

            if (!psplice_wait_empty(r, seq)) {
                return NULL;
            }
            got = psplice_piece(r, base + have, want - have, &refused, &err);
            if (got < 0) {
                psplice_fail(ps, err, refused);
                return NULL;
            }
            have += (gsize)got;
            psplice_hand_over(r, seq, (gsize)got, have, got == 0 || have == want);
        } while (got > 0 && have < want);
    }
}

/* Moves the @len bytes of @r's pipe into the output pipe. */
static gboolean
psplice_drain(IohPspliceReader *r, gsize len, GError **error)
{
    IohCopy *c = r->ps->c;

    while (len > 0) {
        gssize n = splice(r->pipe[0], NULL, c->dst->fd, NULL, len, SPLICE_F_MOVE);

        psplice_count(r->ps);
        if (n < 0) {
            if (!ioh_copy_retry(c, errno, c->dst->fd, POLLOUT, "write", c->dst->name, error)) {
                return FALSE;
            }
            continue;
        }
        if (n == 0) {
            return ioh_error_set(error, EIO, "write", c->dst->name, "the pipe gave no bytes");
        }
        len -= (gsize)n;
        if (!ioh_copy_moved(c, (gsize)n, FALSE, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The stats' counts from the splices so far: each a read and a write. */
static void
psplice_sync_stats(IohPsplice *ps)
{
    IohStats *st = ps->c->stats;

    st->reads = __atomic_load_n(&ps->c->reads, __ATOMIC_RELAXED);
    st->splices = __atomic_load_n(&ps->splices, __ATOMIC_RELAXED);
    st->writes = st->splices;
}

/* Waits for slot @seq in its reader's pipe: the reader, NULL at the end or on a stop. */
static IohPspliceReader *
psplice_wait_full(IohPsplice *ps, guint64 seq)
{
    IohPspliceReader *r = &ps->rds[seq % ps->n];

    g_mutex_lock(&ps->lock);
    while (!ps->stop && seq < ps->end_seq && !(r->full && r->seq == seq)) {
        g_cond_wait(&ps->cond, &ps->lock);
    }
    if (ps->stop || seq >= ps->end_seq || !(r->full && r->seq == seq)) {
        r = NULL;
    }
    g_mutex_unlock(&ps->lock);
    return r;
}

/* The writer: every slot in stream order, until the end (TRUE) or a stop. */
static gboolean
psplice_writer(IohPsplice *ps)
{
    for (guint64 seq = 0;;) {
        GError *err = NULL;
        IohPspliceReader *r = psplice_wait_full(ps, seq);
        gboolean last;

        if (!r) {
            return !ps->stop;    /* the end, or a stop (then the error is the first) */
        }
        if (!ioh_error_check_cancellable(ps->c->opts->cancellable, "copy", NULL, &err) ||
            !psplice_drain(r, r->len, &err)) {
            psplice_fail(ps, err, FALSE);
            return FALSE;
        }
        g_mutex_lock(&ps->lock);
        last = r->last;
        r->full = FALSE;
        g_cond_broadcast(&ps->cond);
        g_mutex_unlock(&ps->lock);
        seq += last ? 1 : 0;
        psplice_sync_stats(ps);
        ioh_copy_report_progress(ps->c, FALSE);
    }
}

/* Pipes for the @n readers, each raised to a slot; the bytes a slot of the splice path
 * has (what the smallest holds, less a page), 0 when one could not be made or raised
 * enough. */
static gsize
psplice_pipes(IohPsplice *ps, IohReader *rds, guint n)
{
    gsize chunk = ps->c->slot;

    for (guint i = 0; i < n; i++) {
        ps->rds[i] = (IohPspliceReader){ .ps = ps, .rd = &rds[i], .pipe = { -1, -1 } };
    }
    for (guint i = 0; i < n; i++) {
        IohPspliceReader *r = &ps->rds[i];
        int got;

        if (pipe2(r->pipe, O_CLOEXEC) < 0) {
            return 0;
        }
        got = ioh_pipe_raise(r->pipe[1], (guint)MIN(ps->c->slot, G_MAXINT));
        if (got <= 0) {
            got = fcntl(r->pipe[1], F_GETPIPE_SZ);
        }
        chunk = MIN(chunk, (gsize)MAX(got, 0));
    }
    /* A page to spare: a short read off a page boundary takes a pipe buffer of its own. */
    chunk = IOH_ALIGN_DOWN(chunk - MIN(chunk, 4096), MAX(ps->c->src->align, 4096));
    return chunk >= IOH_PSPLICE_MIN_CHUNK ? chunk : 0;
}

/* The ring's O_DIRECT readers can go on from the bytes delivered so far. */
static gboolean
psplice_resumable(const IohCopy *c)
{
    return (c->src_start + c->in) % c->src->align == 0;
}

/* Runs the readers and the writer: 1 done, 0 refused (the ring goes on from c->in), -1
 * failed. */
static int
psplice_threads(IohPsplice *ps, GError **error)
{
    GThread *threads[IOH_PSPLICE_MAX_READERS] = { NULL };
    gboolean whole;

    for (guint i = 0; i < ps->n; i++) {
        GError *err = NULL;

        threads[i] = g_thread_try_new("ioh-reader", psplice_reader_main, &ps->rds[i], &err);
        if (!threads[i]) {
            psplice_fail(ps, err, FALSE);
        }
    }
    whole = psplice_writer(ps);
    psplice_fail(ps, NULL, FALSE);    /* the readers stop */
    for (guint i = 0; i < ps->n; i++) {
        if (threads[i]) {
            g_thread_join(threads[i]);
        }
    }
    psplice_sync_stats(ps);
    /* A reader's read past the end may have failed after the stream was whole. */
    if (whole || !ps->error) {
        return 1;
    }
    if (ps->refused && psplice_resumable(ps->c)) {
        return 0;
    }
    g_propagate_error(error, g_steal_pointer(&ps->error));
    return -1;
}

/* How many of @want readers the memory account (ioh-mem-account.h) lets fill a pipe: the first is
 * outside it, as the ring's first buffer is; the others' share it takes. */
static guint
psplice_budget(IohCopy *c, guint want)
{
    guint64 got;

    ioh_mem_floor(c->opts->memory, "readers", 0, (guint64)(want - 1) * c->slot);
    got = ioh_mem_grow(c->opts->memory, "readers", (guint64)(want - 1) * c->slot, c->slot);
    return 1 + (guint)(got / c->slot);
}

int
ioh_psplice_run(IohCopy *c, IohReader *rds, guint n, GError **error)
{
    IohPsplice ps = { .c = c, .n = psplice_budget(c, n) };
    int ret = 0;

    off_t end = lseek(rds[0].fd, 0, SEEK_END);

    ps.chunk = psplice_pipes(&ps, rds, ps.n);
    if (ps.chunk > 0 && end >= 0) {
        ps.total = (guint64)end > c->src_start ? (guint64)end - c->src_start : 0;
        ps.end_seq = (ps.total + ps.chunk - 1) / ps.chunk;
        g_mutex_init(&ps.lock);
        g_cond_init(&ps.cond);
        g_debug("strategy: %u O_DIRECT readers splicing %zu bytes each into pipes of their "
                "own, spliced on into the output pipe", ps.n, ps.chunk);
        ret = psplice_threads(&ps, error);
        g_clear_error(&ps.error);
        g_mutex_clear(&ps.lock);
        g_cond_clear(&ps.cond);
        if (ret == 0) {
            g_debug("splice out of the O_DIRECT file refused (EINVAL): the ring from byte %"
                    G_GUINT64_FORMAT, c->in);
        }
    }
    for (guint i = 0; i < ps.n; i++) {
        if (ps.rds[i].pipe[0] >= 0) {
            close(ps.rds[i].pipe[0]);
            close(ps.rds[i].pipe[1]);
        }
    }
    ioh_mem_shrink(c->opts->memory, "readers", (guint64)(ps.n - 1) * c->slot);
    return ret;
}

gboolean
ioh_psplice_fits(const IohCopy *c)
{
    return c->dst->kind == IOH_KIND_PIPE && !(c->opts->filters && c->opts->filters[0]) &&
           !c->opts->has_length && c->src->align > 0 && c->src_start % c->src->align == 0;
}

