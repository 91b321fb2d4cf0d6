/* ioh-strategy-uring.c - an O_DIRECT save from a pipe on one thread, through io_uring
 *
 * Why: the ring strategy's reader thread and writer thread hand each buffer over (a
 * futex wake-up each way), and the reader waits for the end of each write into the pipe
 * in epoll_wait() then poll(), then read(): most of what a --direct save costs beyond the
 * copy out of the pipe (docs/engine.md, "What a save costs in CPU"). Here one thread
 * keeps one read of the pipe and up to two O_DIRECT writes in flight and sleeps in one
 * io_uring_enter() for whichever completes. A read of an empty pipe waits in the kernel
 * for the pipe's wake-up, which comes at the end of each write into it (the wait the
 * ring's reader makes with epoll), and the buffers are registered, so no read or write
 * pins or looks up their pages.
 *
 * The buffers are one ring of bytes (the copy's buffers, as many as the memory account
 * gives, fixed for the whole copy: registered pages must not be given back): stream
 * bytes [done, sub) are being written, [sub, rd) wait for a write, the rest is free and
 * the read fills it. A write takes up to IOH_RING_MAX_SPAN buffers' worth, aligned; the
 * unaligned tail goes through the file sink (the page cache) once every write is done.
 * A failed write with EINVAL goes through the file sink too, which knows what EINVAL
 * means (RLIMIT_FSIZE, a file system that refuses O_DIRECT). When the kernel refuses
 * io_uring (an old kernel, a sandbox, io_uring_disabled), the ring strategy does the copy
 * and --stats says why.
 */
#include "ioh-uring.h"
#include "ioh-relay.h"
#include "ioh-uring-stage.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes in flight at most: more would not help (ext4 holds the inode lock through an
 * extending O_DIRECT write), and the read needs the rest of the ring. */
#define IOH_URING_WRITES 2
/* A wait for the pipe's next wake-up gives up after this long, and the read goes on as
 * without (a pipe whose writer closed before the last read wakes nobody again). */
#define IOH_URING_EDGE_NS (20 * 1000 * 1000)
/* Buffers per write at most, as the ring's O_DIRECT writes (ioh-ring.c). */
#define IOH_URING_SPAN 4

enum { TAG_READ = 1, TAG_POLL, TAG_CANCEL, TAG_ABORT, TAG_EDGE, TAG_WRITE };

typedef struct {
    IohCopy *c;
    struct io_uring ring;
    gboolean fixed;      /* the buffers are registered */
    gsize size;          /* bytes of buffers */
    gsize span;          /* bytes per write at most */
    guint64 rd;          /* stream bytes read */
    guint64 sub;         /* ... handed to writes */
    guint64 done;        /* ... written, in stream order */
    gboolean reading, poll_first, eof;
    gsize asked;         /* bytes the read in flight asked for */
    gsize pipe_cap;      /* the pipe's size */
    gboolean empty;      /* the last read emptied the pipe */
    gboolean edges_on;   /* the multishot poll on the pipe is armed */
    gboolean edges_off;  /* ... and refused: reads wait for data in the kernel */
    guint64 edges;       /* its completions: each the end of a write into the pipe */
    guint64 edges_read;  /* ... when the last read was submitted */
    guint inflight;      /* reads, polls and writes submitted and not completed */
    IohUringWrite w[IOH_URING_WRITES];   /* in stream order from wh, wn of them */
    guint wh, wn;
    guint64 charged;     /* bytes taken from the memory account */
    IohRelay relay; /* the pipe the reads read, when there is one (ioh-relay.c) */
    gboolean relayed;
    GError *error;
    IohUringStage *stage; /* the filters and their writes (ioh-uring-stage.c), or NULL */
} IohUring;

gboolean
ioh_uring_fits(IohCopy *c)
{
    const char *env = g_getenv("IOHELPER_IO_URING");

    if (c->src->kind != IOH_KIND_PIPE ||
        !c->poll_src || !ioh_end_is_storage(c->dst) || !c->dst->direct) {
        return FALSE;
    }
    if ((fcntl(c->dst->fd, F_GETFL) & O_APPEND) != 0) {
        return FALSE;    /* positioned writes: an O_APPEND file would reorder them */
    }
    if (env && g_str_equal(env, "off")) {
        g_strlcpy(c->stats->io_uring, "off (IOHELPER_IO_URING=off)", sizeof(c->stats->io_uring));
        return FALSE;
    }
    if (!ioh_uring_stage_wanted(c, env)) {
        return FALSE;
    }
    if (c->opts->budget) {
        /* Its buffers are registered for the whole copy; the ring's grow and shrink
         * within the host's budget, which matters more there than the CPU. */
        g_strlcpy(c->stats->io_uring, "not used (--memory-budget: the ring)",
                  sizeof(c->stats->io_uring));
        return FALSE;
    }
    return TRUE;
}

static void
uring_fail(IohUring *u, GError *err)
{
    if (!u->error) {
        u->error = err;
    } else {
        g_error_free(err);
    }
}

static struct io_uring_sqe *
uring_sqe(IohUring *u, guint64 tag)
{
    /* The ring has room for every operation the copy can have at once. */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

    io_uring_sqe_set_data64(sqe, tag);
    if (tag != TAG_CANCEL && tag != TAG_ABORT && tag != TAG_EDGE) {
        u->inflight++;
    }
    return sqe;
}

/* A read of @res bytes (or -errno) completed. */
static void
read_done(IohUring *u, int res)
{
    IohCopy *c = u->c;
    GError *err = NULL;

    ioh_copy_count_read(c);
    u->reading = FALSE;
    if (u->error) {
        return;
    }
    if (res == -EAGAIN || res == -EINTR || res == -ECANCELED) {
        /* A non-blocking pipe (EAGAIN): wait for it in a poll linked before the read. A
         * read cancelled with its poll: the read again, alone, says what went wrong. */
        u->poll_first = res == -EAGAIN;
        return;
    }
    if (res < 0) {
        ioh_error_set_errno(&err, -res, "read", c->src->name);
        uring_fail(u, err);
    } else if (res == 0) {
        u->eof = TRUE;
    } else if (u->relayed) {
        u->rd += (guint64)res;
        u->relay.held -= (gsize)res;    /* the splice told whether the pipe is empty */
    } else {
        u->rd += (guint64)res;
        /* Less than asked, or the pipe's size: the pipe is empty now. */
        u->empty = (gsize)res < u->asked || u->asked >= u->pipe_cap;
    }
}

/* Splices what the producer's pipe holds (up to @len bytes) into the relay, when it is
 * empty. FALSE when there is nothing to read now: the pipe is empty (wait for its next
 * wake-up), ended, or failed. */
static gboolean
relay_fill(IohUring *u, gsize len)
{
    IohCopy *c = u->c;
    gsize ask = MIN(len, u->pipe_cap);
    gssize n;
    GError *err = NULL;

    if (u->relay.held > 0) {
        return TRUE;
    }
    n = ioh_relay_fill(&u->relay, c->src->fd, ask);
    ioh_copy_count_read(c);
    if (n == -EAGAIN) {
        u->empty = TRUE;
        u->edges_read = u->edges;
        return FALSE;
    }
    if (n < 0) {
        ioh_error_set_errno(&err, (int)-n, "read", c->src->name);
        uring_fail(u, err);
        return FALSE;
    }
    u->eof = n == 0;
    /* Less than asked, or the pipe's size: the pipe is empty now. */
    u->empty = (gsize)n < ask || ask >= u->pipe_cap;
    return n > 0;
}

/* The pipe's wake-ups, one completion each (a multishot poll): the producer wakes the
 * pipe's readers after each write into it, or when it filled the pipe and sleeps. A read
 * made before that found it copying into the pipe and spun on the pipe's lock
 * (mutex_spin_on_owner, a fifth of this strategy's CPU in perf, as in the ring's reader:
 * ioh-pipe-edge.c). */
static void
arm_edges(IohUring *u)
{
    if (!u->edges_on && !u->edges_off) {
        io_uring_prep_poll_multishot(uring_sqe(u, TAG_EDGE), u->c->src->fd, POLLIN);
        u->edges_on = TRUE;
    }
}

static void
edge_done(IohUring *u, int res, unsigned flags)
{
    if (res < 0) {
        /* A kernel without multishot polls (before 5.13): reads wait in the kernel. */
        u->edges_off = res != -ECANCELED || u->edges_off;
        u->edges_off |= res == -EINVAL;
    } else {
        u->edges++;
    }
    u->edges_on = (flags & IORING_CQE_F_MORE) != 0;
}

/* TRUE when a read now would find the producer still writing into the pipe: the last
 * read emptied it and no wake-up has come since. */
static gboolean
before_edge(const IohUring *u)
{
    return u->edges_on && u->empty && u->edges == u->edges_read;
}

/* Puts the next read of the pipe in flight, into the free part of the ring up to its
 * end: the pipe gives what it holds. */
static void
queue_read(IohUring *u)
{
    IohCopy *c = u->c;
    guint64 limit = c->opts->has_length ? c->opts->length : G_MAXUINT64;
    gsize off = (gsize)(u->rd % u->size);
    gsize len = MIN(u->size - off, u->size - (gsize)(u->rd - u->done));
    struct io_uring_sqe *sqe;
    int fd, f;

    /* What the relay holds is read at once; the pipe, after its next wake-up. */
    if (u->reading || u->eof || u->error ||
        (before_edge(u) && (!u->relayed || u->relay.held == 0))) {
        return;
    }
    if (u->relayed && u->edges_off && u->relay.held == 0) {
        u->relayed = FALSE;    /* no wake-ups to wait for the pipe by: read it in a poll */
    }
    fd = u->relayed ? u->relay.fd[0] : c->src->fd;
    if (u->rd >= limit) {
        u->eof = TRUE;
        return;
    }
    len = (gsize)MIN((guint64)len, limit - u->rd);
    if (len == 0 || (u->relayed && !relay_fill(u, len))) {
        return;
    }
    len = u->relayed ? MIN(len, u->relay.held) : len;
    if ((f = ioh_uring_fault(fd, FALSE, &len, -1)) < 0) {
        read_done(u, f);
        return;
    }
    if (u->poll_first) {
        sqe = uring_sqe(u, TAG_POLL);
        io_uring_prep_poll_add(sqe, fd, POLLIN);
        sqe->flags |= IOSQE_IO_LINK;
        u->poll_first = FALSE;
    }
    sqe = uring_sqe(u, TAG_READ);
    if (u->fixed) {
        io_uring_prep_read_fixed(sqe, fd, c->mem + off, (unsigned)len, (__u64)-1, 0);
    } else {
        io_uring_prep_read(sqe, fd, c->mem + off, (unsigned)len, (__u64)-1);
    }
    u->reading = TRUE;
    u->asked = len;
    u->edges_read = u->edges;
}

/* Submits write @w (or completes it at once with the fault shim's result). */
static void write_done(IohUring *u, IohUringWrite *w, int res);

static void
submit_write(IohUring *u, IohUringWrite *w)
{
    IohCopy *c = u->c;
    gsize len = w->len;
    guint64 pos = c->dst_start + w->start;
    char *buf = c->mem + (gsize)(w->start % u->size);
    struct io_uring_sqe *sqe;
    int f;

    w->queued = FALSE;
    w->direct = c->dst->direct;
    if ((f = ioh_uring_fault(c->dst->fd, TRUE, &len, (gint64)pos)) < 0) {
        write_done(u, w, f);
        return;
    }
    w->asked = len;
    sqe = uring_sqe(u, TAG_WRITE + (guint64)(w - u->w));
    if (u->fixed) {
        io_uring_prep_write_fixed(sqe, c->dst->fd, buf, (unsigned)len, pos, 0);
    } else {
        io_uring_prep_write(sqe, c->dst->fd, buf, (unsigned)len, pos);
    }
    w->busy = TRUE;
}

/* The writes at the head that are done: their bytes count, in stream order. */
static void
retire(IohUring *u)
{
    IohCopy *c = u->c;

    while (u->wn > 0 && u->w[u->wh].len == 0 && !u->w[u->wh].busy) {
        GError *err = NULL;
        guint64 end = u->w[u->wh].start;

        ioh_uring_write_retired(c, &u->w[u->wh]);
        u->wh = (u->wh + 1) % IOH_URING_WRITES;
        u->wn--;
        if (!ioh_copy_moved(c, (gsize)(end - u->done), FALSE, &err)) {
            uring_fail(u, err);
        }
        u->done = end;
    }
    ioh_copy_report_progress(c, FALSE);
}

/* Writes @len bytes of the ring from stream offset @start through the file sink, at
 * their place in the file: what an O_DIRECT write cannot take. */
static gboolean
write_through_sink(IohUring *u, guint64 start, gsize len, GError **error)
{
    return ioh_uring_write_through(u->c, u->c->mem, u->size, start, len, error);
}

static gboolean
strategy_through(gpointer data, IohUringWrite *w, GError **error)
{
    return write_through_sink(data, w->start, w->len, error);
}

static void
strategy_fail(gpointer data, GError *error)
{
    uring_fail(data, error);
}

static void
write_done(IohUring *u, IohUringWrite *w, int res)
{
    if (ioh_uring_write_done(u->c, w, res, u->error != NULL, strategy_through, strategy_fail,
                             u)) {
        retire(u);
    }
}

/* Submits the writes to redo, then new ones: a span at a time (less at the end of the
 * ring), the aligned part of what is left once the stream has ended. */
static void
queue_writes(IohUring *u)
{
    IohCopy *c = u->c;
    gsize align = c->dst->direct ? c->dst->align : 1;

    if (u->stage) {
        /* Through the filters: the stage writes their output; what they took is free.
         * Reads go on while the stage waits for the disk: what they brought (the end of
         * the stream, maybe) is fed at once, or the loop would wait for the pipe with a
         * span ready and the ring full. */
        GError *err = NULL;
        guint64 before;
        gboolean ok;

        do {
            before = u->sub;
            ok = ioh_uring_stage_feed(u->stage, c->mem, u->size, &u->sub, u->rd, u->eof, &err);
            u->done = u->sub;
        } while (ok && u->sub != before && u->sub < u->rd);
        if (!ok) {
            uring_fail(u, err);
        }
        return;
    }
    for (guint i = 0; i < u->wn && !u->error; i++) {
        IohUringWrite *w = &u->w[(u->wh + i) % IOH_URING_WRITES];

        if (w->queued) {
            submit_write(u, w);
        }
    }
    while (!u->error && u->wn < IOH_URING_WRITES) {
        gsize off = (gsize)(u->sub % u->size);
        gsize room = u->size - off;
        gsize len = (gsize)MIN(u->rd - u->sub, (guint64)MIN(room, u->span));
        IohUringWrite *w;

        len = IOH_ALIGN_DOWN(len, align);
        if (len == 0 || (len < u->span && len < room && !u->eof)) {
            return;
        }
        w = &u->w[(u->wh + u->wn++) % IOH_URING_WRITES];
        *w = (IohUringWrite){ .start = u->sub, .len = len };
        u->sub += len;
        submit_write(u, w);
    }
}

/* One completion. */
static void
complete(IohUring *u, guint64 tag, int res, unsigned flags)
{
    GError *err = NULL;

    if (tag == TAG_CANCEL) {
        /* The caller's cancellable became readable (or its poll ended with the ring). */
        if (res > 0) {
            ioh_error_set_cancelled(&err, "copy", NULL);
            uring_fail(u, err);
        }
        return;
    }
    if (tag == TAG_ABORT) {
        return;
    }
    if (tag == TAG_EDGE) {
        edge_done(u, res, flags);
        return;
    }
    u->inflight--;
    if (tag == TAG_READ) {
        ioh_uring_fault_done(u->relayed ? u->relay.fd[0] : u->c->src->fd, FALSE, u->asked,
                             res);
        read_done(u, res);
    } else if (tag >= TAG_WRITE && tag < TAG_WRITE + IOH_URING_WRITES) {
        ioh_uring_fault_done(u->c->dst->fd, TRUE, u->w[tag - TAG_WRITE].asked, res);
        write_done(u, &u->w[tag - TAG_WRITE], res);
    } else if (tag >= IOH_URING_STAGE_TAG && u->stage) {
        ioh_uring_stage_done(u->stage, tag, res);
    }
    /* TAG_POLL: its read, linked after it, tells what came of it. */
}

/* Submits what is queued, waits for one completion at least (a wait for the pipe's
 * wake-up alone at most IOH_URING_EDGE_NS), handles every one there is. FALSE when
 * io_uring itself failed (the copy's error is set). */
static gboolean
uring_wait(IohUring *u)
{
    struct __kernel_timespec ts = { .tv_nsec = IOH_URING_EDGE_NS };
    gboolean edge_only = u->inflight == 0 || (!u->reading && before_edge(u) &&
                                              u->wn == 0);
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    int r = edge_only ? io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL)
                      : io_uring_submit_and_wait(&u->ring, 1);

    if (r == -ETIME) {
        u->empty = FALSE;
    } else if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
        GError *err = NULL;

        ioh_error_set(&err, -r, "write", u->c->dst->name, "io_uring: %s", g_strerror(-r));
        uring_fail(u, err);
        return FALSE;
    }
    io_uring_for_each_cqe(&u->ring, head, cqe) {
        complete(u, cqe->user_data, cqe->res, cqe->flags);
        n++;
    }
    io_uring_cq_advance(&u->ring, n);
    return TRUE;
}

/* After an error: the read in flight (a silent producer may never end it) is cancelled,
 * and every operation is waited for, so that none still uses the buffers. */
static void
uring_drain(IohUring *u)
{
    if (u->reading) {
        io_uring_prep_cancel64(uring_sqe(u, TAG_ABORT), TAG_READ, 0);
        io_uring_prep_cancel64(uring_sqe(u, TAG_ABORT), TAG_POLL, 0);
    }
    while (u->inflight > 0) {
        struct io_uring_cqe *cqe;
        int r = io_uring_submit_and_wait(&u->ring, 1);

        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
            return;    /* io_uring_queue_exit() cancels and waits for the rest */
        }
        while (io_uring_peek_cqe(&u->ring, &cqe) == 0) {
            complete(u, cqe->user_data, cqe->res, cqe->flags);
            io_uring_cqe_seen(&u->ring, cqe);
        }
    }
}

/* Moves the stream until its end and its last aligned write, or an error. */
static gboolean
uring_loop(IohUring *u)
{
    IohCopy *c = u->c;
    GError *err = NULL;

    for (;;) {
        arm_edges(u);
        queue_read(u);
        queue_writes(u);
        if (u->error) {
            break;
        }
        if (u->eof && u->wn == 0 && !u->reading && u->stage && u->sub == u->rd) {
            if (ioh_uring_stage_end(u->stage, &err)) {
                return TRUE;
            }
            uring_fail(u, err);
            break;
        }
        if (u->eof && u->wn == 0 && !u->reading) {
            /* The tail (less than the alignment) through the page cache. */
            return u->rd == u->done ||
                   (write_through_sink(u, u->done, (gsize)(u->rd - u->done), &u->error) &&
                    ioh_copy_moved(c, (gsize)(u->rd - u->done), FALSE, &u->error));
        }
        if ((u->inflight > 0 || u->edges_on) && !uring_wait(u)) {
            break;
        }
    }
    uring_drain(u);
    return FALSE;
}

/* Submits, waits and handles completions for the filter stage, the pipe read going on. */
static gboolean
uring_pump(gpointer data)
{
    IohUring *u = data;

    arm_edges(u);
    queue_read(u);
    return uring_wait(u) && !u->error;
}

/* Registers @iov (the ring's buffers) and the filter stage's, which it links to the ring.
 * TRUE when @iov is registered. */
static gboolean
uring_register(IohUring *u, struct iovec *iov)
{
    struct iovec both[2] = { *iov };
    IohUringLink link = { .ring = &u->ring, .inflight = &u->inflight, .error = &u->error,
                          .wait = uring_pump, .data = u, .buf_index = -1 };

    if (!u->stage) {
        return io_uring_register_buffers(&u->ring, iov, 1) == 0;
    }
    both[1] = ioh_uring_stage_buffer(u->stage);
    if (io_uring_register_buffers(&u->ring, both, 2) == 0) {
        link.buf_index = 1;
    }
    ioh_uring_stage_link(u->stage, &link);
    return link.buf_index == 1 || io_uring_register_buffers(&u->ring, iov, 1) == 0;
}

/* The ring, its buffers' memory and their registration. FALSE with @why when the kernel
 * refuses io_uring. */
static gboolean
uring_setup(IohUring *u, char *why, gsize why_len)
{
    IohCopy *c = u->c;
    struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER |
                                          IORING_SETUP_DEFER_TASKRUN };
    guint64 got;
    struct iovec iov;
    int r = io_uring_queue_init_params(16, &u->ring, &p);

    if (r == -EINVAL) {
        /* A kernel before 6.1: without the flags (task work then runs at any time). */
        memset(&p, 0, sizeof(p));
        r = io_uring_queue_init_params(16, &u->ring, &p);
    }
    if (r < 0) {
        g_snprintf(why, why_len, "refused by the kernel (%s), threads instead", g_strerror(-r));
        return FALSE;
    }
    got = ioh_mem_grow(c->opts->memory, "ring", (guint64)(c->nslots - 1) * c->slot, c->slot);
    u->charged = got;
    u->size = c->slot * (1 + (gsize)(got / c->slot));
    /* Whole multiples of the alignment, or a span would never fill (small buffers). */
    u->span = MAX(IOH_ALIGN_DOWN(MIN(u->size / 2, c->slot * IOH_URING_SPAN), c->align),
                  c->align);
    if ((guintptr)c->mem % (2 << 20) == 0 && u->size % (2 << 20) == 0) {
        madvise(c->mem, u->size, MADV_HUGEPAGE);
    }
    iov = (struct iovec){ .iov_base = c->mem, .iov_len = u->size };
    u->stage = ioh_uring_stage_new(c, u->span);
    /* Registered pages count against RLIMIT_MEMLOCK: without, each I/O pins its own. */
    u->fixed = uring_register(u, &iov);
    u->pipe_cap = (gsize)MAX(fcntl(c->src->fd, F_GETPIPE_SZ), 4096);
    u->relayed = ioh_relay_open(&u->relay, u->pipe_cap);
    g_snprintf(why, why_len, "used%s%s%s", u->fixed ? ", registered buffers" : "",
               u->relayed ? ", relay pipe" : "", u->stage ? ", filters on its thread" : "");
    g_debug("strategy: io_uring, one thread, %zu bytes of buffers%s, writes of up to %zu "
            "bytes, %d at once", u->size, u->fixed ? " (registered)" : "", u->span,
            IOH_URING_WRITES);
    return TRUE;
}

static gboolean
uring_run(IohCopy *c, GError **error)
{
    IohUring u = { .c = c, .empty = TRUE };
    GCancellable *cancel = c->opts->cancellable;
    int cancel_fd = cancel ? g_cancellable_get_fd(cancel) : -1;
    gboolean ok;

    if (!uring_setup(&u, c->stats->io_uring, sizeof(c->stats->io_uring))) {
        g_debug("io_uring %s", c->stats->io_uring);
        if (cancel_fd >= 0) {
            g_cancellable_release_fd(cancel);
        }
        return ioh_strategy_ring.run(c, error);
    }
    if (cancel_fd >= 0) {
        io_uring_prep_poll_add(uring_sqe(&u, TAG_CANCEL), cancel_fd, POLLIN);
    }
    ok = uring_loop(&u);
    io_uring_queue_exit(&u.ring);
    ioh_uring_stage_free(u.stage);
    ioh_relay_close(&u.relay);
    if (cancel_fd >= 0) {
        g_cancellable_release_fd(cancel);
    }
    ioh_mem_shrink(c->opts->memory, "ring", u.charged);
    c->stats->reads = __atomic_load_n(&c->reads, __ATOMIC_RELAXED);
    if (!ok) {
        g_propagate_error(error, g_steal_pointer(&u.error));
        return FALSE;
    }
    g_clear_error(&u.error);
    return TRUE;
}

const IohStrategy ioh_strategy_uring = {
    .name = "uring",
    .run = uring_run,
};
