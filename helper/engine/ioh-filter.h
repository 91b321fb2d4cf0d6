/* ioh-filter.h - filters: layers the stream passes through between source and sink
 *
 * A filter sees every byte of the stream, in stream order, just before the sink gets it,
 * on the thread that writes the sink. A filter is one file that defines one
 * IohFilterClass named ioh_filter_NAME, and one line IOH_FILTER(NAME) in
 * ioh-layer-list.h registers it (see docs/engine.md). A copy runs the filters that
 * IohCopyOptions.filters names, in that order.
 */
#pragma once

#include <glib.h>

#include "ioh-copy.h"
#include "ioh-file.h"
#include "ioh-stats.h"

G_BEGIN_DECLS

typedef struct {
    const char *name;       /* what IohCopyOptions.filters and the command line say */
    gboolean checksum;      /* a checksum of the stream: --checksum=NAME selects it */
    /* A new state for one copy (the options as given), or NULL with @error set. */
    gpointer (*open)(const IohCopyOptions *opts, GError **error);
    /* The next @len bytes of the stream (@len > 0). */
    gboolean (*data)(gpointer state, const guint8 *buf, gsize len, GError **error);
    /* The whole stream has passed and reached the sink: put results in @stats, or fail
     * (the file is the storage end, @src or @dst, for messages). */
    gboolean (*finish)(gpointer state, const IohEnd *src, const IohEnd *dst,
                       IohStats *stats, GError **error);
    void (*free)(gpointer state);  /* NULL allowed */
} IohFilterClass;

/* The registered filter called @name, or NULL. */
const IohFilterClass *ioh_filter_lookup(const char *name);

/* The registered checksum names, comma-separated, for messages ("xxh3"). */
const char *ioh_filter_checksum_names(void);

/* The filters of one copy, in order. */
typedef struct _IohFilterChain IohFilterChain;

/* Opens the filters @opts->filters names (none: an empty chain). An unknown name is
 * IOH_ERROR/EINVAL. */
IohFilterChain *ioh_filter_chain_new(const IohCopyOptions *opts, GError **error);

/* Passes @len bytes through every filter (nothing when @len is 0). */
gboolean ioh_filter_chain_data(IohFilterChain *chain, const void *buf, gsize len,
                               GError **error);

/* Finishes every filter, in order; the first failure stops. */
gboolean ioh_filter_chain_finish(IohFilterChain *chain, const IohEnd *src,
                                 const IohEnd *dst, IohStats *stats, GError **error);

void ioh_filter_chain_free(IohFilterChain *chain);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohFilterChain, ioh_filter_chain_free)

G_END_DECLS
