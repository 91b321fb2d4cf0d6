/* ioh-ring.h - the ring of buffers between reader threads and the writer, the common part
 * of the ring and parallel strategies (ioh-ring.c)
 *
 * Readers fill the ring's buffers from the source, in any order, each at its slot's
 * offset when there are several; the calling thread delivers them in stream order
 * (ioh_copy_deliver()), an O_DIRECT destination several consecutive buffers at once. The
 * ring grows and shrinks within the copy's memory account (ioh-ring-sizing.h). The first
 * error of any thread stops every other; the caller's cancellable stops it too.
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

/* Runs @c through the ring: @readers[0..n) read the source into it from threads of their
 * own while the calling thread delivers. FALSE with the first error of any thread. */
gboolean ioh_ring_run(IohCopy *c, IohReader *readers, guint n, GError **error);

G_END_DECLS
