/* ioh-filter-behind.c - writes behind a transforming filter (ioh-filter-behind.h)
 *
 * A filtered O_DIRECT save once wrote each output buffer synchronously on the thread that
 * runs the filters, so the disk idled while the filter made the next buffer (age's seal,
 * zstd's frames): about 40% of the writer's time in an strace of a 1 GiB encrypted save,
 * against 10-17% for the raw save (docs/engine.md, "Writes behind"). Here one thread
 * writes the queued buffers in order, each with the sink's own write (so the fault shim,
 * the tail's page-cache write and the messages are the sink's), while the filter thread
 * goes on. The first failed write is sticky: nothing after it is written, and every later
 * call on the filter thread returns it.
 */
#include "ioh-filter-behind.h"

#define BEHIND_QUEUE 8     /* writes queued at most: more than any filter's buffers */
/* Queued buffers written by one call at most: when the disk is the slower side the
 * buffers queue up and go as one larger write (a filter that returns quickly hands on
 * 1-2 MiB at a time, and fewer, larger O_DIRECT writes are faster here: the ring's
 * IOH_RING_MAX_SPAN) */
#define BEHIND_SPAN 4

typedef struct {
    const void *buf;
    gsize len;
} Job;

struct _IohFilterBehind {
    IohFilterBehindSink sink;
    GThread *thread;
    GMutex lock;
    GCond cond;
    Job job[BEHIND_QUEUE];
    guint64 submitted;       /* tickets given (the last one's number) */
    guint64 completed;       /* writes done or dropped, in order */
    guint64 done_bytes;      /* written, not yet counted by sink.done */
    GError *error;           /* the first failure */
    gboolean stop;
};

/* Counts what the writer wrote since the last call, on the filter's thread. */
static void
reap(IohFilterBehind *b)
{
    guint64 n;

    g_mutex_lock(&b->lock);
    n = b->done_bytes;
    b->done_bytes = 0;
    g_mutex_unlock(&b->lock);
    if (n > 0) {
        b->sink.done(b->sink.data, (gsize)n);
    }
}

static gpointer
behind_thread(gpointer data)
{
    IohFilterBehind *b = data;

    g_mutex_lock(&b->lock);
    for (;;) {
        struct iovec iov[BEHIND_SPAN];
        GError *err = NULL;
        gboolean ok;
        guint n;
        gsize len = 0;

        while (!b->stop && b->completed == b->submitted) {
            g_cond_wait(&b->cond, &b->lock);
        }
        if (b->stop) {
            break;
        }
        n = (guint)MIN(b->submitted - b->completed, (guint64)BEHIND_SPAN);
        for (guint i = 0; i < n; i++) {
            Job *j = &b->job[(b->completed + i) % BEHIND_QUEUE];

            iov[i] = (struct iovec){ (void *)j->buf, j->len };
            len += j->len;
        }
        g_mutex_unlock(&b->lock);
        ok = !b->error && b->sink.writev(b->sink.data, iov, (int)n, &err);
        g_mutex_lock(&b->lock);
        if (ok) {
            b->done_bytes += len;
        } else if (!b->error) {
            b->error = err;
        } else {
            g_clear_error(&err);
        }
        b->completed += n;
        g_cond_broadcast(&b->cond);
    }
    g_mutex_unlock(&b->lock);
    return NULL;
}

IohFilterBehind *
ioh_filter_behind_new(const IohFilterBehindSink *sink)
{
    IohFilterBehind *b = g_new0(IohFilterBehind, 1);

    b->sink = *sink;
    g_mutex_init(&b->lock);
    g_cond_init(&b->cond);
    return b;
}

/* The first failure, copied into @error (FALSE), or TRUE. Called with the lock held. */
static gboolean
failed(IohFilterBehind *b, GError **error)
{
    if (b->error) {
        g_propagate_error(error, g_error_copy(b->error));
        return FALSE;
    }
    return TRUE;
}

gboolean
ioh_filter_behind_submit(IohFilterBehind *b, const void *buf, gsize len,
                         guint64 *ret_ticket, GError **error)
{
    gboolean ok;

    if (!b->thread) {
        if (b->sink.start) {
            b->sink.start(b->sink.data);
        }
        b->thread = g_thread_new("ioh-behind", behind_thread, b);
    }
    g_mutex_lock(&b->lock);
    while (!b->error && b->submitted - b->completed == BEHIND_QUEUE) {
        g_cond_wait(&b->cond, &b->lock);
    }
    ok = failed(b, error);
    if (ok) {
        b->job[b->submitted % BEHIND_QUEUE] = (Job){ buf, len };
        *ret_ticket = ++b->submitted;
        g_cond_broadcast(&b->cond);
    }
    g_mutex_unlock(&b->lock);
    reap(b);
    return ok;
}

gboolean
ioh_filter_behind_wait(IohFilterBehind *b, guint64 ticket, GError **error)
{
    gboolean ok;

    g_mutex_lock(&b->lock);
    while (!b->error && b->completed < ticket) {
        g_cond_wait(&b->cond, &b->lock);
    }
    ok = failed(b, error);
    g_mutex_unlock(&b->lock);
    reap(b);
    return ok;
}

gboolean
ioh_filter_behind_drain(IohFilterBehind *b, GError **error)
{
    guint64 last;

    g_mutex_lock(&b->lock);
    last = b->submitted;
    g_mutex_unlock(&b->lock);
    return ioh_filter_behind_wait(b, last, error);
}

void
ioh_filter_behind_free(IohFilterBehind *b)
{
    if (!b) {
        return;
    }
    if (b->thread) {
        g_mutex_lock(&b->lock);
        b->stop = TRUE;    /* a write under way ends first; those not begun are dropped */
        g_cond_broadcast(&b->cond);
        g_mutex_unlock(&b->lock);
        g_thread_join(b->thread);
    }
    if (b->sink.free) {
        b->sink.free(b->sink.data);
    }
    g_clear_error(&b->error);
    g_mutex_clear(&b->lock);
    g_cond_clear(&b->cond);
    g_free(b);
}
