/* ioh-sink-rbd.c - the RBD sink: writes the stream into an RBD image at --offset
 *
 * Chunks are gathered into requests that end at the image's object boundaries (whole
 * objects but for the first with an unaligned --offset and the last), each issued with
 * rbd_aio_write as soon as it is full, --requests in flight; with the inline strategy
 * the pipe is read straight into the request (buffer()).
 *
 * Size. A missing image is created thin (ioh-rbd.c) and grown as the stream grows
 * (rbd_resize of a thin image writes nothing), then set to exactly the stream's end. An
 * existing image smaller than the stream is grown only with --grow, else refused: before
 * anything is sent when --length tells, else where the stream outgrows it. An existing
 * image larger than the stream keeps its size and its bytes after the stream (an image
 * may hold other data past --offset + length): what a restore reads is bounded by the
 * length recorded in the image's metadata instead (IOH_RBD_LENGTH_KEY), so no stale
 * byte after the stream is ever read back without an explicit --length.
 *
 * Order. The recorded length and offset are removed before the first write, and set
 * only after every write completed and the flush returned (the length last): a save that
 * fails or is killed leaves an image a restore without --length refuses. Success only
 * after that.
 *
 * A region (--no-truncate: one channel of a multi-channel image, docs/channels.md). N+1
 * helpers write one image at once, each its own region: the tool created and sized the
 * image for all of them before they start and records each region's exact length in its
 * own header. So a region's helper never creates, grows nor shrinks the image (another
 * helper's resize would cut a region being written), and neither reads nor writes the
 * single-stream metadata (the last helper's record would describe one region as the
 * image's stream): a write past the image's end is refused as a too-small image.
 */
#include "ioh-rbd.h"
#include "ioh-error.h"
#include "ioh-region.h"

#include <errno.h>
#include <string.h>

/* A created or --grow image grows by at least this, or by half its size, at a time. */
#define GROW_STEP (256ULL << 20)

typedef struct {
    IohRbd *r;
    char *buf;               /* the request being filled */
    gsize fill;
    guint64 pos;             /* image offset of buf[0] */
    guint64 start;           /* image offset of the stream */
    guint64 orig_size;       /* the existing image's size before the save */
    gboolean may_grow;       /* created by us, or --grow */
    gboolean resized;
    gboolean region;         /* --no-truncate: a region, no resize, no metadata */
} SinkState;

static gboolean
rbd_sink_accepts(const IohEnd *end)
{
    return end->kind == IOH_KIND_RBD;
}

static gboolean
too_small(SinkState *s, const IohEnd *end, guint64 need, GError **error)
{
    return ioh_error_set(error, ENOSPC, "write", end->name, "the image is %" G_GUINT64_FORMAT
                         " bytes, the stream needs %" G_GUINT64_FORMAT "%s",
                         ioh_rbd_size(s->r), need,
                         s->may_grow ? "" : s->region ? " (a region never grows the image)"
                                                      : " (--grow grows it)");
}

/* Room in the image up to @end: grown ahead when it may, else an error. */
static gboolean
ensure_room(SinkState *s, const IohEnd *dst, guint64 end, GError **error)
{
    guint64 size = ioh_rbd_size(s->r);

    if (end <= size) {
        return TRUE;
    }
    if (!s->may_grow) {
        return too_small(s, dst, end, error);
    }
    s->resized = TRUE;
    return ioh_rbd_resize(s->r, MAX(IOH_ALIGN_UP(end, GROW_STEP), size + size / 2), error);
}

/* An existing image: its recorded stream forgotten before anything of it is overwritten,
 * and refused up front when --length says it is too small (and --grow is not given). */
static gboolean
prepare_existing(IohCopy *c, SinkState *s, GError **error)
{
    const IohCopyOptions *o = c->opts;

    if (o->has_length && !ensure_room(s, c->dst, s->start + o->length, error)) {
        return FALSE;
    }
    if (s->region) {
        return TRUE;   /* the tool forgot the image's single-stream record before */
    }
    return ioh_rbd_meta_remove(s->r, IOH_RBD_LENGTH_KEY, error) &&
           ioh_rbd_meta_remove(s->r, IOH_RBD_OFFSET_KEY, error);
}

static gboolean
rbd_sink_prepare(IohCopy *c, GError **error)
{
    const IohCopyOptions *o = c->opts;
    guint64 start = o->has_offset ? o->offset : 0;
    IohRbd *r = ioh_rbd_open(c, c->dst, TRUE, o->has_length ? start + o->length : 0, error);
    SinkState *s;

    if (!r) {
        return FALSE;
    }
    s = g_new0(SinkState, 1);
    s->r = r;
    s->pos = s->start = start;
    s->orig_size = ioh_rbd_created(r) ? 0 : ioh_rbd_size(r);
    s->region = o->no_truncate;
    s->may_grow = !s->region && (ioh_rbd_created(r) || o->rbd_grow);
    c->dst_start = start;
    ioh_rbd_set_layer_state(r, s, g_free);
    return ioh_rbd_created(r) || prepare_existing(c, s, error);
}

/* Issues the request being filled. */
static gboolean
issue(IohCopy *c, SinkState *s, GError **error)
{
    /* past the region: refused before any byte of the request is sent (ioh-region.h) */
    if (!ioh_region_check(c, c->dst, s->pos + s->fill, error) ||
        !ensure_room(s, c->dst, s->pos + s->fill, error) ||
        !ioh_rbd_issue(s->r, TRUE, s->fill, s->pos, error)) {
        return FALSE;
    }
    c->stats->writes++;
    s->pos += s->fill;
    s->fill = 0;
    s->buf = NULL;
    return TRUE;
}

/* Room left in the request being filled (taken first when none is). */
static gsize
room(SinkState *s, GError **error)
{
    if (!s->buf && !(s->buf = ioh_rbd_next(s->r, error))) {
        return 0;
    }
    return ioh_rbd_request_at(s->r, s->pos) - s->fill;
}

static gboolean
rbd_sink_write(IohCopy *c, const char *buf, gsize len, GError **error)
{
    SinkState *s = ioh_rbd_layer_state(c->dst->priv);

    if (s->buf && buf == s->buf + s->fill) {
        /* read in place through rbd_sink_buffer() */
        s->fill += len;
        return s->fill < ioh_rbd_request_at(s->r, s->pos) || issue(c, s, error);
    }
    while (len > 0) {
        gsize part = room(s, error);

        if (part == 0) {
            return FALSE;
        }
        part = MIN(part, len);
        memcpy(s->buf + s->fill, buf, part);
        s->fill += part;
        buf += part;
        len -= part;
        if (s->fill == ioh_rbd_request_at(s->r, s->pos) && !issue(c, s, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The request being filled lends its free part: the stream is read straight into it. */
static char *
rbd_sink_buffer(IohCopy *c, gsize *len, GError **error)
{
    SinkState *s = ioh_rbd_layer_state(c->dst->priv);
    gsize part = room(s, error);

    if (part == 0) {
        return NULL;
    }
    *len = MIN(*len, part);
    return s->buf + s->fill;
}

/* After the flush: a grown image set to exactly what it must hold (a created one: the
 * stream's end; an existing one: never less than it was), then the stream recorded. */
static gboolean
record(SinkState *s, GError **error)
{
    guint64 end = s->pos, want = MAX(end, s->orig_size);

    if (s->region) {
        return TRUE;   /* the tool's header records the region (see the top) */
    }
    if (s->resized && ioh_rbd_size(s->r) != want && !ioh_rbd_resize(s->r, want, error)) {
        return FALSE;
    }
    return ioh_rbd_meta_set(s->r, IOH_RBD_OFFSET_KEY, s->start, error) &&
           ioh_rbd_meta_set(s->r, IOH_RBD_LENGTH_KEY, end - s->start, error);
}

static gboolean
rbd_sink_finish(IohCopy *c, GError **error)
{
    SinkState *s = ioh_rbd_layer_state(c->dst->priv);

    if (s->fill > 0 && !issue(c, s, error)) {
        return FALSE;
    }
    return ioh_rbd_finish(s->r, TRUE, error) && record(s, error);
}

const IohSinkClass ioh_sink_rbd = {
    .name = "rbd",
    .accepts = rbd_sink_accepts,
    .prepare = rbd_sink_prepare,
    .write = rbd_sink_write,
    .finish = rbd_sink_finish,
    .buffer = rbd_sink_buffer,
};
