/* ioh-uring.h - the io_uring strategy's rings and its fault hook (ioh-strategy-uring.c,
 * ioh-uring-fault.c)
 *
 * The fault hook: the fault shim (tests/faults/fault-shim.c) wraps the I/O calls of libc,
 * which an io_uring submission bypasses. So before each read or write it prepares, the
 * strategy asks the shim's `ioh_fault_uring()`, when a preloaded library defines it (never
 * in production: the lookup finds nothing and the strategy asks nobody). The shim counts
 * the operation as a read or write of @fd (its IOH_FAULT rules apply as to read()/write())
 * and answers 0 (submit; *@len possibly lowered: a real short read or write), or -errno:
 * the operation is not submitted and completes with that result, as a failed CQE would.
 * After each submitted one completes, the strategy tells the shim its result.
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

/* The shim's answer for a read (@is_write FALSE) or write of *@len bytes of @fd at file
 * offset @pos (-1: a pipe); 0 without a shim. */
int ioh_uring_fault(int fd, gboolean is_write, gsize *len, gint64 pos);

/* Tells the shim that a submitted read or write of @len bytes of @fd completed with @res
 * (its trace). */
void ioh_uring_fault_done(int fd, gboolean is_write, gsize len, int res);

/* TRUE when the io_uring save fits the copy: a pipe into an O_DIRECT file (not O_APPEND),
 * with or without filters (ioh-uring-stage.h), no --memory-budget, io_uring not turned off
 * (IOHELPER_IO_URING=off); else FALSE with
 * c->stats->io_uring saying why where it matters (a --direct save). */
gboolean ioh_uring_fits(IohCopy *c);

G_END_DECLS
