/* ioh-region.h - the region a save's remote storage side may take (--region)
 *
 * One channel of a multi-channel image (docs/channels.md) owns the bytes from --offset
 * to --offset + --region; the next channel's region follows at once. A file's region is
 * bounded by the helper's RLIMIT_FSIZE (a write past it fails with EFBIG, nothing past
 * it written); an NBD export or an RBD image has no such limit, so its sink asks this
 * before it sends a request: a request that would end past the region fails the copy
 * with EFBIG before any byte of it leaves. */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

/* TRUE when the stored stream's bytes up to storage offset @end stay within the copy's
 * region (always without one); else FALSE with EFBIG naming @dst and the region. */
gboolean ioh_region_check(const IohCopy *c, const IohEnd *dst, guint64 end, GError **error);

G_END_DECLS
