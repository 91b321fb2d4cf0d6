/* ioh-nbd.c - NBD connections, their I/O threads and the request pool (ioh-nbd.h)
 *
 * Why a thread per connection: the pipe side blocks in read()/write(), and libnbd only
 * moves bytes when its state machine is driven; without a driver the socket buffer fills
 * and the server idles while we wait on the pipe. Each thread polls its connection's fd in
 * the direction libnbd asks for, plus an eventfd that the issuing thread writes after a
 * command that the socket did not take whole (so that the thread, in poll() for the replies
 * only, sends the rest). libnbd's handle lock makes issuing from one thread and notifying
 * from another safe; completion callbacks run on the connection thread and only mark their
 * request done, waking the issuing thread only when it waits for that one. Both cut the
 * syscalls of a copy by a quarter or more. Saves also flush behind (IOH_NBD_FLUSH_BEHIND):
 * 32 MiB keeps the final flush short without flushing so often that the server waits. With
 * several connections each socket takes more at once, so the issuing thread sends most of
 * each command itself: a save's pipe reads and most sends share one thread. It used less
 * than a core on 2 cores, where the producer, the helper and the server fill both together
 * (docs/benchmarks.md, "Multi-conn"); with idle cores, issuing from the connection
 * threads would spread it. The figures: docs/benchmarks.md, "Engine A/Bs: NBD".
 */
#include "ioh-nbd.h"
#include "ioh-nbd-adapt.h"
#include "ioh-error.h"
#include "ioh-stats.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct {
    IohNbd *n;
    struct nbd_handle *h;
    int wake;                 /* eventfd: a command was issued, or stop */
    GThread *thread;
    gboolean quit;            /* atomic */
    char *failed;             /* under n->lock: why the connection died, a whole cause */
    int failed_errno;         /* ... and its errno */
    gboolean failed_weak;     /* ... only that it is closed, not why: a real cause replaces it */
    gboolean exited;          /* under n->lock: the thread has returned */
} Conn;

typedef struct {
    IohNbd *n;
    Conn *k;                  /* the connection its command went on */
    char *buf;
    gsize len;
    gboolean busy;            /* issued, not yet taken back */
    gboolean done;            /* under n->lock */
    gboolean waited;          /* the issuing thread waits for it (under n->lock): the
                               * completion wakes it only then, not for every request */
    int err;                  /* the command's errno (under n->lock) */
} Req;

/* No request (IohNbd.handed, .taken). */
#define NO_REQ G_MAXUINT

struct _IohNbd {
    const IohEnd *end;
    Conn *conns;              /* conns_max of them, the first nconns in use */
    guint nconns;
    guint most_conns;         /* the most open at once (--stats) */
    guint conns_max;
    guint rr;                 /* the next command's connection: rr % nconns */
    Req *reqs;
    guint nreqs;              /* the pool: the most the shape may use */
    guint limit;              /* commands in flight at most (the shape's) */
    guint *fifo;              /* requests in flight, oldest first (a ring of nreqs) */
    guint fifo_head;
    guint in_flight;
    guint *free;              /* requests neither in flight nor lent: a stack, so that a
                               * small shape reuses the same few buffers */
    guint nfree;
    guint handed;             /* ioh_nbd_next() lent it, not yet issued (NO_REQ) */
    guint taken;              /* ioh_nbd_take() lent it until the next call (NO_REQ) */
    IohNbdAdapt adapt;        /* the shape and why (ioh-nbd-adapt.h) */
    guint warmup;             /* commands to issue before the next window starts */
    guint64 win_bytes;        /* bytes issued in this window */
    gint64 win_start;
    gint64 win_waited;        /* ... and how long the copy's thread waited for commands */
    IohStats *stats;          /* the copy's: what the shape is, and why */
    gsize req_size;
    guint64 size;
    gboolean for_write;       /* a save: "write" names the operation of its errors */
    gboolean multi_conn;
    GMutex lock;
    GCond cond;
    gpointer layer_state;
    GDestroyNotify layer_state_free;
    guint stall_ms;           /* --stall-timeout (0: none) */
    GCancellable *cancellable;   /* the copy's (not ours) */
    gboolean behind_busy;     /* a write-behind flush is in flight (under lock) */
    int behind_err;           /* the first one that failed: its errno (under lock) */
    guint behind_next;        /* the connection of the next one */
    Conn *behind_k;           /* ... and of the last one */
    guint behind_count;
    guint64 unflushed;        /* bytes written since the last flush issued */
    gsize min_block;          /* the export's minimum block size: every request's offset
                               * and length a multiple of it (1: none) */
};

gboolean
ioh_nbd_too_small(GError **error, const char *what, const IohEnd *end, guint64 size)
{
    g_autofree char *msg = g_strdup_printf("export %s is %" G_GUINT64_FORMAT " bytes, the "
                                           "stream needs more", end->name, size);

    g_propagate_error(error, ioh_error_new_literal(ENOSPC, what, end->name, msg));
    return FALSE;
}

IohEnd *
ioh_nbd_end_new(const char *uri)
{
    IohEnd *end = g_new0(IohEnd, 1);

    end->fd = -1;
    end->kind = IOH_KIND_NBD;
    end->align = 4096;
    end->uri = g_strdup(uri);
    end->name = ioh_nbd_safe_name(uri);
    return end;
}

/* libnbd's last error of this thread, as the cause of an error naming the end. */
static gboolean
nbd_fail(GError **error, const IohEnd *end, const char *what)
{
    return ioh_nbd_fail(error, end->uri, what);
}

/* Records why @k failed, the first cause only (a weak one gives way to a real one). */
static void
conn_set_failed(Conn *k, int errsv, const char *why, gboolean weak)
{
    g_mutex_lock(&k->n->lock);
    if (!k->failed || (k->failed_weak && !weak)) {
        g_free(k->failed);
        k->failed = g_strdup(why);
        k->failed_errno = errsv;
        k->failed_weak = weak;
    }
    g_cond_broadcast(&k->n->cond);
    g_mutex_unlock(&k->n->lock);
}

/* The connection is dead or closed: @msg is libnbd's error in the thread that found out
 * (NULL: none). The server's end of the socket (EOF: it closed it, or died) only closes the
 * handle, and libnbd retires the commands in flight with ENOTCONN without an error; a
 * failed recv()/send() kills it, and only the call that met it says why ("Connection
 * reset by peer"); a call on a dead handle only says that it is ("invalid state: DEAD",
 * or ENOTCONN for a command it retired), the weak cause that a real one replaces. */
static void
conn_died(Conn *k, int errsv, const char *msg)
{
    const char *cause = msg ? ioh_nbd_cause(msg) : NULL;
    gboolean weak = !cause || *cause == '\0' || errsv == ENOTCONN ||
                    strstr(cause, "invalid state") || strstr(cause, "connection is closed");
    g_autofree char *why = NULL;

    if (weak && nbd_aio_is_closed(k->h)) {
        conn_set_failed(k, ENOTCONN, "the server closed the connection", FALSE);
        return;
    }
    why = weak ? g_strdup("connection to the server lost")
               : g_strdup_printf("connection to the server lost (%s)", cause);
    conn_set_failed(k, errsv && !weak ? errsv : ENOTCONN, why, weak);
}

static void
conn_failed(Conn *k, const char *why)
{
    conn_set_failed(k, EIO, why, FALSE);
}

/* poll() timed out: with commands in flight, the server has stalled (--stall-timeout). */
static gboolean
conn_stalled(Conn *k)
{
    g_autofree char *why = NULL;

    if (nbd_aio_in_flight(k->h) <= 0) {
        return TRUE;
    }
    why = g_strdup_printf("the server sent nothing for %u s (--stall-timeout)",
                          k->n->stall_ms / 1000);
    conn_set_failed(k, ETIMEDOUT, why, FALSE);
    return FALSE;
}

static void
conn_wake(Conn *k)
{
    guint64 one = 1;

    if (write(k->wake, &one, sizeof(one)) < 0) {
        /* the counter cannot overflow here: one per issued command at most */
    }
}

/* One round of the connection thread: FALSE once it is to stop. */
static gboolean
conn_poll_once(Conn *k)
{
    unsigned dir;
    struct pollfd p[2];
    guint64 v;
    int ready;

    if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h)) {
        conn_died(k, 0, NULL);        /* the issuing thread found out, and said why */
        return FALSE;
    }
    dir = nbd_aio_get_direction(k->h);
    p[0] = (struct pollfd){ .fd = nbd_aio_get_fd(k->h),
                            .events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
                                      ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0) };
    p[1] = (struct pollfd){ .fd = k->wake, .events = POLLIN };
    ready = poll(p, 2, k->n->stall_ms ? (int)k->n->stall_ms : -1);
    if (ready < 0) {
        return errno == EINTR || (conn_failed(k, g_strerror(errno)), FALSE);
    }
    if (ready == 0) {
        return conn_stalled(k);
    }
    if ((p[1].revents & POLLIN) && read(k->wake, &v, sizeof(v)) < 0) {
        /* EAGAIN: someone else drained it */
    }
    if (((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && nbd_aio_notify_read(k->h) < 0) ||
        ((p[0].revents & POLLOUT) && nbd_aio_notify_write(k->h) < 0)) {
        conn_died(k, nbd_get_errno(), nbd_get_error());
        return FALSE;
    }
    if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h)) {
        conn_died(k, 0, NULL);
        return FALSE;
    }
    return !g_atomic_int_get(&k->quit);
}

static gpointer
conn_thread(gpointer data)
{
    Conn *k = data;

    while (conn_poll_once(k)) {
    }
    g_mutex_lock(&k->n->lock);
    k->exited = TRUE;
    g_cond_broadcast(&k->n->cond);
    g_mutex_unlock(&k->n->lock);
    return NULL;
}

static int
req_done(void *user_data, int *error)
{
    Req *r = user_data;

    g_mutex_lock(&r->n->lock);
    r->err = *error;
    r->done = TRUE;
    if (r->waited) {
        g_cond_broadcast(&r->n->cond);
    }
    g_mutex_unlock(&r->n->lock);
    return 1;
}

/* Opens one connection to end->uri: the handshake bounded by --stall-timeout (else
 * IOH_NBD_CONNECT_TIMEOUT_S) and ended by the copy's cancellation. */
static struct nbd_handle *
conn_open(const IohNbd *n, GError **error)
{
    struct nbd_handle *h = nbd_create();

    if (!h) {
        nbd_fail(error, n->end, "connect");
        return NULL;
    }
    /* The URI is the user's own command line: a tls-psk-file= in it may be read. */
    /* Every read's result is checked before its bytes are used: no zeroing (a measurable
     * share of a restore's CPU), as nbdcopy does. */
    if (nbd_set_uri_allow_local_file(h, true) < 0 || nbd_set_pread_initialize(h, false) < 0) {
        nbd_fail(error, n->end, "connect");
        nbd_close(h);
        return NULL;
    }
    if (!ioh_nbd_connect_uri(h, n->end->uri, n->stall_ms / 1000, n->cancellable, error)) {
        nbd_close(h);
        return NULL;
    }
    return h;
}

/* The most connections: --connections, else several with multi-conn (adaptive,
 * ioh-nbd-adapt.h), else one. */
static gboolean
choose_conns(IohNbd *n, guint asked, GError **error)
{
    if (asked > 1 && !n->multi_conn) {
        return ioh_error_set(error, EINVAL, "connect", n->end->name, "the server does not "
                             "advertise multi-conn: --connections=%u refused (1 only)", asked);
    }
    n->conns_max = asked ? asked : n->multi_conn ? IOH_NBD_ADAPT_MAX_CONNECTIONS : 1;
    return TRUE;
}

/* An export with a minimum block size (nbdkit blocksize-policy, qemu-nbd on an O_DIRECT
 * image) refuses requests not aligned to it: the request size is made a multiple of it,
 * reads are rounded up (ioh_nbd_issue()), a save's unaligned tail is written by
 * read-modify-write (ioh_nbd_read_block()); only an unaligned --offset or region end
 * (--region) is refused. */
static gboolean
fit_min_block(IohNbd *n, int64_t minb, const IohCopyOptions *o, GError **error)
{
    n->min_block = minb > 1 && minb <= 64 * 1024 * 1024 ? (gsize)minb : 1;
    if (n->min_block == 1) {
        return TRUE;
    }
    n->req_size = MAX(n->req_size - n->req_size % n->min_block, n->min_block);
    if (o->has_offset && o->offset % n->min_block != 0) {
        return ioh_error_set(error, EINVAL, "open", n->end->name, "the export's minimum "
                             "block size is %zu bytes: --offset %" G_GUINT64_FORMAT " is not "
                             "a multiple of it", n->min_block, o->offset);
    }
    /* The tail's read-modify-write would rewrite the block holding the region's end,
     * bytes of the next region included, while that region's own helper writes them:
     * its bytes could be lost. Such a region is refused before any byte is sent. */
    if (o->region && ((o->has_offset ? o->offset : 0) + o->region) % n->min_block != 0) {
        return ioh_error_set(error, EINVAL, "open", n->end->name, "the export's minimum "
                             "block size is %zu bytes: the region's end (--offset + "
                             "--region) is not a multiple of it", n->min_block);
    }
    return TRUE;
}

/* The first connection tells the export's size, flags and block sizes. */
static gboolean
probe(IohNbd *n, struct nbd_handle *h, gboolean for_write, const IohCopyOptions *o,
      GError **error)
{
    int64_t size = nbd_get_size(h), maxb = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
    int64_t minb = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);

    if (size < 0) {
        return nbd_fail(error, n->end, "connect");
    }
    if (for_write && !ioh_nbd_check_save(h, n->end->uri, error)) {
        return FALSE;
    }
    n->size = (guint64)size;
    n->multi_conn = nbd_can_multi_conn(h) == 1;
    n->req_size = o->nbd_request_size ? o->nbd_request_size : IOH_NBD_DEFAULT_REQUEST;
    if (maxb > 0 && n->req_size > (guint64)maxb) {
        n->req_size = (gsize)maxb;
    }
    return fit_min_block(n, minb, o, error) && choose_conns(n, o->nbd_connections, error);
}

static gboolean
conn_start(IohNbd *n, Conn *k, struct nbd_handle *h, GError **error)
{
    k->n = n;
    k->h = h;
    k->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (k->wake < 0) {
        return ioh_error_set_errno(error, errno, "eventfd", n->end->name);
    }
    k->thread = g_thread_new("ioh-nbd", conn_thread, k);
    return TRUE;
}

static void conn_stop(Conn *k);

static void
nbd_free(gpointer data)
{
    IohNbd *n = data;

    if (!n) {
        return;
    }
    for (guint i = 0; n->conns && i < n->conns_max; i++) {
        conn_stop(&n->conns[i]);
    }
    if (n->layer_state_free) {
        n->layer_state_free(n->layer_state);
    }
    g_free(n->conns);
    for (guint i = 0; n->reqs && i < n->nreqs; i++) {
        free(n->reqs[i].buf);
    }
    g_free(n->reqs);
    g_free(n->fifo);
    g_free(n->free);
    g_mutex_clear(&n->lock);
    g_cond_clear(&n->cond);
    g_free(n);
}

/* The pool's shape: requests in flight per connection, and their size. */
typedef struct {
    guint nconns;
    guint per_conn;
    gsize req_size;
} NbdShape;

/* Requests per connection at most, when the pool scales down to smaller requests. */
#define NBD_PER_CONN_MAX 256

/* IohMemFitFunc: the pool within @bytes. Requests as asked when they fit; else requests of
 * the default size at most (the fastest measured, ioh-nbd.h), as many as fit, at least one
 * per connection (the floor). */
static guint64
nbd_fit(guint64 bytes, gpointer data)
{
    NbdShape *s = data;
    guint64 want = (guint64)s->nconns * s->per_conn * s->req_size;
    guint64 per;

    if (bytes >= want) {
        return want;
    }
    s->req_size = MIN(s->req_size, IOH_NBD_DEFAULT_REQUEST);
    per = bytes / ((guint64)s->nconns * s->req_size);
    s->per_conn = (guint)CLAMP(per, 1, MIN(NBD_PER_CONN_MAX,
                                           want / s->nconns / s->req_size));
    return (guint64)s->nconns * s->per_conn * s->req_size;
}

/* The pool's memory from the copy's account (ioh-mem-account.h): its floor is one
 * request per connection, of the asked size or the default if smaller; beyond that, what
 * the budget gives, down to that floor. */
static void
claim_pool(IohNbd *n, IohMemAccount *m, guint *per_conn)
{
    NbdShape s = { n->conns_max, *per_conn, n->req_size };
    guint64 floor = (guint64)n->conns_max * MIN(n->req_size, IOH_NBD_DEFAULT_REQUEST);

    if (!m) {
        return;
    }
    ioh_mem_claim(m, "nbd", floor, (guint64)n->conns_max * *per_conn * n->req_size, 0,
                  nbd_fit, &s);
    *per_conn = s.per_conn;
    n->req_size = s.req_size;
}

/* The pool for the largest shape, conns_max x *@per_conn (scaled down to the budget). */
static gboolean
alloc_pool(IohNbd *n, IohMemAccount *m, guint *per_conn, GError **error)
{
    claim_pool(n, m, per_conn);
    n->nreqs = n->conns_max * *per_conn;
    n->reqs = g_new0(Req, n->nreqs);
    n->fifo = g_new0(guint, n->nreqs);
    n->free = g_new0(guint, n->nreqs);
    n->handed = n->taken = NO_REQ;
    for (guint i = 0; i < n->nreqs; i++) {
        n->free[n->nfree++] = n->nreqs - 1 - i;
    }
    /* each request's buffer is allocated when the request is first used: a copy that
     * stays at one connection never has the pool of the largest shape */
    for (guint i = 0; i < n->nreqs; i++) {
        n->reqs[i] = (Req){ .n = n };
    }
    (void)error;
    return TRUE;
}

/* What the shape is and why, into the copy's stats (--stats) and the debug log. */
static void
report_shape(IohNbd *n, gboolean log)
{
    g_autofree char *why = ioh_nbd_adapt_describe(&n->adapt);

    if (log) {
        g_debug("%s: %s", n->end->name, why);
    }
    if (n->stats) {
        g_strlcpy(n->stats->nbd, why, sizeof(n->stats->nbd));
        n->stats->nbd_connections = n->nconns;
        n->stats->nbd_requests = n->adapt.cur.reqs;
        n->stats->nbd_adaptive = !ioh_nbd_adapt_is_fixed(&n->adapt);
        n->stats->nbd_windows = n->adapt.windows;
        n->stats->nbd_most_connections = n->most_conns;
    }
}

/* Opens connections up to @want (the first one is open): each handshake bounded as the
 * first one's. */
static gboolean
open_conns(IohNbd *n, guint want, GError **error)
{
    while (n->nconns < want) {
        struct nbd_handle *h = conn_open(n, error);

        if (!h) {
            return FALSE;
        }
        if (!conn_start(n, &n->conns[n->nconns], h, error)) {
            nbd_close(h);
            return FALSE;
        }
        n->nconns++;
        n->most_conns = MAX(n->most_conns, n->nconns);
    }
    return TRUE;
}

/* The first shape (ioh-nbd-adapt.h): --connections and --requests as given, else one
 * connection and a small queue, within the pool (*@per_conn requests per connection). */
static void
start_shape(IohNbd *n, const IohCopyOptions *o, guint per_conn)
{
    IohNbdShape start = { o->nbd_connections ? o->nbd_connections : 1,
                          o->nbd_requests ? per_conn
                                          : MIN(IOH_NBD_ADAPT_START_REQUESTS, per_conn) };
    IohNbdShape max = { n->conns_max, per_conn };

    ioh_nbd_adapt_init(&n->adapt, start, max, o->nbd_connections != 0,
                       o->nbd_requests != 0);
    if (!n->for_write) {
        n->adapt.waited_min = IOH_NBD_ADAPT_WAITED_MIN_READ;
    }
    n->limit = start.conns * start.reqs;
    n->warmup = n->limit;
}

IohNbd *
ioh_nbd_connect(IohCopy *c, IohEnd *end, gboolean for_write, GError **error)
{
    IohNbd *n = g_new0(IohNbd, 1);
    struct nbd_handle *h;
    guint per_conn;

    n->end = end;
    n->for_write = for_write;
    n->stall_ms = c->opts->nbd_stall_timeout * 1000;
    n->cancellable = c->opts->cancellable;
    n->stats = c->stats;
    g_mutex_init(&n->lock);
    g_cond_init(&n->cond);
    end->priv = n;
    end->priv_free = nbd_free;
    h = conn_open(n, error);
    if (!h) {
        return NULL;
    }
    if (!probe(n, h, for_write, c->opts, error)) {
        nbd_close(h);
        return NULL;
    }
    n->conns = g_new0(Conn, n->conns_max);
    for (guint i = 0; i < n->conns_max; i++) {
        n->conns[i].wake = -1;
    }
    if (!conn_start(n, &n->conns[0], h, error)) {
        nbd_close(h);
        return NULL;
    }
    n->nconns = n->most_conns = 1;
    per_conn = c->opts->nbd_requests ? c->opts->nbd_requests : IOH_NBD_ADAPT_MAX_REQUESTS;
    if (!alloc_pool(n, c->opts->memory, &per_conn, error)) {
        return NULL;
    }
    start_shape(n, c->opts, per_conn);
    if (!open_conns(n, n->adapt.cur.conns, error)) {
        return NULL;
    }
    g_debug("%s: %" G_GUINT64_FORMAT " bytes, %sread-only, multi-conn %s: up to %u "
            "connection%s, a pool of %u requests of %zu bytes", end->name, n->size,
            nbd_is_read_only(n->conns[0].h) == 1 ? "" : "not ",
            n->multi_conn ? "yes" : "no", n->conns_max, n->conns_max == 1 ? "" : "s",
            n->nreqs, n->req_size);
    report_shape(n, TRUE);
    return n;
}

guint64
ioh_nbd_export_size(const IohNbd *n)
{
    return n->size;
}

gsize
ioh_nbd_request_size(const IohNbd *n)
{
    return n->req_size;
}

guint
ioh_nbd_in_flight(const IohNbd *n)
{
    return n->in_flight;
}

guint
ioh_nbd_capacity(const IohNbd *n)
{
    return n->limit;
}

void
ioh_nbd_set_layer_state(IohNbd *n, gpointer state, GDestroyNotify state_free)
{
    n->layer_state = state;
    n->layer_state_free = state_free;
}

gpointer
ioh_nbd_layer_state(const IohNbd *n)
{
    return n->layer_state;
}

/* What the copy does with the export: the operation its errors name. */
static const char *
op_name(const IohNbd *n)
{
    return n->for_write ? "write" : "read";
}

/* FALSE with "@what URI: <why @k failed>", once that is known: a real cause is recorded,
 * or the connection's thread has returned (it records one before, and a dead connection
 * makes it return; woken here when another thread found out). The deadline is a guard
 * only. Under n->lock. */
static gboolean
conn_lost_locked(IohNbd *n, Conn *k, const char *what, GError **error)
{
    gint64 deadline = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;

    conn_wake(k);
    while (k->thread && !k->exited && (!k->failed || k->failed_weak) &&
           g_cond_wait_until(&n->cond, &n->lock, deadline)) {
    }
    return ioh_error_set(error, k->failed ? k->failed_errno : ENOTCONN, what, n->end->name,
                         "%s", k->failed ? k->failed : "connection to the server lost");
}

static gboolean
conn_lost(IohNbd *n, Conn *k, const char *what, GError **error)
{
    gboolean ok;

    g_mutex_lock(&n->lock);
    ok = conn_lost_locked(n, k, what, error);
    g_mutex_unlock(&n->lock);
    return ok;
}

/* A libnbd call on @k failed: the connection's loss when it is dead (this thread may be
 * the one that found out), else the call's error. */
static gboolean
call_failed(IohNbd *n, Conn *k, const char *what, GError **error)
{
    if (!nbd_aio_is_dead(k->h) && !nbd_aio_is_closed(k->h)) {
        return nbd_fail(error, n->end, what);
    }
    conn_died(k, nbd_get_errno(), nbd_get_error());
    return conn_lost(n, k, what, error);
}

/* Waits for reqs[i]; FALSE with the command's or the connection's error. A command that
 * libnbd retired with ENOTCONN died with its connection: the line says why it died. */
static gboolean
wait_req(IohNbd *n, guint i, GError **error)
{
    Req *r = &n->reqs[i];
    Conn *k = r->k;
    int err;

    g_mutex_lock(&n->lock);
    r->waited = TRUE;
    if (!r->done && !k->failed) {
        gint64 t0 = g_get_monotonic_time();

        while (!r->done && !k->failed) {
            g_cond_wait(&n->cond, &n->lock);
        }
        n->win_waited += g_get_monotonic_time() - t0;
    }
    r->waited = FALSE;
    r->busy = FALSE;
    n->in_flight--;
    err = r->done ? r->err : ENOTCONN;
    if (err == ENOTCONN) {
        conn_lost_locked(n, k, op_name(n), error);
    }
    g_mutex_unlock(&n->lock);
    return err == 0 || (err != ENOTCONN &&
                        ioh_error_set_errno(error, err, op_name(n), n->end->name));
}

/* The oldest request in flight (the fifo's head). */
static guint
fifo_head(const IohNbd *n)
{
    g_assert(n->in_flight > 0);
    return n->fifo[n->fifo_head];
}

/* Takes the oldest request out of the fifo (wait_req() counted it out of flight). */
static void
fifo_pop(IohNbd *n)
{
    n->fifo_head = (n->fifo_head + 1) % n->nreqs;
}

static void
fifo_push(IohNbd *n, guint i)
{
    n->fifo[(n->fifo_head + n->in_flight) % n->nreqs] = i;
    n->in_flight++;
}

char *
ioh_nbd_next(IohNbd *n, gsize *ret_len, GError **error)
{
    guint i;

    *ret_len = 0;
    if (n->taken != NO_REQ) {
        n->free[n->nfree++] = n->taken;
        n->taken = NO_REQ;
    }
    /* the oldest commands, in the order they were issued, until one more may be in
     * flight (more than one after the shape shrank) */
    while (n->in_flight >= n->limit || n->nfree == 0) {
        gboolean ok;

        i = fifo_head(n);
        ok = wait_req(n, i, error);
        fifo_pop(n);
        if (!ok) {
            return NULL;
        }
        if (n->in_flight < n->limit) {
            *ret_len = n->reqs[i].len;
            n->handed = i;
            return n->reqs[i].buf;
        }
        n->free[n->nfree++] = i;
    }
    i = n->free[--n->nfree];
    if (!n->reqs[i].buf && posix_memalign((void **)&n->reqs[i].buf, 4096, n->req_size) != 0) {
        n->reqs[i].buf = NULL;
        n->free[n->nfree++] = i;
        ioh_error_set(error, ENOMEM, NULL, NULL, "allocate an NBD request of %zu bytes: %s",
                      n->req_size, g_strerror(ENOMEM));
        return NULL;
    }
    n->handed = i;
    return n->reqs[i].buf;
}

char *
ioh_nbd_take(IohNbd *n, gsize *ret_len, GError **error)
{
    guint i;

    if (n->taken != NO_REQ) {
        n->free[n->nfree++] = n->taken;
        n->taken = NO_REQ;
    }
    i = fifo_head(n);
    g_assert(n->reqs[i].busy);
    if (!wait_req(n, i, error)) {
        fifo_pop(n);
        return NULL;
    }
    fifo_pop(n);
    n->taken = i;
    *ret_len = n->reqs[i].len;
    return n->reqs[i].buf;
}

static int
behind_done(void *user_data, int *error)
{
    IohNbd *n = user_data;

    g_mutex_lock(&n->lock);
    if (*error && !n->behind_err) {
        n->behind_err = *error;
    }
    n->behind_busy = FALSE;
    g_cond_broadcast(&n->cond);
    g_mutex_unlock(&n->lock);
    return 1;
}

/* FALSE with the error of a write-behind flush that failed: the server's answer to the
 * flush, or the loss of the connection (while the save writes: operation @what). */
static gboolean
behind_failed(IohNbd *n, const char *what, GError **error)
{
    int err;

    g_mutex_lock(&n->lock);
    err = n->behind_err;
    g_mutex_unlock(&n->lock);
    if (err == ENOTCONN) {
        return conn_lost(n, n->behind_k, what, error);
    }
    return err == 0 || ioh_error_set_errno(error, err, "flush", n->end->name);
}

/* Write-behind: a flush without waiting for it, every IOH_NBD_FLUSH_BEHIND bytes written,
 * on the connections in turn (at most one in flight: a busy server is not asked twice). */
static gboolean
flush_behind(IohNbd *n, gsize len, GError **error)
{
    Conn *k = &n->conns[n->behind_next % n->nconns];
    nbd_completion_callback cb = { .callback = behind_done, .user_data = n };
    gboolean busy;

    n->unflushed += len;
    if (n->unflushed < IOH_NBD_FLUSH_BEHIND || nbd_can_flush(k->h) != 1) {
        return TRUE;
    }
    g_mutex_lock(&n->lock);
    busy = n->behind_busy;
    n->behind_busy = TRUE;
    g_mutex_unlock(&n->lock);
    if (busy) {
        return behind_failed(n, "write", error);
    }
    if (nbd_aio_flush(k->h, cb, 0) < 0) {
        g_mutex_lock(&n->lock);
        n->behind_busy = FALSE;
        g_mutex_unlock(&n->lock);
        return call_failed(n, k, "flush", error);
    }
    n->behind_k = k;
    n->behind_next++;
    n->behind_count++;
    n->unflushed = 0;
    conn_wake(k);
    return behind_failed(n, "write", error);
}

static gboolean wait_behind_on(IohNbd *n, Conn *k, GError **error);

/* Waits until no command of @k is at the server (they stay in the fifo, taken back in
 * order), nor a write-behind flush; FALSE with @k's loss. Under n->lock. */
static gboolean
conn_quiesce_locked(IohNbd *n, Conn *k, GError **error)
{
    for (guint j = 0; j < n->in_flight; j++) {
        Req *r = &n->reqs[n->fifo[(n->fifo_head + j) % n->nreqs]];

        if (r->k != k) {
            continue;
        }
        r->waited = TRUE;
        while (!r->done && !k->failed) {
            g_cond_wait(&n->cond, &n->lock);
        }
        r->waited = FALSE;
        if (!r->done || r->err == ENOTCONN) {
            return conn_lost_locked(n, k, op_name(n), error);
        }
    }
    return TRUE;
}

/* Closes the connections beyond @want, the last first, once their commands are done
 * (a command that failed is reported when it is taken back, in order). */
static gboolean
close_conns(IohNbd *n, guint want, GError **error)
{
    while (n->nconns > want) {
        Conn *k = &n->conns[n->nconns - 1];
        gboolean ok;

        g_mutex_lock(&n->lock);
        ok = conn_quiesce_locked(n, k, error);
        g_mutex_unlock(&n->lock);
        if (!ok || !wait_behind_on(n, k, error)) {
            return FALSE;
        }
        g_atomic_int_set(&k->quit, TRUE);
        conn_wake(k);
        g_thread_join(k->thread);
        k->thread = NULL;
        ioh_nbd_disconnect(k->h, n->stall_ms / 1000);
        conn_stop(k);
        *k = (Conn){ .wake = -1 };
        n->nconns--;
    }
    return TRUE;
}

/* Runs the shape the decision asks (n->adapt.cur): connections opened (bounded as the
 * first) or closed, the commands in flight at most. A connection that cannot be opened
 * ends the climb there; the copy goes on. */
static gboolean
apply_shape(IohNbd *n, GError **error)
{
    g_autoptr(GError) err = NULL;

    if (n->adapt.cur.conns > n->nconns && !open_conns(n, n->adapt.cur.conns, &err)) {
        g_debug("%s: no more connections: %s", n->end->name, err->message);
        ioh_nbd_adapt_refused(&n->adapt);
    }
    if (!close_conns(n, n->adapt.cur.conns, error)) {
        return FALSE;
    }
    n->limit = n->adapt.cur.conns * n->adapt.cur.reqs;
    n->warmup = n->limit;
    report_shape(n, TRUE);
    return TRUE;
}

/* Counts an issued command into the window; a window done goes to the decision
 * (ioh-nbd-adapt.h). The first n->warmup commands after a change are not counted: they
 * fill the new slots at once and would make any growth look like a gain. */
static gboolean
adapt_issued(IohNbd *n, gsize len, GError **error)
{
    gint64 now;
    double rate, waited;

    if (ioh_nbd_adapt_is_fixed(&n->adapt)) {
        return TRUE;
    }
    if (n->warmup > 0) {
        if (--n->warmup == 0) {
            n->win_start = g_get_monotonic_time();
            n->win_bytes = 0;
            n->win_waited = 0;
        }
        return TRUE;
    }
    n->win_bytes += len;
    now = g_get_monotonic_time();
    if (n->win_bytes < IOH_NBD_ADAPT_WINDOW_BYTES || now - n->win_start < IOH_NBD_ADAPT_WINDOW_US) {
        return TRUE;
    }
    rate = (double)n->win_bytes * G_USEC_PER_SEC / (double)(now - n->win_start);
    waited = (double)n->win_waited / (double)(now - n->win_start);
    g_debug("%s: window of %u connection%s x %u requests: %.1f MiB/s, waited %.0f %%",
            n->end->name, n->nconns, n->nconns == 1 ? "" : "s", n->adapt.cur.reqs,
            rate / (1 << 20), 100.0 * waited);
    n->win_bytes = 0;
    n->win_start = now;
    n->win_waited = 0;
    return !ioh_nbd_adapt_window(&n->adapt, rate, waited) || apply_shape(n, error);
}

gboolean
ioh_nbd_issue(IohNbd *n, gboolean write, gsize len, guint64 offset, GError **error)
{
    guint i = n->handed;
    Req *r = &n->reqs[i];
    Conn *k = &n->conns[n->rr++ % n->nconns];
    nbd_completion_callback cb = { .callback = req_done, .user_data = r };
    int64_t id;

    /* a read's last request rounded up to the minimum block: the rest is not handed on */
    gsize wire = write ? len : (len + n->min_block - 1) / n->min_block * n->min_block;

    g_assert(i != NO_REQ && wire <= n->req_size);
    n->handed = NO_REQ;
    r->k = k;
    r->len = len;
    r->done = FALSE;
    r->err = 0;
    id = write ? nbd_aio_pwrite(k->h, r->buf, len, offset, cb, 0)
               : nbd_aio_pread(k->h, r->buf, wire, offset, cb, 0);
    if (id < 0) {
        return call_failed(n, k, write ? "write" : "read", error);
    }
    r->busy = TRUE;
    fifo_push(n, i);
    /* libnbd sent what the socket took in this thread: the connection's thread, in poll()
     * for the replies, needs waking only when the rest waits for the socket */
    if (nbd_aio_get_direction(k->h) & LIBNBD_AIO_DIRECTION_WRITE) {
        conn_wake(k);
    }
    return (!write || flush_behind(n, len, error)) && adapt_issued(n, len, error);
}

gsize
ioh_nbd_min_block(const IohNbd *n)
{
    return n->min_block;
}

/* A read of one block; shared by the reader and libnbd, whose completion may come after
 * the reader gave up on a dead connection: each holds a reference. */
typedef struct {
    IohNbd *n;
    gboolean done;            /* under n->lock */
    int err;
} BlockRead;

static void
block_read_release(BlockRead *b)
{
    g_atomic_rc_box_release(b);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BlockRead, block_read_release)

static int
block_read_done(void *user_data, int *error)
{
    BlockRead *b = user_data;

    g_mutex_lock(&b->n->lock);
    b->err = *error;
    b->done = TRUE;
    g_cond_broadcast(&b->n->cond);
    g_mutex_unlock(&b->n->lock);
    return 1;
}

static void
block_read_unref(void *user_data)
{
    g_atomic_rc_box_release(user_data);
}

/* Waits for @b under n->lock: FALSE with its error or the connection's loss. */
static gboolean
block_read_wait(IohNbd *n, Conn *k, BlockRead *b, GError **error)
{
    gboolean ok = TRUE;

    g_mutex_lock(&n->lock);
    while (!b->done && !k->failed) {
        g_cond_wait(&n->cond, &n->lock);
    }
    if (!b->done) {
        ok = conn_lost_locked(n, k, op_name(n), error);
    } else if (b->err) {
        ok = ioh_error_set_errno(error, b->err, op_name(n), n->end->name);
    }
    g_mutex_unlock(&n->lock);
    return ok;
}

gboolean
ioh_nbd_read_block(IohNbd *n, char *buf, guint64 offset, GError **error)
{
    Conn *k = &n->conns[0];
    g_autoptr(BlockRead) b = NULL;
    nbd_completion_callback cb = { .callback = block_read_done, .free = block_read_unref };
    gboolean ok;

    if (offset + n->min_block > n->size) {
        return ioh_nbd_too_small(error, op_name(n), n->end, n->size);
    }
    b = g_atomic_rc_box_new0(BlockRead);
    b->n = n;
    cb.user_data = g_atomic_rc_box_acquire(b);    /* libnbd's, released by cb.free */
    if (nbd_aio_pread(k->h, buf, n->min_block, offset, cb, 0) < 0) {
        return call_failed(n, k, op_name(n), error);
    }
    conn_wake(k);
    ok = block_read_wait(n, k, b, error);
    return ok;
}

/* Waits for the write-behind flush in flight on @k (NULL: on any), if any; FALSE if
 * one failed. */
static gboolean
wait_behind_on(IohNbd *n, Conn *on, GError **error)
{
    Conn *k = n->behind_k;
    gboolean ok = TRUE;

    if (!k || (on && k != on)) {
        return TRUE;
    }
    g_mutex_lock(&n->lock);
    while (n->behind_busy && !k->failed) {
        g_cond_wait(&n->cond, &n->lock);
    }
    if (n->behind_busy) {
        ok = conn_lost_locked(n, k, "flush", error);
    }
    g_mutex_unlock(&n->lock);
    return ok && behind_failed(n, "flush", error);
}

static gboolean
wait_behind(IohNbd *n, GError **error)
{
    return wait_behind_on(n, NULL, error);
}

/* Waits for the commands in flight, oldest first. */
static gboolean
drain(IohNbd *n, gboolean write, GError **error)
{
    gboolean ok = TRUE;

    while (n->in_flight > 0) {
        g_autoptr(GError) err = NULL;

        if (!wait_req(n, fifo_head(n), &err) && ok) {
            g_propagate_error(error, g_steal_pointer(&err));
            ok = FALSE;
        }
        fifo_pop(n);
    }
    if (write && ok) {
        return wait_behind(n, error);
    }
    return ok;
}

static void
conn_stop(Conn *k)
{
    if (k->thread) {
        g_atomic_int_set(&k->quit, TRUE);
        conn_wake(k);
        g_thread_join(k->thread);
        k->thread = NULL;
    }
    if (k->wake >= 0) {
        close(k->wake);
        k->wake = -1;
    }
    if (k->h) {
        nbd_close(k->h);
        k->h = NULL;
    }
    g_free(k->failed);
    k->failed = NULL;
}

/* The last flush on @k, whose thread is stopped: this thread drives it, bounded as any
 * command is by --stall-timeout (a server that never answered held the save forever). */
static gboolean
final_flush(IohNbd *n, Conn *k, GError **error)
{
    g_autoptr(GError) err = NULL;

    if (ioh_nbd_wait_command(k->h, nbd_aio_flush(k->h, NBD_NULL_COMPLETION, 0), n->end->uri,
                             "flush", n->stall_ms / 1000, n->cancellable, &err)) {
        return TRUE;
    }
    if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h)) {
        return call_failed(n, k, "flush", error);    /* says why it died */
    }
    g_propagate_error(error, g_steal_pointer(&err));
    return FALSE;
}

gboolean
ioh_nbd_finish(IohNbd *n, gboolean flush, GError **error)
{
    guint flushes = 0;

    report_shape(n, FALSE);     /* the last window may have settled it */
    if (!drain(n, flush, error)) {
        return FALSE;
    }
    for (guint i = 0; i < n->nconns; i++) {
        g_atomic_int_set(&n->conns[i].quit, TRUE);
        conn_wake(&n->conns[i]);
        g_thread_join(n->conns[i].thread);
        n->conns[i].thread = NULL;
    }
    for (guint i = 0; flush && i < n->nconns; i++) {
        struct nbd_handle *h = n->conns[i].h;

        if (n->multi_conn && flushes > 0) {
            continue;
        }
        if (nbd_can_flush(h) != 1) {
            /* this connection's writes cannot be made durable (the first was probed) */
            return ioh_nbd_no_flush(error, n->end->name);
        }
        if (!final_flush(n, &n->conns[i], error)) {
            return FALSE;
        }
        flushes++;
    }
    for (guint i = 0; i < n->nconns; i++) {
        ioh_nbd_disconnect(n->conns[i].h, n->stall_ms / 1000);
    }
    g_debug("%s: %u flush%s, %u behind", n->end->name, flushes, flushes == 1 ? "" : "es",
            n->behind_count);
    return TRUE;
}
