/* ioh-filter-count.c - the example filter of docs/engine.md: counts the stream's bytes,
 * logs the count, and fails the copy if the sink did not get as many. */
#include "ioh-filter.h"
#include "ioh-error.h"

#include <errno.h>

static gpointer
count_open(const IohCopyOptions *opts, GError **error)
{
    (void)opts, (void)error;
    return g_new0(guint64, 1);
}

static gboolean
count_data(gpointer state, const guint8 *buf, gsize len, GError **error)
{
    (void)buf, (void)error;
    *(guint64 *)state += len;
    return TRUE;
}

static gboolean
count_finish(gpointer state, const IohEnd *src, const IohEnd *dst, IohStats *stats,
             GError **error)
{
    guint64 seen = *(guint64 *)state;

    g_debug("count: %" G_GUINT64_FORMAT " bytes from %s", seen, src->name);
    return seen == stats->bytes ||
           ioh_error_set(error, EIO, "count", dst->name, "the filter saw %" G_GUINT64_FORMAT
                         " bytes, the sink got %" G_GUINT64_FORMAT, seen, stats->bytes);
}

const IohFilterClass ioh_filter_count = {
    .name = "count",
    .open = count_open,
    .data = count_data,
    .finish = count_finish,
    .free = g_free,
};
