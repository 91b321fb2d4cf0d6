/* ioh-ring.c - the ring shared by reader threads and the writer (the calling thread),
 * for the ring and parallel strategies
 *
 * Slots are numbered by monotonic counters: [drained, filled) hold data in stream order,
 * [filled, claimed) are being read (several at once by parallel readers, each completing
 * in any order: `done`), and [claimed, drained + n) are free. Slot s holds stream bytes
 * from s * slot on.
 *
 * The first error of any thread is kept and stops the others: the writer sees it at its
 * next slot; a reader of a stream waits in poll() on the stream and the copy's cancel, so
 * it wakes even when the producer has stalled. None blocks forever when an end dies: a
 * killed producer is EOF, a consumer gone is EPIPE.
 */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <unistd.h>

/* An O_DIRECT destination gets consecutive full slots coalesced into one write, up to
 * this many: 4 MiB with the default buffers, measured 8-10% faster than 2 MiB (fio psync
 * qd1, 1/2/4 MiB: 1.62/1.73/1.94 GB/s) and no slower than 8 MiB. More writes in flight
 * would not help: extending O_DIRECT writes hold ext4's inode lock for their duration. */
#define IOH_RING_MAX_SPAN 4

typedef struct {
    IohCopy *c;
    gsize *len;              /* bytes held by each slot (slot, except the last of a stream) */
    gboolean *done;          /* read complete, not yet drained */
    GMutex lock;
    GCond cond;
    guint n;                 /* slots */
    guint readers;           /* reader threads */
    guint64 claimed;         /* slots taken by a reader */
    guint64 filled;          /* slots handed to the writer (all done, in order) */
    guint64 end_seq;         /* first slot past the end of the stream, once known */
    guint64 drained;         /* slots handed back to the readers */
    gboolean eof;            /* filled == end_seq: the writer drains what is left */
    gboolean stop;           /* an error happened: every thread leaves */
    GError *error;           /* the first error */
} IohRing;

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
    gboolean ok;

    g_mutex_lock(&r->lock);
    while (!r->stop && r->claimed < r->end_seq && r->claimed - r->drained == r->n) {
        g_cond_wait(&r->cond, &r->lock);
    }
    if (!r->stop && opts->has_length && r->claimed * r->c->slot >= opts->length) {
        r->end_seq = MIN(r->end_seq, r->claimed);
        ring_advance(r);
    }
    ok = !r->stop && r->claimed < r->end_seq;
    if (ok) {
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
        char *buf = c->mem + (seq % r->n) * c->slot;
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

/* Waits for filled slots: how many to write at once (0 at the end, -1 on a stop), and
 * their bytes. Only full slots are contiguous with what follows: a short one ends the run.
 * O_DIRECT writes half the ring at most, so the readers always have the other half; a
 * pipe or the page cache is best given one slot at a time. */
static int
ring_take(IohRing *r, guint span, gsize *ret_len)
{
    guint64 idx, avail;
    guint k, i;
    gsize len = 0;

    g_mutex_lock(&r->lock);
    while (!r->stop && !r->eof && r->filled == r->drained) {
        g_cond_wait(&r->cond, &r->lock);
    }
    r->c->stats->reads = __atomic_load_n(&r->c->reads, __ATOMIC_RELAXED);
    if (r->stop || r->filled == r->drained) {
        g_mutex_unlock(&r->lock);
        return r->stop ? -1 : 0;
    }
    idx = r->drained % r->n;
    avail = MIN(r->filled - r->drained, (guint64)(r->n - idx));
    k = (guint)MIN(avail, (guint64)span);
    for (i = 0; i < k && (i == 0 || r->len[idx + i - 1] == r->c->slot); i++) {
        len += r->len[idx + i];
    }
    g_mutex_unlock(&r->lock);
    *ret_len = len;
    return (int)i;
}

/* Hands @k slots back to the readers. */
static void
ring_give_back(IohRing *r, guint k)
{
    g_mutex_lock(&r->lock);
    for (guint i = 0; i < k; i++) {
        r->done[(r->drained + i) % r->n] = FALSE;
    }
    r->drained += k;
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
}

/* The writer: delivers filled slots until the readers' EOF or a stop. FALSE when the
 * ring stopped; the error is the ring's. */
static gboolean
writer_loop(IohRing *r)
{
    IohCopy *c = r->c;
    guint span = c->dst->direct ? CLAMP(r->n / 2, 1, IOH_RING_MAX_SPAN) : 1;

    for (;;) {
        GError *err = NULL;
        gsize len = 0;
        int k = ring_take(r, span, &len);

        if (k <= 0) {
            return k == 0;
        }
        if (!ioh_copy_deliver(c, c->mem + (r->drained % r->n) * c->slot, len, FALSE, &err)) {
            ring_fail(r, err);
            return FALSE;
        }
        if (g_cancellable_is_cancelled(c->cancel)) {
            return FALSE;
        }
        ring_give_back(r, (guint)k);
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
    IohRing r = { .c = c, .len = len, .done = done, .n = c->nslots, .readers = n,
                  .end_seq = G_MAXUINT64 };
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    gboolean ok;
    gulong handler;

    /* Held for the whole copy: each wait borrows the cancel's fd without making it anew. */
    c->cancel = cancel;
    g_cancellable_get_fd(cancel);
    g_mutex_init(&r.lock);
    g_cond_init(&r.cond);
    handler = c->opts->cancellable ? g_cancellable_connect(c->opts->cancellable,
                                                           G_CALLBACK(on_cancelled), &r, NULL)
                                   : 0;
    g_debug("strategy: ring of %u buffers of %zu bytes, %u reader thread%s, writes of up to "
            "%u buffers", r.n, c->slot, n, n == 1 ? "" : "s",
            c->dst->direct ? CLAMP(r.n / 2, 1, IOH_RING_MAX_SPAN) : 1);
    ok = ring_threads(&r, readers);
    g_cancellable_disconnect(c->opts->cancellable, handler);
    c->stats->reads = __atomic_load_n(&c->reads, __ATOMIC_RELAXED);
    g_mutex_clear(&r.lock);
    g_cond_clear(&r.cond);
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
