/* ioh-ring-sizing.h - the ring's state, and how many buffers it has (ioh-ring-sizing.c)
 *
 * Shared by the ring's threads (ioh-ring.c) and its sizing (ioh-ring-sizing.c), and by
 * nothing else: the strategies see the ring through ioh-ring.h. The ring holds at most n
 * buffers, the copy's (c->mem, c->nslots of c->slot bytes); the sizing decides how many
 * of them are in it (cap) and takes their memory from the copy's account
 * (ioh-mem-account.h), which draws on the host's budget (ioh-budget.h). Each function
 * runs on the writer's thread and takes the ring's lock where it touches what the readers
 * see (the free queue, cap).
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

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

/* The ring's first buffers: two (one per parallel reader), less what the budget refuses
 * beyond the first; the other buffers' pages are not the ring's until it grows. Regions
 * it fills whole are huge pages, the rest small pages. */
void ioh_ring_sizing_start(IohRing *r);

/* After each write: once a window is over, grows the ring when readers waited for a
 * buffer a tenth of it or more and far longer than the writer waited for data; shrinks
 * it when the writer waited half of it or more, the readers hardly at all, and the ring
 * has not grown for a while. Times, not counts: a disk that writes in bursts holds the
 * readers for 100 ms once and the writer for a few short waits. */
void ioh_ring_sizing_adapt(IohRing *r);

/* Takes free buffers out of the ring until it has @want (or none is free), returns their
 * pages to the kernel and their share to the budget. */
void ioh_ring_sizing_shrink(IohRing *r, guint want, const char *why);

/* The copy is over: gives back to the account all the ring took. */
void ioh_ring_sizing_end(IohRing *r);

G_END_DECLS
