/* ioh-source-nbd.c - the NBD source: reads --length bytes of an NBD export from --offset
 *
 * Reads are issued ahead of the consumer (nbd_aio_pread of the request size, up to
 * --requests in flight per connection over --connections) and handed on in order: the
 * reader waits only for the oldest, and the inline strategy delivers each straight from
 * its request buffer (peek(), no copy: a quarter of the helper's CPU on a restore). An
 * export has a fixed size and no end of stream, so the length is required (the command
 * line refuses a restore without it) and checked against the export's size before
 * anything is read. */
#include "ioh-nbd.h"
#include "ioh-read-ahead.h"
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

typedef struct {
    IohNbd *n;
    IohReadAhead ra;
} SourceState;

/* The pool's calls, for the read-ahead (ioh-read-ahead.h). */
static char *
pool_next(gpointer pool, GError **error)
{
    gsize done;

    return ioh_nbd_next(pool, &done, error);
}

static gboolean
pool_issue_read(gpointer pool, gsize len, guint64 offset, GError **error)
{
    return ioh_nbd_issue(pool, FALSE, len, offset, error);
}

static char *
pool_take(gpointer pool, gsize *ret_len, GError **error)
{
    return ioh_nbd_take(pool, ret_len, error);
}

static guint
pool_in_flight(gconstpointer pool)
{
    return ioh_nbd_in_flight(pool);
}

static guint
pool_capacity(gconstpointer pool)
{
    return ioh_nbd_capacity(pool);
}

static gsize
pool_request_at(gconstpointer pool, guint64 offset G_GNUC_UNUSED)
{
    return ioh_nbd_request_size(pool);
}

static const IohReadAheadOps pool_ops = {
    pool_next, pool_issue_read, pool_take, pool_in_flight, pool_capacity, pool_request_at,
};

static gboolean
nbd_source_accepts(const IohEnd *end)
{
    return end->kind == IOH_KIND_NBD;
}

static gboolean
nbd_source_prepare(IohCopy *c, GError **error)
{
    const IohCopyOptions *o = c->opts;
    IohNbd *n = ioh_nbd_connect(c, c->src, FALSE, error);
    SourceState *s;
    guint64 size;

    if (!n) {
        return FALSE;
    }
    size = ioh_nbd_export_size(n);
    s = g_new0(SourceState, 1);
    s->n = n;
    s->ra.ops = &pool_ops;
    s->ra.pool = n;
    s->ra.start = o->has_offset ? o->offset : 0;
    s->ra.length = o->has_length ? o->length
                                 : (size > s->ra.start ? size - s->ra.start : 0);
    ioh_nbd_set_layer_state(n, s, g_free);
    c->src_start = s->ra.start;
    if (s->ra.start > size || s->ra.length > size - s->ra.start) {
        return ioh_nbd_too_small(error, "read", c->src, size);
    }
    return TRUE;
}

static const char *
nbd_source_peek(IohCopy *c, gsize *len, GError **error)
{
    SourceState *s = ioh_nbd_layer_state(c->src->priv);

    return ioh_read_ahead_peek(c, &s->ra, len, error);
}

static void
nbd_source_finish(IohCopy *c)
{
    SourceState *s = ioh_nbd_layer_state(c->src->priv);
    g_autoptr(GError) err = NULL;

    if (!ioh_nbd_finish(s->n, FALSE, &err)) {
        g_debug("%s: %s", c->src->name, err->message);
    }
}

const IohSourceClass ioh_source_nbd = {
    .name = "nbd",
    .accepts = nbd_source_accepts,
    .prepare = nbd_source_prepare,
    .read = ioh_source_read_by_peek,
    .finish = nbd_source_finish,
    .peek = nbd_source_peek,
};
