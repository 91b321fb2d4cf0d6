/* engine-util.h - plumbing of the engine's in-process tests: a stream fed from a pipe into
 * an end, an end drained into a pipe, and the engine's debug lines kept */
#pragma once

#include <glib.h>

#include "ioh-copy.h"
#include "ioh-test.h"

G_BEGIN_DECLS

#define MiB (1024 * 1024)

/* @len bytes of deterministic pseudo-random data (one more allocated, for rounding). */
char *engt_random(gsize len, guint32 seed);

/* A save: @len bytes of @data written into a pipe by a thread, copied by ioh_copy() into
 * @dst with @opts (the pipe's read end is the source). ioh_copy()'s result. */
gboolean engt_save(const void *data, gsize len, IohEnd *dst, const IohCopyOptions *opts,
                   IohStats *stats, GError **error);

/* A restore: ioh_copy() of @src into a pipe that a thread drains into @got (appended).
 * ioh_copy()'s result. */
gboolean engt_restore(IohEnd *src, const IohCopyOptions *opts, IohStats *stats,
                      GByteArray *got, GError **error);

/* Keeps the engine's messages (domain "iohelper", debug ones too) from now on; anything
 * above debug is printed as usual. */
void engt_log_start(void);
/* Forgets the messages kept so far. */
void engt_log_clear(void);
/* TRUE when a kept message contains @text. */
gboolean engt_logged(const char *text);

/* Feeds @len bytes of @in to @chain (ioh-filter.h, its sink set) in pieces of @piece,
 * then flushes and finishes it into @stats: FALSE with @error set by a filter. */
typedef struct _IohFilterChain IohFilterChain;
gboolean engt_chain_run(IohFilterChain *chain, const guint8 *in, gsize len, gsize piece,
                        IohStats *stats, GError **error);

G_END_DECLS
