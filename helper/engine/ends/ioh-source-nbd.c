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
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

typedef struct {
    IohNbd *n;
    guint64 start;           /* export offset of the stream */
    guint64 length;
    guint64 issued;          /* stream bytes asked for */
    char *head;              /* the oldest request, being handed on */
    gsize head_len;
    gsize head_off;
} SourceState;

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
    s->start = o->has_offset ? o->offset : 0;
    s->length = o->has_length ? o->length : (size > s->start ? size - s->start : 0);
    ioh_nbd_set_layer_state(n, s, g_free);
    c->src_start = s->start;
    if (s->start > size || s->length > size - s->start) {
        return ioh_nbd_too_small(error, "read", c->src, size);
    }
    return TRUE;
}

/* Issues reads until every request is in flight or the stream is all asked for. */
static gboolean
read_ahead(IohCopy *c, SourceState *s, GError **error)
{
    gsize rsize = ioh_nbd_request_size(s->n);

    while (s->issued < s->length && ioh_nbd_in_flight(s->n) < ioh_nbd_capacity(s->n)) {
        gsize len = (gsize)MIN((guint64)rsize, s->length - s->issued), got;

        if (!ioh_nbd_next(s->n, &got, error) ||
            !ioh_nbd_issue(s->n, FALSE, len, s->start + s->issued, error)) {
            return FALSE;
        }
        s->issued += len;
        ioh_copy_count_read(c);
    }
    return TRUE;
}

/* The next bytes in the oldest request (at most *@len): they stay valid until the next
 * call, which issues its buffer again once it has been handed on whole. */
static const char *
nbd_source_peek(IohCopy *c, gsize *len, GError **error)
{
    SourceState *s = ioh_nbd_layer_state(c->src->priv);
    const char *p;

    if (s->head_off == s->head_len) {
        if (ioh_nbd_in_flight(s->n) == 0 && s->issued == s->length) {
            *len = 0;
            return "";
        }
        if (!read_ahead(c, s, error) ||
            !(s->head = ioh_nbd_take(s->n, &s->head_len, error))) {
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
