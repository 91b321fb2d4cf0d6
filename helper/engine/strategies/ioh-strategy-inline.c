/* ioh-strategy-inline.c - read then write in one thread, one buffer: for a save through
 * the page cache (buffered, --fadvise), and an encrypted O_DIRECT save from a pipe
 *
 * Both sides copy there (pipe -> buffer -> page cache), and on a 2-core machine that also
 * runs the producer a second copying thread only adds a cross-core hand-over: the ring
 * measured slower than this loop at the same CPU time (docs/benchmarks.md, "Engine A/Bs:
 * Inline"), while with O_DIRECT (no copy on the write side, the disk busy) the ring wins.
 * The buffer stays hot in this core's cache.
 *
 * With IOHELPER_AGE_INLINE=on (ioh-copy.c) an encrypted O_DIRECT save from a pipe reads and
 * seals here, on one thread, while its writes go behind the filters (ioh-filter-behind.c):
 * no reader thread handing each buffer to the sealing thread. Opt-in: the ring measured
 * faster (docs/engine.md, "Sealed on the reading thread"). Its pipe is read through the
 * relay pipe and its edge as the ring's reader reads it (ioh-pipe-edge.h).
 */
#include "ioh-layer.h"
#include "ioh-error.h"
#include "ioh-pipe-edge.h"

/* The next chunk, at most @want bytes: where the source holds it (peek), else read into
 * the sink's buffer (@lend) or ours. *@ret_more is FALSE once the stream has ended. */
static const char *
next_chunk(IohCopy *c, IohReader *rd, gboolean lend, gsize want, gsize *ret_len,
           gboolean *ret_more, GError **error)
{
    const char *p;
    char *buf;
    gssize got;

    if (c->source->peek) {
        *ret_len = want;
        p = c->source->peek(c, ret_len, error);
        *ret_more = *ret_len > 0;
        return p;
    }
    /* a sink that lends its own buffer gets the bytes in place, unless a filter
     * transforms them on the way (then the sink gets the filter's bytes) */
    buf = lend ? c->sink->buffer(c, &want, error) : c->mem;
    if (!buf) {
        return NULL;
    }
    got = c->source->read(rd, buf, want, -1, error);
    *ret_len = got < 0 ? 0 : (gsize)got;
    *ret_more = (gsize)got == want;
    return got < 0 ? NULL : buf;
}

/* The copy loop: chunks from the source through the filters to the sink. */
static gboolean
inline_loop(IohCopy *c, GError **error)
{
    const IohCopyOptions *opts = c->opts;
    IohReader rd = { .c = c, .fd = c->src->fd, .direct = c->src->direct };
    gboolean lend = c->sink->buffer && !ioh_filter_chain_transforms(c->filters);
    gboolean more = TRUE;

    while (more) {
        gsize want = c->slot, got;
        const char *buf;

        if (opts->has_length) {
            if (c->in >= opts->length) {
                break;
            }
            want = (gsize)MIN((guint64)want, opts->length - c->in);
        }
        if (!ioh_error_check_cancellable(c->cancel, "copy", NULL, error)) {
            return FALSE;
        }
        buf = next_chunk(c, &rd, lend, want, &got, &more, error);
        c->stats->reads = c->reads;
        if (!buf || (got > 0 && !ioh_copy_deliver(c, buf, got, TRUE, error))) {
            return FALSE;
        }
        ioh_copy_report_progress(c, FALSE);
    }
    return TRUE;
}

/* The caller's cancellable sets the copy's own (the edge waits on its fd). */
static void
on_cancelled(GCancellable *cancellable, gpointer data)
{
    (void)cancellable;
    g_cancellable_cancel(data);
}

/* An O_DIRECT sink (the encrypted save): the pipe read through its edge and relay, with
 * a cancel of the copy's own. */
static gboolean
inline_run_edge(IohCopy *c, GError **error)
{
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    GCancellable *outer = c->opts->cancellable;
    gulong handler = outer ? g_cancellable_connect(outer, G_CALLBACK(on_cancelled),
                                                   cancel, NULL) : 0;
    IohPipeEdge edge;
    gboolean ok;

    c->cancel = cancel;
    c->edge = ioh_pipe_edge_open(c, 1, g_cancellable_get_fd(cancel), &edge) ? &edge : NULL;
    ok = inline_loop(c, error);
    ioh_pipe_edge_close(c->edge);
    c->edge = NULL;
    g_cancellable_disconnect(outer, handler);
    g_cancellable_release_fd(cancel);
    c->cancel = outer;
    return ok;
}

static gboolean
inline_run(IohCopy *c, GError **error)
{
    g_debug("strategy: inline, one buffer of %zu bytes", c->slot);
    if (c->dst->direct) {
        return inline_run_edge(c, error);
    }
    /* The caller's cancellable, if any, is what a read of a silent stream waits on. */
    c->cancel = c->opts->cancellable;
    return inline_loop(c, error);
}

const IohStrategy ioh_strategy_inline = {
    .name = "inline",
    .run = inline_run,
};
