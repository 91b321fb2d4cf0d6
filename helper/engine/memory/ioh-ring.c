/* ioh-ring.c - the ring shared by reader threads and the writer (the calling thread),
 * for the ring and parallel strategies (ioh-ring.h)
 *
 * Slots are numbered by monotonic counters: [drained, filled) hold data in stream order,
 * [filled, claimed) are being read (several at once by parallel readers, each completing
 * in any order: `done`), and [claimed, drained + n) are free. Slot s holds stream bytes
 * from s * slot on, in the buffer map[s % n] of c->mem. Buffers are handed out from a
 * queue of free ones in the order they came back, so consecutive slots mostly sit in
 * consecutive buffers, which an O_DIRECT destination writes at once. How many buffers the
 * ring has, and their memory, is ioh-ring-sizing.c's.
 *
 * The first error of any thread is kept and stops the others: the writer sees it at its
 * next slot; a reader of a stream waits in poll() on the stream and the copy's cancel, so
 * it wakes even when the producer has stalled. None blocks forever when an end dies: a
 * killed producer is EOF, a consumer gone is EPIPE.
 */
#include "ioh-ring.h"
#include "ioh-ring-sizing.h"
#include "ioh-error.h"
#include "ioh-pipe-edge.h"

/* An O_DIRECT destination gets consecutive full slots coalesced into one write, up to this
 * many: 4 MiB with the default buffers, faster than 2 MiB at one write in flight and no
 * slower than 8 MiB (docs/benchmarks.md, "Engine A/Bs: Ring"). More writes in flight would
 * not help: extending O_DIRECT writes hold ext4's inode lock for their duration. */
#define IOH_RING_MAX_SPAN 4

/* Nothing to write for this long is a stall: the ring shrinks to one buffer. */
#define IOH_RING_STALL_US G_USEC_PER_SEC

typedef struct {
    IohRing *r;
    IohReader *rd;
} IohRingReader;

/* Keeps @err as the ring's error if it is the first, and stops every thread. */
static void
ring_fail(IohRing *r, GError *err)
{
    g_mutex_lock(&r->lock);
    if (!r->error) {
        r->error = g_steal_pointer(&err);
    }
    r->stop = TRUE;
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
    g_clear_error(&err);
    g_cancellable_cancel(r->c->cancel);
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

/* Waits for a free slot and claims it; FALSE at the end of the stream or on a stop. */
static gboolean
ring_claim(IohRing *r, guint64 *ret_seq)
{
    const IohCopyOptions *opts = r->c->opts;
    gint64 since = 0;
    gboolean ok;

    g_mutex_lock(&r->lock);
    while (!r->stop && r->claimed < r->end_seq && r->nfree == 0) {
        since = since ? since : g_get_monotonic_time();
        g_cond_wait(&r->cond, &r->lock);
    }
    r->full_us += since ? g_get_monotonic_time() - since : 0;
    if (!r->stop && opts->has_length && r->claimed * r->c->slot >= opts->length) {
        r->end_seq = MIN(r->end_seq, r->claimed);
        ring_advance(r);
    }
    ok = !r->stop && r->claimed < r->end_seq;
    if (ok) {
        r->map[r->claimed % r->n] = r->pool[r->head];
        r->head = (r->head + 1) % r->n;
        r->nfree--;
        *ret_seq = r->claimed++;
    }
    g_mutex_unlock(&r->lock);
    return ok;
}

/* A reader thread: claims the next free slot, fills it from the source, hands it over in
 * stream order; until EOF, the length, or a stop. One reader reads at the fd's position;
 * parallel readers (O_DIRECT storage) read their slot's own offset. */
static gpointer
reader_main(gpointer data)
{
    IohRingReader *rr = data;
    IohRing *r = rr->r;
    IohCopy *c = r->c;
    guint64 seq;

    while (ring_claim(r, &seq)) {
        GError *err = NULL;
        guint64 off = seq * c->slot;
        gsize want = c->opts->has_length ? (gsize)MIN((guint64)c->slot, c->opts->length - off)
                                         : c->slot;
        char *buf = c->mem + (gsize)r->map[seq % r->n] * c->slot;
        gssize got = c->source->read(rr->rd, buf, want, r->readers > 1 ? (gint64)off : -1,
                                     &err);

        if (got < 0) {
            if (err) {
                ring_fail(r, err);
            }
            break;
        }
        g_mutex_lock(&r->lock);
        r->len[seq % r->n] = (gsize)got;
        r->done[seq % r->n] = TRUE;
        if ((gsize)got < c->slot) {
            /* The stream ends in this slot (or before it, when it is empty). */
            r->end_seq = MIN(r->end_seq, got > 0 ? seq + 1 : seq);
        }
        ring_advance(r);
        g_mutex_unlock(&r->lock);
    }
    return NULL;
}

/* Waits for filled slots: how many to write at once (0 at the end, -1 on a stop, -2
 * after a stall), their first buffer and their bytes. Only full slots in consecutive
 * buffers are one run: a short one ends it. O_DIRECT writes half the ring at most, so the
 * readers always have the other half; a pipe or the page cache is best given one slot at
 * a time (@direct FALSE). */
static int
ring_take(IohRing *r, gboolean direct, guint *ret_buf, gsize *ret_len)
{
    gint64 since = 0;
    gboolean stalled = FALSE;
    guint64 avail;
    guint span, k, i, first;
    gsize len = 0;

    g_mutex_lock(&r->lock);
    while (!stalled && !r->stop && !r->eof && r->filled == r->drained) {
        since = since ? since : g_get_monotonic_time();
        stalled = !g_cond_wait_until(&r->cond, &r->lock, since + IOH_RING_STALL_US);
    }
    r->empty_us += since ? g_get_monotonic_time() - since : 0;
    if (stalled) {
        g_mutex_unlock(&r->lock);
        return -2;
    }
    r->c->stats->reads = __atomic_load_n(&r->c->reads, __ATOMIC_RELAXED);
    if (r->stop || r->filled == r->drained) {
        g_mutex_unlock(&r->lock);
        return r->stop ? -1 : 0;
    }
    span = direct ? CLAMP(r->cap / 2, 1, IOH_RING_MAX_SPAN) : 1;
    avail = r->filled - r->drained;
    k = (guint)MIN(avail, (guint64)span);
    first = r->map[r->drained % r->n];
    for (i = 0; i < k && (i == 0 || (r->len[(r->drained + i - 1) % r->n] == r->c->slot &&
                                     r->map[(r->drained + i) % r->n] == first + i)); i++) {
        len += r->len[(r->drained + i) % r->n];
    }
    g_mutex_unlock(&r->lock);
    *ret_buf = first;
    *ret_len = len;
    return (int)i;
}

/* Hands @k slots' buffers back to the readers. */
static void
ring_give_back(IohRing *r, guint k)
{
    g_mutex_lock(&r->lock);
    for (guint i = 0; i < k; i++) {
        r->done[(r->drained + i) % r->n] = FALSE;
        r->pool[(r->head + r->nfree) % r->n] = r->map[(r->drained + i) % r->n];
        r->nfree++;
    }
    r->drained += k;
    r->takes++;
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
}

/* The writer: delivers filled slots until the readers' EOF or a stop. FALSE when the
 * ring stopped; the error is the ring's. */
static gboolean
writer_loop(IohRing *r)
{
    IohCopy *c = r->c;

    for (;;) {
        GError *err = NULL;
        gsize len = 0;
        guint buf = 0;
        int k = ring_take(r, c->dst->direct, &buf, &len);

        if (k == -2) {
            ioh_ring_sizing_shrink(r, 1, "a stall: nothing to write for a second");
            continue;
        }
        if (k <= 0) {
            return k == 0;
        }
        if (!ioh_copy_deliver(c, c->mem + (gsize)buf * c->slot, len, FALSE, &err)) {
            ring_fail(r, err);
            return FALSE;
        }
        if (g_cancellable_is_cancelled(c->cancel)) {
            return FALSE;
        }
        ring_give_back(r, (guint)k);
        ioh_ring_sizing_adapt(r);
        ioh_copy_report_progress(c, FALSE);
    }
}

/* Starts the readers, writes, joins them. FALSE when the ring stopped. */
static gboolean
ring_threads(IohRing *r, IohReader *readers)
{
    GThread *threads[IOH_MAX_READERS] = { NULL };
    IohRingReader rr[IOH_MAX_READERS];
    gboolean ok;

    for (guint i = 0; i < r->readers; i++) {
        GError *err = NULL;

        rr[i] = (IohRingReader){ .r = r, .rd = &readers[i] };
        threads[i] = g_thread_try_new("ioh-reader", reader_main, &rr[i], &err);
        if (!threads[i]) {
            ring_fail(r, err);
        }
    }
    ok = writer_loop(r);
    for (guint i = 0; i < r->readers; i++) {
        if (threads[i]) {
            g_thread_join(threads[i]);
        }
    }
    return ok;
}

/* The caller's cancellable stops the ring like an error of its own. */
static void
on_cancelled(GCancellable *cancellable, gpointer data)
{
    GError *err = NULL;

    (void)cancellable;
    ioh_error_set_cancelled(&err, "copy", NULL);
    ring_fail(data, err);
}

gboolean
ioh_ring_run(IohCopy *c, IohReader *readers, guint n, GError **error)
{
    g_autofree gsize *len = g_new0(gsize, c->nslots);
    g_autofree gboolean *done = g_new0(gboolean, c->nslots);
    g_autofree guint *map = g_new0(guint, c->nslots);
    g_autofree guint *pool = g_new0(guint, c->nslots);
    g_autofree gboolean *used = g_new0(gboolean, c->nslots);
    g_autofree gboolean *huge = g_new0(gboolean, c->nslots);
    g_autofree guint64 *charge = g_new0(guint64, c->nslots);
    IohRing r = { .c = c, .len = len, .done = done, .map = map, .pool = pool, .used = used,
                  .huge = huge, .charge = charge, .n = c->nslots,
                  .readers = n, .end_seq = G_MAXUINT64 };
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    IohPipeEdge edge;
    gboolean ok;
    gulong handler;

    /* Held for the whole copy: each wait borrows the cancel's fd without making it anew. */
    c->cancel = cancel;
    c->edge = ioh_pipe_edge_open(c, n, g_cancellable_get_fd(cancel), &edge) ? &edge : NULL;
    g_mutex_init(&r.lock);
    g_cond_init(&r.cond);
    ioh_ring_sizing_start(&r);
    handler = c->opts->cancellable ? g_cancellable_connect(c->opts->cancellable,
                                                           G_CALLBACK(on_cancelled), &r, NULL)
                                   : 0;
    g_debug("strategy: ring of %u buffers of %zu bytes (up to %u), %u reader thread%s, "
            "O_DIRECT writes of up to half the ring (at most %u buffers)", r.cap, c->slot,
            r.n, n, n == 1 ? "" : "s", IOH_RING_MAX_SPAN);
    ok = ring_threads(&r, readers);
    g_cancellable_disconnect(c->opts->cancellable, handler);
    ioh_ring_sizing_end(&r);
    c->stats->reads = __atomic_load_n(&c->reads, __ATOMIC_RELAXED);
    g_mutex_clear(&r.lock);
    g_cond_clear(&r.cond);
    ioh_pipe_edge_close(c->edge);
    c->edge = NULL;
    g_cancellable_release_fd(cancel);
    c->cancel = NULL;
    if (!ok) {
        g_propagate_error(error, g_steal_pointer(&r.error));
        return FALSE;
    }
    /* A parallel reader's read past the end may have failed after the stream was whole. */
    g_clear_error(&r.error);
    return TRUE;
}
