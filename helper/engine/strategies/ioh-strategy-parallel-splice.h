/* ioh-strategy-parallel-splice.h - the parallel strategy's splice path: O_DIRECT readers
 * splicing into pipes of their own, spliced on into the output pipe
 * (ioh-strategy-parallel-splice.c)
 *
 * The parallel strategy (ioh-strategy-parallel.c) opens the readers, tries this path when
 * it fits, and runs the ring from where it stopped when the kernel refused it.
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

/* Readers of the splice path at most: one per ring buffer (--ring, 8 by default), since
 * their pipes take the ring's place and the writer holds none. 8 measured faster than 4 at
 * the same CPU, and both far cheaper than the ring's read() path (docs/benchmarks.md,
 * "Engine A/Bs: Parallel"). */
#define IOH_PSPLICE_MAX_READERS 8

/* The splice path fits a restore into a pipe that no filter needs to see, of the whole
 * file from an aligned start (--length is left to the ring). */
gboolean ioh_psplice_fits(const IohCopy *c);

/* The splice path for the @n readers @rds (each with an O_DIRECT fd of its own): 1 done,
 * 0 not taken (the ring's), -1 failed. */
int ioh_psplice_run(IohCopy *c, IohReader *rds, guint n, GError **error);

G_END_DECLS
