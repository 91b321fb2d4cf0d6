/* ioh-source-rbd.c - the RBD source: reads the stream out of an RBD image (or snapshot)
 *
 * The length is --length, else the one the save recorded in the image's metadata
 * (IOH_RBD_LENGTH_KEY, for a stream starting at --offset, IOH_RBD_OFFSET_KEY): an image
 * has a size, not an end of stream, and its bytes after the stream are not the stream's.
 * Reads are issued ahead of the consumer (rbd_aio_read of a request each, cut at object
 * boundaries, --requests in flight) and handed on in order, from their buffers (peek():
 * the inline strategy delivers them without a copy), each only once it completed whole.
 */
#include "ioh-rbd.h"
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

typedef struct {
    IohRbd *r;
    guint64 start;           /* image offset of the stream */
    guint64 length;
    guint64 issued;          /* stream bytes asked for */
    char *head;              /* the oldest request, being handed on */
    gsize head_len;
    gsize head_off;
} SourceState;

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
    s->start = o->has_offset ? o->offset : 0;
    ioh_rbd_set_layer_state(r, s, g_free);
    c->src_start = s->start;
    if (o->has_length) {
        s->length = o->length;
    } else if (!recorded_length(r, c->src, s->start, &s->length, error)) {
        return FALSE;
    }
    size = ioh_rbd_size(r);
    if (s->start > size || s->length > size - s->start) {
        return ioh_error_set(error, EINVAL, "read", c->src->name, "the image is %"
                             G_GUINT64_FORMAT " bytes, the stream ends at %" G_GUINT64_FORMAT,
                             size, s->start + s->length);
    }
    return TRUE;
}

/* Issues reads until every request is in flight or the stream is all asked for. */
static gboolean
read_ahead(IohCopy *c, SourceState *s, GError **error)
{
    while (s->issued < s->length && ioh_rbd_in_flight(s->r) < ioh_rbd_capacity(s->r)) {
        guint64 pos = s->start + s->issued;
        gsize len = (gsize)MIN((guint64)ioh_rbd_request_at(s->r, pos), s->length - s->issued);

        if (!ioh_rbd_next(s->r, error) || !ioh_rbd_issue(s->r, FALSE, len, pos, error)) {
            return FALSE;
        }
        s->issued += len;
        ioh_copy_count_read(c);
    }
    return TRUE;
}

/* The next bytes in the oldest request (at most *@len): valid until the next call, which
 * issues its buffer again once it has been handed on whole. */
static const char *
rbd_source_peek(IohCopy *c, gsize *len, GError **error)
{
    SourceState *s = ioh_rbd_layer_state(c->src->priv);
    const char *p;

    if (s->head_off == s->head_len) {
        if (ioh_rbd_in_flight(s->r) == 0 && s->issued == s->length) {
            *len = 0;
            return "";
        }
        if (!read_ahead(c, s, error) ||
            !(s->head = ioh_rbd_take(s->r, &s->head_len, error))) {
            return NULL;
        }
        s->head_off = 0;
    }
    *len = MIN(*len, s->head_len - s->head_off);
    p = s->head + s->head_off;
    s->head_off += *len;
    return p;
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
