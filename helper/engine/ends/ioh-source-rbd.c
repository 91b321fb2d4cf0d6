/* ioh-source-rbd.c - the RBD source: reads the stream out of an RBD image (or snapshot)
 *
 * The length is --length, else the one the save recorded in the image's metadata
 * (IOH_RBD_LENGTH_KEY, for a stream starting at --offset, IOH_RBD_OFFSET_KEY): an image
 * has a size, not an end of stream, and its bytes after the stream are not the stream's.
 * A snapshot needs --length: librbd does not snapshot an image's metadata, so what a
 * snapshot would read is the length of the image's latest save (a shorter one would
 * restore a cut stream without an error).
 * Reads are issued ahead of the consumer (rbd_aio_read of a request each, cut at object
 * boundaries, --requests in flight) and handed on in order, from their buffers (peek():
 * the inline strategy delivers them without a copy), each only once it completed whole.
 */
#include "ioh-rbd.h"
#include "ioh-read-ahead.h"
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

typedef struct {
    IohRbd *r;
    IohReadAhead ra;
} SourceState;

/* The pool's calls, for the read-ahead (ioh-read-ahead.h). */
static char *
pool_next(gpointer pool, GError **error)
{
    return ioh_rbd_next(pool, error);
}

static gboolean
pool_issue_read(gpointer pool, gsize len, guint64 offset, GError **error)
{
    return ioh_rbd_issue(pool, FALSE, len, offset, error);
}

static char *
pool_take(gpointer pool, gsize *ret_len, GError **error)
{
    return ioh_rbd_take(pool, ret_len, error);
}

static guint
pool_in_flight(gconstpointer pool)
{
    return ioh_rbd_in_flight(pool);
}

static guint
pool_capacity(gconstpointer pool)
{
    return ioh_rbd_capacity(pool);
}

static gsize
pool_request_at(gconstpointer pool, guint64 offset)
{
    return ioh_rbd_request_at(pool, offset);
}

static const IohReadAheadOps pool_ops = {
    pool_next, pool_issue_read, pool_take, pool_in_flight, pool_capacity, pool_request_at,
};

static gboolean
rbd_source_accepts(const IohEnd *end)
{
    return end->kind == IOH_KIND_RBD;
}

/* The stream's length as the save recorded it, for a stream at @start. */
static gboolean
recorded_length(IohRbd *r, const IohEnd *src, guint64 start, guint64 *ret, GError **error)
{
    gboolean has_len = FALSE, has_off = FALSE;
    guint64 off = 0;

    if (!ioh_rbd_meta_get(r, IOH_RBD_LENGTH_KEY, ret, &has_len, error) ||
        !ioh_rbd_meta_get(r, IOH_RBD_OFFSET_KEY, &off, &has_off, error)) {
        return FALSE;
    }
    if (!has_len) {
        return ioh_error_set(error, ENODATA, "read", src->name, "no stream recorded in the "
                             "image (no metadata " IOH_RBD_LENGTH_KEY ": a save that did not "
                             "finish, or not iohelper's): give --length");
    }
    if ((has_off ? off : 0) != start) {
        return ioh_error_set(error, EINVAL, "read", src->name, "the stream recorded in the "
                             "image starts at offset %" G_GUINT64_FORMAT ", not at %"
                             G_GUINT64_FORMAT " (--offset)", has_off ? off : 0, start);
    }
    return TRUE;
}

static gboolean
rbd_source_prepare(IohCopy *c, GError **error)
{
    const IohCopyOptions *o = c->opts;
    IohRbd *r = ioh_rbd_open(c, c->src, FALSE, 0, error);
    SourceState *s;
    guint64 size;

    if (!r) {
        return FALSE;
    }
    s = g_new0(SourceState, 1);
    s->r = r;
    s->ra.ops = &pool_ops;
    s->ra.pool = r;
    s->ra.start = o->has_offset ? o->offset : 0;
    ioh_rbd_set_layer_state(r, s, g_free);
    c->src_start = s->ra.start;
    if (o->has_length) {
        s->ra.length = o->length;
    } else if (ioh_rbd_is_snapshot(r)) {
        return ioh_error_set(error, ENODATA, "read", c->src->name, "a snapshot does not keep "
                             "the recorded length (librbd does not snapshot metadata): give "
                             "--length");
    } else if (!recorded_length(r, c->src, s->ra.start, &s->ra.length, error)) {
        return FALSE;
    }
    size = ioh_rbd_size(r);
    if (s->ra.start > size || s->ra.length > size - s->ra.start) {
        return ioh_error_set(error, EINVAL, "read", c->src->name, "the image is %"
                             G_GUINT64_FORMAT " bytes, the stream ends at %" G_GUINT64_FORMAT,
                             size, s->ra.start + s->ra.length);
    }
    return TRUE;
}

static const char *
rbd_source_peek(IohCopy *c, gsize *len, GError **error)
{
    SourceState *s = ioh_rbd_layer_state(c->src->priv);

    return ioh_read_ahead_peek(c, &s->ra, len, error);
}

static void
rbd_source_finish(IohCopy *c)
{
    SourceState *s = ioh_rbd_layer_state(c->src->priv);
    g_autoptr(GError) err = NULL;

    if (!ioh_rbd_finish(s->r, FALSE, &err)) {
        g_debug("%s: %s", c->src->name, err->message);
    }
}

const IohSourceClass ioh_source_rbd = {
    .name = "rbd",
    .accepts = rbd_source_accepts,
    .prepare = rbd_source_prepare,
    .read = ioh_source_read_by_peek,
    .finish = rbd_source_finish,
    .peek = rbd_source_peek,
};
