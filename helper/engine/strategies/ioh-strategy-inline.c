/* ioh-strategy-inline.c - read then write in one thread, one buffer: for a save through
 * the page cache (buffered, --fadvise)
 *
 * Both sides copy there (pipe -> buffer -> page cache), and on a 2-core machine that also
 * runs the producer a second copying thread only adds a cross-core hand-over: the ring
 * measured slower than this loop at the same CPU time (docs/benchmarks.md, "Engine A/Bs:
 * Inline"), while with O_DIRECT (no copy on the write side, the disk busy) the ring wins.
 * The buffer stays hot in this core's cache.
 */
#include "ioh-layer.h"
#include "ioh-error.h"

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

static gboolean
inline_run(IohCopy *c, GError **error)
{
    const IohCopyOptions *opts = c->opts;
    IohReader rd = { .c = c, .fd = c->src->fd, .direct = c->src->direct };
    gboolean lend = c->sink->buffer && !ioh_filter_chain_transforms(c->filters);
    gboolean more = TRUE;

    g_debug("strategy: inline, one buffer of %zu bytes", c->slot);
    /* The caller's cancellable, if any, is what a read of a silent stream waits on. */
    c->cancel = opts->cancellable;
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

const IohStrategy ioh_strategy_inline = {
    .name = "inline",
    .run = inline_run,
};
