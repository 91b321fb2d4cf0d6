/* ioh-ring.c - the ring shared by reader threads and the writer (the calling thread),
 * for the ring and parallel strategies
 *
 * Slots are numbered by monotonic counters: [drained, filled) hold data in stream order,
 * [filled, claimed) are being read (several at once by parallel readers, each completing
 * in any order: `done`), and [claimed, drained + n) are free. Slot s holds stream bytes
 * from s * slot on, in the buffer map[s % n] of c->mem.
 *
 * The ring grows and shrinks (docs/engine.md): it starts with two buffers (the readers'
 * number for parallel readers) out of the n allocated, and the writer adds one while it
 * is the bottleneck (a reader waited for a free buffer, the writer never for data) and
 * the budget (ioh-budget.h) has room for it; it drops a free one when the ring stays
 * mostly empty (a slow producer), and all but one when nothing came for a second (a
 * stall). A dropped buffer's pages go back to the kernel (MADV_DONTNEED) and its share of
 * the budget to the other helpers. Buffers are handed out from a queue of free ones in
 * the order they came back, so consecutive slots mostly sit in consecutive buffers, which
 * an O_DIRECT destination writes at once.
 *
 * The first error of any thread is kept and stops the others: the writer sees it at its
 * next slot; a reader of a stream waits in poll() on the stream and the copy's cancel, so
 * it wakes even when the producer has stalled. None blocks forever when an end dies: a
 * killed producer is EOF, a consumer gone is EPIPE.
 */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

/* An O_DIRECT destination gets consecutive full slots coalesced into one write, up to this
 * many: 4 MiB with the default buffers, faster than 2 MiB at one write in flight and no
 * slower than 8 MiB (docs/benchmarks.md, "Engine A/Bs: Ring"). More writes in flight would
 * not help: extending O_DIRECT writes hold ext4's inode lock for their duration. */
#define IOH_RING_MAX_SPAN 4

/* The writer looks at the waits at least this often, or every 2 x buffers slots. */
#define IOH_RING_WINDOW_US (250 * 1000)
/* A buffer the ring grew by stays at least this long: a disk that writes in bursts (the
 * cgroup blkio throttle lets 100 ms worth through, then holds every write) makes a
 * window of waiting readers, then windows of a waiting writer, over and over. */
#define IOH_RING_KEEP_US G_USEC_PER_SEC
/* Nothing to write for this long is a stall: the ring shrinks to one buffer. */
#define IOH_RING_STALL_US G_USEC_PER_SEC
/* After the budget said no, the next ask waits this long. */
#define IOH_RING_BUDGET_RETRY_US G_USEC_PER_SEC
/* A wait for the end of a write into the source pipe gives up after this long (then the
 * reader waits on the pipe as it would without: data no edge announces is never lost). */
#define IOH_RING_EDGE_MS 20

typedef struct {
    IohCopy *c;
    gsize *len;              /* bytes held by each slot (slot, except the last of a stream) */
    gboolean *done;          /* read complete, not yet drained */
    guint *map;              /* slot s is in buffer map[s % n] */
    guint *pool;             /* the free buffers, a queue: pool[(head + i) % n] */
    gboolean *used;          /* buffer i belongs to the ring (free or holding a slot) */
    guint per;               /* buffers per huge page (region), 0: no huge pages */
    gboolean *huge;          /* region i is one huge page (held while a buffer of it is in
                              * the ring) */
    guint64 *charge;         /* bytes of the budget region i holds */
    guint64 charged;         /* bytes of the budget the ring holds */
    guint head, nfree;
    guint cap;               /* buffers the ring has now (1 to n) */
    guint floor;             /* a slow producer's ring shrinks to this */
    gint64 full_us;          /* time readers waited for a free buffer (this window) */
    gint64 empty_us;         /* time the writer waited for something to write (same) */
    guint takes;             /* writes (this window) */
    gint64 window_us;        /* start of the window */
    gint64 grew_us;          /* when the ring last grew */
    gint64 budget_retry_us;  /* no ask to the budget before this */
    GMutex lock;
    GCond cond;
    guint n;                 /* slots (buffers allocated, at most in the ring) */
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

/* Buffers the allocation has in region @reg: r->per, fewer in a last region that the
 * allocation ends inside (3 buffers of 1 MiB: a huge page and one buffer). */
static guint
region_len(const IohRing *r, guint reg)
{
    return MIN(r->per, r->n - reg * r->per);
}

/* Buffers of region @reg in the ring. */
static guint
region_used(const IohRing *r, guint reg)
{
    guint k = 0;

    for (guint i = reg * r->per; i < reg * r->per + region_len(r, reg); i++) {
        k += r->used[i];
    }
    return k;
}

/* Makes region @reg one huge page or small pages, before any of its bytes is touched. */
static void
region_advise(IohRing *r, guint reg, gboolean huge)
{
    gsize slot = r->c->slot;

    r->huge[reg] = huge;
    madvise(r->c->mem + (gsize)reg * r->per * slot, (gsize)region_len(r, reg) * slot,
            huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/* The buffer to add: a vacant one of a huge page the ring holds (it adds no memory),
 * else the first unused one; *@cost: the bytes it adds, a whole huge page when it starts
 * one (a region entirely inside the allocation, none of it in the ring). */
static guint
ring_pick_unused(const IohRing *r, guint64 *cost)
{
    guint i;

    for (i = 0; r->per && i < r->n; i++) {
        if (!r->used[i] && r->huge[i / r->per] && region_used(r, i / r->per) > 0) {
            *cost = 0;
            return i;
        }
    }
    for (i = 0; r->used[i]; i++) {
    }
    *cost = r->per && region_len(r, i / r->per) == r->per && region_used(r, i / r->per) == 0
                ? (guint64)r->per * r->c->slot
                : r->c->slot;
    return i;
}

/* Takes @cost bytes from the budget (a huge page, else one buffer of small pages): the
 * bytes taken, 0 when it has no room. */
static guint64
ring_charge(IohRing *r, guint64 cost)
{
    IohMemAccount *m = r->c->opts->memory;
    guint64 got;

    if (cost == 0) {
        return cost;
    }
    got = ioh_mem_grow(m, "ring", cost, cost);
    if (got == 0 && cost > r->c->slot) {
        got = ioh_mem_grow(m, "ring", r->c->slot, r->c->slot);
    }
    return got;
}

/* Adds one buffer to the ring, when the budget has room for the memory it adds. */
static void
ring_grow(IohRing *r)
{
    gint64 now = g_get_monotonic_time();
    guint64 cost = 0;
    guint i = ring_pick_unused(r, &cost);
    guint64 got = cost;

    if (cost > 0 && (now < r->budget_retry_us || (got = ring_charge(r, cost)) == 0)) {
        r->budget_retry_us = MAX(r->budget_retry_us, now + IOH_RING_BUDGET_RETRY_US);
        return;
    }
    if (r->per && cost > 0 && region_used(r, i / r->per) == 0) {
        region_advise(r, i / r->per, got > r->c->slot);
    }
    if (r->per) {
        r->charge[i / r->per] += got;
    }
    r->charged += got;
    g_mutex_lock(&r->lock);
    r->used[i] = TRUE;
    r->pool[(r->head + r->nfree) % r->n] = i;
    r->nfree++;
    r->cap++;
    g_cond_broadcast(&r->cond);
    g_mutex_unlock(&r->lock);
    r->grew_us = now;
    g_debug("ring: grown to %u buffers of %zu bytes (the writer is the bottleneck)", r->cap,
            r->c->slot);
}

/* Which free buffer leaves the ring (its place in the pool): the one that came back last,
 * or with huge pages, the one whose huge page has the fewest others in the ring (the
 * last one out frees it). Under the lock. */
static guint
ring_pick_free(const IohRing *r)
{
    guint best = r->nfree - 1;

    for (guint k = 0; r->per && k < r->nfree; k++) {
        guint reg = r->pool[(r->head + k) % r->n] / r->per;

        if (region_used(r, reg) < region_used(r, r->pool[(r->head + best) % r->n] / r->per)) {
            best = k;
        }
    }
    return best;
}

/* Buffer @i has left the ring: returns its memory to the kernel (with huge pages, only
 * once the whole huge page has left) and the bytes to give back to the budget. */
static guint64
ring_release(IohRing *r, guint i)
{
    gsize slot = r->c->slot;
    guint reg = r->per ? i / r->per : 0;
    guint64 back;

    if (!r->per || (!r->huge[reg] && region_used(r, reg) > 0)) {
        madvise(r->c->mem + (gsize)i * slot, slot, MADV_DONTNEED);
        back = r->per ? MIN(r->charge[reg], (guint64)slot) : MIN(r->charged, (guint64)slot);
    } else if (region_used(r, reg) > 0) {
        return 0;    /* the rest of its huge page is still in the ring */
    } else {
        madvise(r->c->mem + (gsize)reg * r->per * slot, (gsize)region_len(r, reg) * slot,
                MADV_DONTNEED);
        back = r->charge[reg];
    }
    if (r->per) {
        r->charge[reg] -= back;
    }
    r->charged -= back;
    return back;
}

/* Takes free buffers out of the ring until it has @want (or none is free), returns their
 * pages to the kernel and their share to the budget. */
static void
ring_shrink(IohRing *r, guint want, const char *why)
{
    guint dropped = 0;
    guint64 back = 0;

    g_mutex_lock(&r->lock);
    while (r->cap > MAX(want, 1) && r->nfree > 0) {
        guint k = ring_pick_free(r);
        guint i = r->pool[(r->head + k) % r->n];

        for (; k + 1 < r->nfree; k++) {
            r->pool[(r->head + k) % r->n] = r->pool[(r->head + k + 1) % r->n];
        }
        r->nfree--;
        r->cap--;
        r->used[i] = FALSE;
        back += ring_release(r, i);
        dropped++;
    }
    g_mutex_unlock(&r->lock);
    if (dropped > 0) {
        if (back > 0) {
            ioh_mem_shrink(r->c->opts->memory, "ring", back);
        }
        g_debug("ring: shrunk to %u buffers (%s)", r->cap, why);
    }
}

/* After each write: once a window is over, grows the ring when readers waited for a
 * buffer a tenth of it or more and far longer than the writer waited for data; shrinks
 * it when the writer waited half of it or more, the readers hardly at all, and the ring
 * has not grown for a while. Times, not counts: a disk that writes in bursts holds the
 * readers for 100 ms once and the writer for a few short waits. */
static void
ring_adapt(IohRing *r)
{
    gint64 now = g_get_monotonic_time();
    gint64 full, empty, span = now - r->window_us;

    g_mutex_lock(&r->lock);
    full = r->full_us;
    empty = r->empty_us;
    if (r->takes < 2 * r->cap && span < IOH_RING_WINDOW_US) {
        g_mutex_unlock(&r->lock);
        return;
    }
    r->full_us = r->empty_us = 0;
    r->takes = 0;
    r->window_us = now;
    g_mutex_unlock(&r->lock);
    if (full * 10 >= span && full > 4 * empty && r->cap < r->n) {
        ring_grow(r);
    } else if (empty * 2 >= span && full * 8 < empty && r->cap > r->floor &&
               now - r->grew_us >= IOH_RING_KEEP_US) {
        ring_shrink(r, r->cap - 1, "the producer is the bottleneck");
    }
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
            ring_shrink(r, 1, "a stall: nothing to write for a second");
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
        ring_adapt(r);
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

/* Huge pages (2 MiB) for the ring when its buffers tile them and the memory is aligned
 * to them: a save's O_DIRECT writes pin each page of the buffer (`gup_fast`), the pipe's
 * bytes are copied into it, and with small pages 8 MiB of buffers miss the TLB on every
 * page. A huge page is taken (from the budget too) whole, when the ring starts using it:
 * a region of the ring is one huge page or small pages for as long as any of its buffers
 * is in the ring. */
static guint
ring_huge_per(const IohCopy *c)
{
    gsize huge = 2 * 1024 * 1024;

    if ((guintptr)c->mem % huge != 0 || (c->slot % huge != 0 && huge % c->slot != 0)) {
        return 0;
    }
    return c->slot >= huge ? 1 : (guint)(huge / c->slot);
}

/* The ring's first buffers: two (one per parallel reader), less what the budget refuses
 * beyond the first; the other buffers' pages are not the ring's until it grows. Regions
 * it fills whole are huge pages, the rest small pages. */
static void
ring_setup(IohRing *r)
{
    IohCopy *c = r->c;
    guint want = MIN(r->n, MAX(2, r->readers));
    guint64 got = ioh_mem_grow(c->opts->memory, "ring", (guint64)(want - 1) * c->slot,
                               c->slot);

    r->cap = 1 + (guint)(got / c->slot);
    r->charged = got;
    r->floor = want;
    for (guint i = 0; i < r->n; i++) {
        r->used[i] = i < r->cap;
        r->pool[i] = i;
    }
    r->nfree = r->cap;
    /* With huge pages, from the first buffer: pages the allocator touched already (a
     * reused heap, MALLOC_PERTURB_) would keep their regions in small pages. */
    if (r->n > r->cap || r->per) {
        guint from = r->per ? 0 : r->cap;

        madvise(c->mem + (gsize)from * c->slot, (gsize)(r->n - from) * c->slot, MADV_DONTNEED);
    }
    for (guint reg = 0; r->per && reg * r->per < r->cap; reg++) {
        guint in = MIN(r->cap - reg * r->per, r->per);

        region_advise(r, reg, in == r->per);
        r->charge[reg] = (guint64)in * c->slot - (reg == 0 ? c->slot : 0);
    }
    if (r->per) {
        g_debug("ring: huge pages of %u buffers, taken whole", r->per);
    }
    r->window_us = g_get_monotonic_time();
}

/* The reader of a pipe source (one reader, waiting with the cancel) waits for the end of
 * each write into the pipe before reading it again (IohPipeEdge, ioh-layer.h). Why: a
 * reader that reads as soon as the pipe is not empty finds the producer still copying
 * its write into it and spins on the pipe's lock meanwhile (`mutex_spin_on_owner`, a
 * quarter of an O_DIRECT save's CPU in perf); the producer wakes the pipe's waiters at
 * the end of each write, after the lock. FALSE when there is no such pipe, or epoll or
 * F_GETPIPE_SZ failed: the reader then waits as it always did. */
static gboolean
edge_open(IohCopy *c, guint readers, int cancel_fd, IohPipeEdge *edge)
{
    struct epoll_event pipe_ev = { .events = EPOLLIN | EPOLLET };
    struct epoll_event cancel_ev = { .events = EPOLLIN };
    int cap;

    if (readers != 1 || !c->poll_src || c->src->kind != IOH_KIND_PIPE || cancel_fd < 0 ||
        (cap = fcntl(c->src->fd, F_GETPIPE_SZ)) <= 0) {
        return FALSE;
    }
    *edge = (IohPipeEdge){ .fd = epoll_create1(EPOLL_CLOEXEC), .cap = (gsize)cap,
                           .empty = TRUE };
    if (edge->fd >= 0 && epoll_ctl(edge->fd, EPOLL_CTL_ADD, c->src->fd, &pipe_ev) == 0 &&
        epoll_ctl(edge->fd, EPOLL_CTL_ADD, cancel_fd, &cancel_ev) == 0) {
        g_debug("%s: the reader waits for the end of each write into the pipe (%d bytes)",
                c->src->name, cap);
        return TRUE;
    }
    if (edge->fd >= 0) {
        close(edge->fd);
    }
    return FALSE;
}

void
ioh_ring_wait_edge(IohCopy *c)
{
    struct epoll_event ev[2];

    /* EINTR or a timeout: the caller's wait on the pipe comes next either way. */
    (void)epoll_wait(c->edge->fd, ev, G_N_ELEMENTS(ev), IOH_RING_EDGE_MS);
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
                  .huge = huge, .charge = charge, .per = ring_huge_per(c), .n = c->nslots,
                  .readers = n, .end_seq = G_MAXUINT64 };
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    IohPipeEdge edge;
    gboolean ok;
    gulong handler;

    /* Held for the whole copy: each wait borrows the cancel's fd without making it anew. */
    c->cancel = cancel;
    c->edge = edge_open(c, n, g_cancellable_get_fd(cancel), &edge) ? &edge : NULL;
    g_mutex_init(&r.lock);
    g_cond_init(&r.cond);
    ring_setup(&r);
    handler = c->opts->cancellable ? g_cancellable_connect(c->opts->cancellable,
                                                           G_CALLBACK(on_cancelled), &r, NULL)
                                   : 0;
    g_debug("strategy: ring of %u buffers of %zu bytes (up to %u), %u reader thread%s, "
            "O_DIRECT writes of up to half the ring (at most %u buffers)", r.cap, c->slot,
            r.n, n, n == 1 ? "" : "s", IOH_RING_MAX_SPAN);
    ok = ring_threads(&r, readers);
    g_cancellable_disconnect(c->opts->cancellable, handler);
    ioh_mem_shrink(c->opts->memory, "ring", r.charged);
    c->stats->reads = __atomic_load_n(&c->reads, __ATOMIC_RELAXED);
    g_mutex_clear(&r.lock);
    g_cond_clear(&r.cond);
    if (c->edge) {
        close(edge.fd);
        c->edge = NULL;
    }
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
