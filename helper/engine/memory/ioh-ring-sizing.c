/* ioh-ring-sizing.c - how many buffers the ring has, and their memory (ioh-ring-sizing.h)
 *
 * The ring grows and shrinks (docs/engine.md): it starts with two buffers (the readers'
 * number for parallel readers) out of the n allocated, and the writer adds one while it
 * is the bottleneck (a reader waited for a free buffer, the writer never for data) and
 * the budget (ioh-budget.h) has room for it; it drops a free one when the ring stays
 * mostly empty (a slow producer), and all but one when nothing came for a second (a
 * stall). A dropped buffer's pages go back to the kernel (MADV_DONTNEED) and its share of
 * the budget to the other helpers.
 */
#include "ioh-ring-sizing.h"

#include <sys/mman.h>

/* The writer looks at the waits at least this often, or every 2 x buffers slots. */
#define IOH_RING_WINDOW_US (250 * 1000)
/* A buffer the ring grew by stays at least this long: a disk that writes in bursts (the
 * cgroup blkio throttle lets 100 ms worth through, then holds every write) makes a
 * window of waiting readers, then windows of a waiting writer, over and over. */
#define IOH_RING_KEEP_US G_USEC_PER_SEC
/* After the budget said no, the next ask waits this long. */
#define IOH_RING_BUDGET_RETRY_US G_USEC_PER_SEC

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

void
ioh_ring_sizing_shrink(IohRing *r, guint want, const char *why)
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

void
ioh_ring_sizing_adapt(IohRing *r)
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
        ioh_ring_sizing_shrink(r, r->cap - 1, "the producer is the bottleneck");
    }
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

void
ioh_ring_sizing_start(IohRing *r)
{
    IohCopy *c = r->c;
    guint want = MIN(r->n, MAX(2, r->readers));
    guint64 got = ioh_mem_grow(c->opts->memory, "ring", (guint64)(want - 1) * c->slot,
                               c->slot);

    r->per = ring_huge_per(c);
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

void
ioh_ring_sizing_end(IohRing *r)
{
    ioh_mem_shrink(r->c->opts->memory, "ring", r->charged);
}
