/* ioh-strategy-splice.c - splice(2) between a pipe and the page cache, one thread: a save
 * (pipe -> file) or a restore (file -> pipe) in the buffered and --fadvise modes, when no
 * filter needs the bytes (ioh-copy.c chooses it)
 *
 * The pages move between the pipe and the page cache without a copy through the helper:
 * the copy into and out of a user buffer is most of the CPU a save or restore costs. The
 * cache policy runs after each splice as after each chunk of the inline strategy
 * (write-behind, drop-behind). No read-ahead advice of our own in front of a restore:
 * POSIX_FADV_WILLNEED ahead of the splice cost CPU and made no restore faster; the
 * kernel's own readahead, doubled by POSIX_FADV_SEQUENTIAL under --fadvise, keeps the
 * splice fed. Where the kernel refuses (EINVAL: an O_APPEND file, a file system without
 * splice), the copy goes on with read/write (inline) from where it stands. So does the
 * last pipe-full of a --fadvise restore: pages spliced into a pipe are held by it until
 * the reader takes them, and a held page cannot be dropped, so that tail is copied and
 * the image leaves nothing cached.
 *
 * A restore gains the most: a tenth of read/write's CPU or less. A save gains little:
 * splice into a file still copies once in the kernel, and the page cache's own work per
 * page dominates. That is the floor of this kernel, not this loop's: benchmarks/cpu-save
 * runs the bare splice loop (benchmarks/splicefloor.c) beside the helper and it costs the
 * same (docs/engine.md, "What a save costs in CPU"). The figures: docs/benchmarks.md,
 * "Engine A/Bs: Splice".
 */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    gboolean save;           /* pipe -> file; else file -> pipe */
    int pipe_fd;             /* the pipe end, for EAGAIN */
    short pipe_events;
    guint64 total;           /* restore: stream bytes the file holds (G_MAXUINT64: unknown) */
    guint64 limit;           /* stream bytes to move by splice, the rest by inline */
} IohSplicer;

/* A failed splice: which end the error belongs to. A save's pipe is readable and its
 * file writable (ioh-copy.c checked), so a save's errors are the file's; a restore's are
 * the file's too, except EPIPE: the reader of the pipe went away. */
static gboolean
splice_error(IohCopy *c, const IohSplicer *s, int errsv, GError **error)
{
    if (s->save) {
        return ioh_copy_retry(c, errsv, s->pipe_fd, s->pipe_events, "write", c->dst->name,
                              error);
    }
    if (errsv == EPIPE || errsv == EAGAIN) {
        return ioh_copy_retry(c, errsv, s->pipe_fd, s->pipe_events, "write", c->dst->name,
                              error);
    }
    return ioh_copy_retry(c, errsv, s->pipe_fd, s->pipe_events, "read", c->src->name, error);
}

/* One splice of up to @want bytes, tried again after EINTR and EAGAIN: the bytes moved,
 * 0 at the end of the stream, -1 with @error set, or -2 when the kernel refuses to splice
 * these ends (EINVAL). */
static gssize
splice_once(IohCopy *c, const IohSplicer *s, gsize want, GError **error)
{
    for (;;) {
        gssize n;

        if (s->save && c->poll_src && c->cancel &&
            !ioh_copy_wait(c, c->src->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
        n = splice(c->src->fd, NULL, c->dst->fd, NULL, want, SPLICE_F_MOVE);
        /* one call on each side: a read of the source and a write of the sink */
        ioh_copy_count_read(c);
        c->stats->reads = c->reads;
        c->stats->writes++;
        c->stats->splices++;
        if (n >= 0) {
            return n;
        }
        if (errno == EINVAL) {
            return -2;
        }
        if (!splice_error(c, s, errno, error)) {
            return -1;
        }
    }
}

/* The stream bytes a restore's file holds from where the stream starts. */
static guint64
file_stream_size(IohCopy *c)
{
    struct stat st;

    if (c->src->kind != IOH_KIND_FILE || fstat(c->src->fd, &st) < 0) {
        return G_MAXUINT64;
    }
    return (guint64)st.st_size > c->src_start ? (guint64)st.st_size - c->src_start : 0;
}

/* What a copy splices: all of a save; a restore up to the last pipe-full when --fadvise
 * must drop it (see the top). */
static void
splicer_init(IohCopy *c, IohSplicer *s)
{
    const IohCopyOptions *opts = c->opts;
    int pipe_size;

    s->save = ioh_end_is_storage(c->dst);
    s->pipe_fd = s->save ? c->src->fd : c->dst->fd;
    s->pipe_events = s->save ? POLLIN : POLLOUT;
    s->total = s->save ? G_MAXUINT64 : file_stream_size(c);
    if (opts->has_length) {
        s->total = MIN(s->total, opts->length);
    }
    s->limit = s->total;
    /* A buffered restore gets the read-ahead --fadvise gets (ioh-source-file.c): it made
     * QEMU 10's restores faster and QEMU 7.2's no slower (docs/benchmarks.md, "Engine A/Bs:
     * Splice"). */
    if (!s->save && opts->mode == IOH_CACHE_BUFFERED && c->src->kind == IOH_KIND_FILE) {
        posix_fadvise(c->src->fd, (off_t)c->src_start, 0, POSIX_FADV_SEQUENTIAL);
    }
    if (!s->save && opts->mode == IOH_CACHE_FADVISE) {
        pipe_size = fcntl(s->pipe_fd, F_GETPIPE_SZ);
        pipe_size = pipe_size > 0 ? pipe_size : 1024 * 1024;
        c->cache.held = (guint64)pipe_size;
        s->limit = s->total == G_MAXUINT64 ? 0 : s->total - MIN(s->total, (guint64)pipe_size);
    }
}

/* Splices until the limit or the end of the stream. 1: done, 0: the rest is inline's
 * (the limit, or EINVAL), -1: failed. */
static int
splice_loop(IohCopy *c, const IohSplicer *s, GError **error)
{
    for (;;) {
        gsize want = c->slot;
        gssize n;

        if (c->in >= s->limit) {
            return c->in >= s->total ? 1 : 0;
        }
        want = (gsize)MIN((guint64)want, s->limit - c->in);
        if (!ioh_error_check_cancellable(c->cancel, "copy", NULL, error)) {
            return -1;
        }
        n = splice_once(c, s, want, error);
        if (n == -2) {
            g_debug("splice refused (%s, %s): read and write from byte %" G_GUINT64_FORMAT,
                    c->src->name, c->dst->name, c->in);
            return 0;
        }
        if (n < 0 || !ioh_copy_moved(c, (gsize)n, TRUE, error)) {
            return -1;
        }
        ioh_copy_report_progress(c, FALSE);
        if (n == 0) {
            return 1;
        }
    }
}

static gboolean
splice_run(IohCopy *c, GError **error)
{
    IohSplicer s;
    int done;

    splicer_init(c, &s);
    if (s.limit == G_MAXUINT64) {
        g_debug("strategy splice: %s, the whole stream", s.save ? "pipe to file" : "file to pipe");
    } else {
        g_debug("strategy splice: %s, up to byte %" G_GUINT64_FORMAT,
                s.save ? "pipe to file" : "file to pipe", s.limit);
    }
    /* The caller's cancellable, if any, is what a splice from a silent pipe waits on. */
    c->cancel = c->opts->cancellable;
    done = splice_loop(c, &s, error);
    if (done != 0) {
        return done > 0;
    }
    return ioh_strategy_inline.run(c, error);
}

const IohStrategy ioh_strategy_splice = {
    .name = "splice",
    .run = splice_run,
};
