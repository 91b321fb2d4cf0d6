/* ioh-copy-io.c - what the layers call while a copy runs (ioh-layer.h): a chunk delivered
 * through the filters to the sink, bytes counted, a wait on an fd that the copy's cancel
 * ends, progress
 *
 * Apart from ioh-copy.c, which chooses the layers and runs them: the strategies and the
 * layers call down into this file, never back into the one that calls them.
 */
#include "ioh-layer.h"
#include "ioh-age-plain.h"
#include "ioh-error.h"
#include "ioh-fd.h"

#include <errno.h>
#include <string.h>

void
ioh_copy_count_read(IohCopy *c)
{
    __atomic_fetch_add(&c->reads, 1, __ATOMIC_RELAXED);
}

gboolean
ioh_copy_wait(IohCopy *c, int fd, short events, const char *what, const char *name,
              GError **error)
{
    g_autoptr(GError) err = NULL;

    if (ioh_fd_wait(fd, events, c->cancel, -1, &err) >= 0 || !ioh_error_is_cancelled(err)) {
        return TRUE;    /* ready, or a poll error that the read or write itself will tell */
    }
    return ioh_error_set_cancelled(error, what, name);
}

gboolean
ioh_copy_retry(IohCopy *c, int errsv, int fd, short events, const char *what,
               const char *name, GError **error)
{
    if (errsv == EINTR) {
        return TRUE;
    }
    if (errsv == EAGAIN) {
        return ioh_copy_wait(c, fd, events, what, name, error);
    }
    return ioh_error_set_errno(error, errsv, what, name);
}

/* The stream's bytes are the pipe side's (a save's source, a restore's sink), the stored
 * ones the storage side's; they are equal unless a filter transforms the stream. */
static void
count(IohCopy *c)
{
    gboolean save = g_str_equal(c->stats->direction, "save");

    c->stats->bytes = save ? c->in : c->out;
    c->stats->stored = save ? c->out : c->in;
}

gboolean
ioh_copy_moved(IohCopy *c, gsize len, gboolean write_behind, GError **error)
{
    c->in += (guint64)len;
    c->out += (guint64)len;
    count(c);
    return ioh_cache_after_chunk(c, write_behind, error);
}

void
ioh_copy_stored(IohCopy *c, gsize len)
{
    c->out += (guint64)len;
    count(c);
}

/* What leaves the last filter: the sink writes it. */
static gboolean
to_sink(gpointer data, const void *buf, gsize len, GError **error)
{
    IohCopy *c = data;

    if (!c->sink->write(c, buf, len, error)) {
        return FALSE;
    }
    ioh_copy_stored(c, len);
    return TRUE;
}

/* ... in pieces: one vectored write where the sink has it. */
static gboolean
to_sinkv(gpointer data, const struct iovec *iov, int cnt, GError **error)
{
    IohCopy *c = data;
    gsize len = 0;

    if (!c->sink->writev) {
        for (int i = 0; i < cnt; i++) {
            if (!to_sink(c, iov[i].iov_base, iov[i].iov_len, error)) {
                return FALSE;
            }
        }
        return TRUE;
    }
    for (int i = 0; i < cnt; i++) {
        len += iov[i].iov_len;
    }
    if (!c->sink->writev(c, iov, cnt, error)) {
        return FALSE;
    }
    ioh_copy_stored(c, len);
    return TRUE;
}

gboolean
ioh_copy_deliver(IohCopy *c, const char *buf, gsize len, gboolean write_behind,
                 GError **error)
{
    if (!ioh_age_plain_check(c, buf, len, error) ||
        !ioh_filter_chain_data(c->filters, buf, len, error)) {
        return FALSE;
    }
    c->in += (guint64)len;
    count(c);
    return ioh_cache_after_chunk(c, write_behind, error);
}

void
ioh_copy_report_progress(IohCopy *c, gboolean final)
{
    gint64 now;

    if (!c->opts->progress) {
        return;
    }
    now = g_get_monotonic_time();
    if (final || now - c->last_progress_us >= c->opts->progress_interval_us) {
        c->last_progress_us = now;
        c->opts->progress(c->stats, c->opts->progress_data);
    }
}

/* Writes behind the filters (ioh-filter-behind.c): the writer thread writes with the sink
 * through a copy of the IohCopy whose stats are its own (the sink counts its write calls
 * there), so the copy's stats are only ever touched on the filters' thread: the writer's
 * counts move over, atomically, as its writes are reaped there. */
typedef struct {
    IohCopy *c;
    IohCopy shadow;          /* the writer's: c's ends as at the first write, its own stats */
    IohStats stats;
    guint64 writes;          /* atomic: write calls not yet moved into c->stats */
    guint64 synced;          /* atomic: ... and bytes written O_DIRECT */
} Behind;

/* IOHELPER_WRITE_BEHIND=off: the sink's writes on the filters' thread (for comparisons). */
static gboolean
behind_off(void)
{
    return g_strcmp0(g_getenv("IOHELPER_WRITE_BEHIND"), "off") == 0;
}

/* The writer's IohCopy holds only what the sink's writes read (ioh-sink-file.c): a copy
 * of the whole one raced with the counters other threads move (the ring reader's reads).
 * No cancel: its O_DIRECT writes never wait for the fd (EAGAIN), and the strategy's
 * cancel is gone before the last writes behind are. */
static void
behind_start(gpointer data)
{
    Behind *b = data;
    IohCopy *c = b->c;

    c->stats->writes_behind = TRUE;
    b->stats = *c->stats;
    b->shadow = (IohCopy){ .src = c->src, .dst = c->dst, .opts = c->opts, .stats = &b->stats,
                           .source = c->source, .sink = c->sink, .align = c->align,
                           .dst_start = c->dst_start };
}

/* The queued pieces in one vectored write where they are aligned (file_writev). */
static gboolean
behind_writev(gpointer data, const struct iovec *iov, int cnt, GError **error)
{
    Behind *b = data;
    guint64 w0 = b->stats.writes, s0 = b->stats.synced;
    gboolean ok = b->c->sink->writev(&b->shadow, iov, cnt, error);

    __atomic_fetch_add(&b->writes, b->stats.writes - w0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&b->synced, b->stats.synced - s0, __ATOMIC_RELAXED);
    return ok;
}

static void
behind_done(gpointer data, gsize len)
{
    Behind *b = data;

    b->c->stats->writes += __atomic_exchange_n(&b->writes, 0, __ATOMIC_RELAXED);
    b->c->stats->synced += __atomic_exchange_n(&b->synced, 0, __ATOMIC_RELAXED);
    ioh_copy_stored(b->c, len);
}

void
ioh_copy_route_filters(IohCopy *c)
{
    ioh_filter_chain_set_sink(c->filters, ioh_end_is_storage(c->dst) ? c->dst->name
                                                                     : c->src->name,
                              c->dst->direct ? c->align : 1, to_sink, to_sinkv, c);
    /* Only on the ring: its reader thread keeps the pipe drained meanwhile (the io_uring
     * stage writes behind on its own). Other sinks have writes of their own in flight
     * (NBD, RBD) or the page cache's write-back. */
    if (c->dst->direct && (c->dst->kind == IOH_KIND_FILE || c->dst->kind == IOH_KIND_BLOCK) &&
        c->sink->writev && c->strategy == &ioh_strategy_ring &&
        ioh_filter_chain_transforms(c->filters) && !behind_off()) {
        Behind *b = g_new0(Behind, 1);
        IohFilterBehindSink sink = { behind_start, behind_writev, behind_done, b, g_free };

        b->c = c;
        ioh_filter_chain_set_behind(c->filters, &sink);
    }
}

gssize
ioh_source_read_by_peek(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error)
{
    gsize have = 0;

    (void)pos;
    while (have < len) {
        gsize part = len - have;
        const char *p = rd->c->source->peek(rd->c, &part, error);

        if (!p) {
            return -1;
        }
        if (part == 0) {
            break;
        }
        memcpy(buf + have, p, part);
        have += part;
    }
    return (gssize)have;
}
