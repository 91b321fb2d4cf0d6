/* ioh-sink-nbd.c - the NBD sink: writes the stream into an NBD export at --offset
 *
 * Chunks are gathered into requests of the request size (ioh-nbd.h), each issued as
 * nbd_aio_pwrite as soon as it is full, with up to --requests in flight per connection
 * over --connections; the writing thread only waits when every request is in flight.
 * With the inline strategy the stream is read straight into the request (buffer()).
 * The export has a fixed size: with --length it must hold offset + length before
 * anything is sent, without it the copy fails where the stream outgrows it. Success
 * only after every command completed and the flush (ioh_nbd_finish()) returned. An
 * export with a minimum block size gets its unaligned tail by read-modify-write. */
#include "ioh-nbd.h"
#include "ioh-error.h"
#include "ioh-region.h"

#include <errno.h>
#include <string.h>

typedef struct {
    IohNbd *n;
    char *buf;               /* the request being filled */
    gsize fill;
    guint64 pos;             /* export offset of buf[0] */
} SinkState;

static gboolean
nbd_sink_accepts(const IohEnd *end)
{
    return end->kind == IOH_KIND_NBD;
}

static gboolean
too_small(const IohNbd *n, const IohEnd *end, GError **error)
{
    return ioh_nbd_too_small(error, "write", end, ioh_nbd_export_size(n));
}

static gboolean
nbd_sink_prepare(IohCopy *c, GError **error)
{
    const IohCopyOptions *o = c->opts;
    guint64 start = o->has_offset ? o->offset : 0;
    IohNbd *n = ioh_nbd_connect(c, c->dst, TRUE, error);
    SinkState *s;

    if (!n) {
        return FALSE;
    }
    if (start > ioh_nbd_export_size(n) ||
        (o->has_length && o->length > ioh_nbd_export_size(n) - start)) {
        return too_small(n, c->dst, error);
    }
    s = g_new0(SinkState, 1);
    s->n = n;
    s->pos = start;
    c->dst_start = start;
    ioh_nbd_set_layer_state(n, s, g_free);
    return TRUE;
}

/* Issues the request being filled. */
static gboolean
issue(IohCopy *c, SinkState *s, GError **error)
{
    if (!ioh_nbd_issue(s->n, TRUE, s->fill, s->pos, error)) {
        return FALSE;
    }
    c->stats->writes++;
    s->pos += s->fill;
    s->fill = 0;
    s->buf = NULL;
    return TRUE;
}

static gboolean
nbd_sink_write(IohCopy *c, const char *buf, gsize len, GError **error)
{
    SinkState *s = ioh_nbd_layer_state(c->dst->priv);
    gsize rsize = ioh_nbd_request_size(s->n);

    if (s->pos + s->fill + len > ioh_nbd_export_size(s->n)) {
        return too_small(s->n, c->dst, error);
    }
    if (!ioh_region_check(c, c->dst, s->pos + s->fill + len, error)) {
        return FALSE;   /* before any byte of it is sent: the next region is another's */
    }
    if (s->buf && buf == s->buf + s->fill) {
        /* read in place through nbd_sink_buffer() */
        s->fill += len;
        return s->fill < rsize || issue(c, s, error);
    }
    while (len > 0) {
        gsize part, done;

        if (!s->buf && !(s->buf = ioh_nbd_next(s->n, &done, error))) {
            return FALSE;
        }
        part = MIN(len, rsize - s->fill);
        memcpy(s->buf + s->fill, buf, part);
        s->fill += part;
        buf += part;
        len -= part;
        if (s->fill == rsize && !issue(c, s, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The request being filled lends its free part: the stream is read straight into it. */
static char *
nbd_sink_buffer(IohCopy *c, gsize *len, GError **error)
{
    SinkState *s = ioh_nbd_layer_state(c->dst->priv);
    gsize done;

    if (!s->buf && !(s->buf = ioh_nbd_next(s->n, &done, error))) {
        return NULL;
    }
    *len = MIN(*len, ioh_nbd_request_size(s->n) - s->fill);
    return s->buf + s->fill;
}

/* An export with a minimum block size takes no unaligned tail: the stream's last block
 * is completed with the export's own bytes after it (read-modify-write), so that what
 * lies beyond the stream is written back unchanged. */
static gboolean
pad_tail(SinkState *s, GError **error)
{
    gsize m = ioh_nbd_min_block(s->n), keep = s->fill % m;
    g_autofree char *block = NULL;

    if (keep == 0) {
        return TRUE;
    }
    block = g_malloc(m);
    if (!ioh_nbd_read_block(s->n, block, s->pos + s->fill - keep, error)) {
        return FALSE;
    }
    memcpy(s->buf + s->fill, block + keep, m - keep);
    s->fill += m - keep;
    return TRUE;
}

static gboolean
nbd_sink_finish(IohCopy *c, GError **error)
{
    SinkState *s = ioh_nbd_layer_state(c->dst->priv);

    if (s->fill > 0 && (!pad_tail(s, error) || !issue(c, s, error))) {
        return FALSE;
    }
    return ioh_nbd_finish(s->n, TRUE, error);
}

const IohSinkClass ioh_sink_nbd = {
    .name = "nbd",
    .accepts = nbd_sink_accepts,
    .prepare = nbd_sink_prepare,
    .write = nbd_sink_write,
    .finish = nbd_sink_finish,
    .buffer = nbd_sink_buffer,
};
