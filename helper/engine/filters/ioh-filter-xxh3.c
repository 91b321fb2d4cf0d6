/* ioh-filter-xxh3.c - the xxh3 filter: XXH3-64 of the stream (--checksum=xxh3), and its
 * check against an expected value (--verify-checksum=HEX)
 *
 * The value is what `xxhsum -H3` prints for the same bytes. A mismatch is found once the
 * whole stream has passed: on a restore the bytes have already gone to the reader, who
 * must discard them on the helper's failure. */
#include "ioh-filter.h"
#include "ioh-error.h"

#include <errno.h>
#include <xxhash.h>

typedef struct {
    XXH3_state_t *state;
    gboolean verify;
    guint64 expected;
} Xxh3;

static void
xxh3_free(gpointer data)
{
    Xxh3 *x = data;

    if (x) {
        XXH3_freeState(x->state);
        g_free(x);
    }
}

static gpointer
xxh3_open(const IohCopyOptions *opts, GError **error)
{
    Xxh3 *x = g_new0(Xxh3, 1);

    x->state = XXH3_createState();
    if (!x->state || XXH3_64bits_reset(x->state) != XXH_OK) {
        xxh3_free(x);
        ioh_error_set(error, ENOMEM, NULL, NULL, "xxh3: cannot allocate its state");
        return NULL;
    }
    x->verify = opts->has_expected_checksum;
    x->expected = opts->expected_checksum;
    return x;
}

static gboolean
xxh3_data(gpointer data, const guint8 *buf, gsize len, GError **error)
{
    Xxh3 *x = data;

    (void)error;
    XXH3_64bits_update(x->state, buf, len);
    return TRUE;
}

static gboolean
xxh3_finish(gpointer data, const IohEnd *src, const IohEnd *dst, IohStats *stats,
            GError **error)
{
    Xxh3 *x = data;
    const IohEnd *file = ioh_end_is_storage(src) || !ioh_end_is_storage(dst) ? src : dst;

    stats->checksum_algorithm = "xxh3";
    stats->checksum = XXH3_64bits_digest(x->state);
    g_debug("xxh3 of %" G_GUINT64_FORMAT " bytes: %016" G_GINT64_MODIFIER "x", stats->bytes,
            stats->checksum);
    if (x->verify && stats->checksum != x->expected) {
        return ioh_error_set(error, EBADMSG, "verify", file->name,
                             "xxh3 checksum mismatch: expected %016" G_GINT64_MODIFIER
                             "x, got %016" G_GINT64_MODIFIER "x (the stream was already "
                             "delivered)", x->expected, stats->checksum);
    }
    return TRUE;
}

const IohFilterClass ioh_filter_xxh3 = {
    .name = "xxh3",
    .checksum = TRUE,
    .open = xxh3_open,
    .data = xxh3_data,
    .finish = xxh3_finish,
    .free = xxh3_free,
};
