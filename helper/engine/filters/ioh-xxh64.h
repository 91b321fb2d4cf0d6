/* ioh-xxh64.h - XXH64 of many equal-length regions at once (zstd's raw frames' checksums) */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* out[i] = XXH64(p[i], @len, 0) for each of @n regions, each copied to @dst[i] on the way
 * (@dst NULL: no copy; a region and its copy must not overlap): one pass over the bytes.
 * Eight at a time with AVX-512 where the CPU has it (about twice the speed of one at a
 * time: XXH64 is bound by its 64-bit multiplies, and vpmullq does eight), else one at a
 * time with libxxhash. */
void ioh_xxh64_many(const guint8 *const *p, guint8 *const *dst, guint n, gsize len,
                    guint64 *out);

G_END_DECLS
