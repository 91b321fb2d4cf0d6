/* ioh-rbd.c - RBD images as ends of a copy: the connection, the image, the requests
 * (ioh-rbd.h), shared by the rbd source and sink
 *
 * Requests are a ring cycled in order: the oldest in flight at head, the next free one
 * at head + count. librbd completes them on its own threads; the completion callback
 * marks the request done and writes an eventfd, on which the copy's thread waits in
 * poll() beside the copy's cancellable, with the stall timeout. Should that wait give
 * up with requests in flight (the cluster completed nothing for the stall timeout: a full
 * pool, a dead OSD), librbd may still write into or read from their buffers: the end is
 * then "wedged" and frees neither them nor the image (the helper exits after the
 * failure); so too after an ETIMEDOUT from librados, since closing the image would wait
 * as long again for each of librbd's own operations.
 */
#include "ioh-rbd.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-rbd-connect.h"

typedef enum { OP_READ, OP_WRITE, OP_FLUSH } Op;

static const char *const op_names[] = { "read", "write", "flush" };

typedef struct {
    IohRbd *r;
    char *buf;
    gsize len;
    guint64 offset;
    Op op;
    rbd_completion_t comp;
    gint done;               /* set by librbd's thread (atomic) */
} Req;

struct _IohRbd {
    IohEnd *end;
    IohRbdName name;
    rados_t cluster;
    rados_ioctx_t io;
    rbd_image_t image;
    guint64 size;
    guint64 obj_size;
    gboolean created;
    guint timeout_s;
    GCancellable *cancellable;   /* the copy's (not ours) */
    int wake;                    /* eventfd: a request completed */
    char *mem;
    Req *reqs;
    guint nreqs, head, count;
    gsize req_size;
    gboolean wedged;             /* requests may still be in flight: leak, never free */
    gpointer state;
    GDestroyNotify state_free;
};

IohEnd *
ioh_rbd_end_new(const char *name)
{
    IohEnd *end = g_new0(IohEnd, 1);

    end->fd = -1;
    end->kind = IOH_KIND_RBD;
    end->align = 4096;
    end->uri = g_strdup(name);
    end->name = ioh_rbd_safe_name(name);
    return end;
}

/* FALSE with "WHAT NAME: CAUSE" for the librbd result @ret < 0. An operation that timed
 * out is most often a write into a full pool (librbd waits without an error): the
 * monitors are asked, and a full pool is named as the cause. */
static gboolean
rbd_fail(IohRbd *r, int ret, const char *what, GError **error)
{
    g_autofree char *full = ret == -ETIMEDOUT && r->cluster
                                ? ioh_rbd_pool_full(r->cluster, r->name.pool) : NULL;

    if (full) {
        return ioh_error_set(error, ENOSPC, what, r->end->name, "%s (the cluster completed "
                             "nothing for %u s)", full, r->timeout_s);
    }
    return ioh_rbd_fail(error, ret, what, r->end->name, r->timeout_s);
}

/* Every request in flight completed, waited for with errors ignored (the copy already
 * failed); FALSE when one would not complete (then the end is wedged). */
static gboolean drain(IohRbd *r);

/* A wedged end: librbd may still write into or read from its buffers and use its image,
 * so nothing of it is freed; it is kept here, reachable, until the helper exits (also so
 * that LeakSanitizer does not take what librbd still holds for a leak). */
static GMutex wedged_lock;
static GPtrArray *wedged;

static void
keep_wedged(IohRbd *r)
{
    g_mutex_lock(&wedged_lock);
    if (!wedged) {
        wedged = g_ptr_array_new();
    }
    g_ptr_array_add(wedged, r);
    g_mutex_unlock(&wedged_lock);
}

gboolean
ioh_rbd_left_open(void)
{
    gboolean any;

    g_mutex_lock(&wedged_lock);
    any = wedged != NULL;
    g_mutex_unlock(&wedged_lock);
    return any;
}

static void
rbd_free(gpointer data)
{
    IohRbd *r = data;

    if (r->state_free) {
        r->state_free(r->state);
    }
    if (!drain(r)) {
        keep_wedged(r);
        return;
    }
    if (r->image) {
        rbd_close(r->image);
    }
    ioh_rbd_disconnect(r->cluster, r->io);
    free(r->mem);
    g_free(r->reqs);
    ioh_fd_clear(&r->wake);
    ioh_rbd_name_clear(&r->name);
    g_free(r);
}

static void
completed(rbd_completion_t comp G_GNUC_UNUSED, void *arg)
{
    Req *q = arg;
    guint64 one = 1;

    g_atomic_int_set(&q->done, 1);
    if (write(q->r->wake, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is already set, the waiter wakes anyway */
    }
}

/* Waits until @q completed: FALSE (wedged) when nothing completed for the stall timeout,
 * or the copy was cancelled. Our own clock, not only librados': rados_osd_op_timeout
 * bounds librbd's metadata operations, but a data write to a dead OSD outlived it (a
 * save waited 15 s with a timeout of 5). */
static gboolean
wait_done(IohRbd *r, Req *q, const char *what, GError **error)
{
    int ms = (int)MIN(r->timeout_s, G_MAXINT / 1000) * 1000;

    while (!g_atomic_int_get(&q->done)) {
        g_autoptr(GError) err = NULL;
        guint64 n;
        int ready = ioh_fd_wait(r->wake, POLLIN, r->cancellable, ms, &err);

        if (ready <= 0) {
            r->wedged = TRUE;
            if (ready == 0) {
                return rbd_fail(r, -ETIMEDOUT, what, error);
            }
            return ioh_error_is_cancelled(err) ? ioh_error_set_cancelled(error, what,
                                                                         r->end->name)
                                               : ioh_error_set(error, EIO, what, r->end->name,
                                                               "%s", err->message);
        }
        if (read(r->wake, &n, sizeof(n)) < 0) {
            /* EAGAIN: another wait took it; the done flag is what counts */
        }
    }
    return TRUE;
}

/* The oldest request's result, once complete; it leaves flight. */
static gboolean
retire(IohRbd *r, GError **error)
{
    Req *q = &r->reqs[r->head];
    const char *what = op_names[q->op];
    ssize_t ret;

    if (!wait_done(r, q, what, error)) {
        return FALSE;
    }
    ret = rbd_aio_get_return_value(q->comp);
    rbd_aio_release(q->comp);
    q->comp = NULL;
    r->head = (r->head + 1) % r->nreqs;
    r->count--;
    if (ret == -ETIMEDOUT) {
        /* the cluster does not answer: closing the image would wait as long again for
         * each of librbd's own operations (the lock's release, the watch) */
        r->wedged = TRUE;
    }
    if (ret < 0) {
        return rbd_fail(r, (int)ret, what, error);
    }
    if (q->op == OP_READ && (gsize)ret != q->len) {
        return ioh_error_set(error, EIO, what, r->end->name, "short read: %zd of %zu bytes "
                             "at offset %" G_GUINT64_FORMAT, ret, q->len, q->offset);
    }
    return TRUE;
}

static gboolean
drain(IohRbd *r)
{
    while (r->count > 0 && !r->wedged) {
        retire(r, NULL);
    }
    return !r->wedged;
}

char *
ioh_rbd_next(IohRbd *r, GError **error)
{
    if (r->count == r->nreqs && !retire(r, error)) {
        return NULL;
    }
    return r->reqs[(r->head + r->count) % r->nreqs].buf;
}

/* Hands the next free request, @op of @len bytes at @offset, to librbd. */
static gboolean
submit(IohRbd *r, Op op, gsize len, guint64 offset, GError **error)
{
    Req *q = &r->reqs[(r->head + r->count) % r->nreqs];
    int ret = rbd_aio_create_completion(q, completed, &q->comp);

    *q = (Req){ .r = r, .buf = q->buf, .len = len, .offset = offset, .op = op,
                .comp = q->comp };
    if (ret == 0) {
        ret = op == OP_WRITE  ? (int)rbd_aio_write(r->image, offset, len, q->buf, q->comp)
              : op == OP_READ ? (int)rbd_aio_read(r->image, offset, len, q->buf, q->comp)
                              : rbd_aio_flush(r->image, q->comp);
        if (ret < 0) {
            rbd_aio_release(q->comp);
            q->comp = NULL;
        }
    }
    if (ret < 0) {
        return rbd_fail(r, ret, op_names[op], error);
    }
    r->count++;
    return TRUE;
}

gboolean
ioh_rbd_issue(IohRbd *r, gboolean write, gsize len, guint64 offset, GError **error)
{
    return submit(r, write ? OP_WRITE : OP_READ, len, offset, error);
}

char *
ioh_rbd_take(IohRbd *r, gsize *ret_len, GError **error)
{
    Req *q = &r->reqs[r->head];

    if (!retire(r, error)) {
        return NULL;
    }
    *ret_len = q->len;
    return q->buf;
}

gboolean
ioh_rbd_finish(IohRbd *r, gboolean flush, GError **error)
{
    while (r->count > 0) {
        if (!retire(r, error)) {
            return FALSE;
        }
    }
    /* the flush is a request like the others: bounded, cancellable */
    return !flush || (submit(r, OP_FLUSH, 0, 0, error) && retire(r, error));
}

guint
ioh_rbd_in_flight(const IohRbd *r)
{
    return r->count;
}

guint
ioh_rbd_capacity(const IohRbd *r)
{
    return r->nreqs;
}

guint64
ioh_rbd_size(const IohRbd *r)
{
    return r->size;
}

gboolean
ioh_rbd_created(const IohRbd *r)
{
    return r->created;
}

gboolean
ioh_rbd_is_snapshot(const IohRbd *r)
{
    return r->name.snap != NULL;
}

gsize
ioh_rbd_request_at(const IohRbd *r, guint64 pos)
{
    return (gsize)MIN((guint64)r->req_size, r->obj_size - pos % r->obj_size);
}

void
ioh_rbd_set_layer_state(IohRbd *r, gpointer state, GDestroyNotify state_free)
{
    r->state = state;
    r->state_free = state_free;
}

gpointer
ioh_rbd_layer_state(const IohRbd *r)
{
    return r->state;
}

gboolean
ioh_rbd_resize(IohRbd *r, guint64 size, GError **error)
{
    int ret = rbd_resize(r->image, size);

    if (ret < 0) {
        return rbd_fail(r, ret, "resize", error);
    }
    g_debug("%s: resized from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " bytes",
            r->end->name, r->size, size);
    r->size = size;
    return TRUE;
}

gboolean
ioh_rbd_meta_get(IohRbd *r, const char *key, guint64 *ret, gboolean *ret_found,
                 GError **error)
{
    char value[32];
    size_t len = sizeof(value);
    char *end = NULL;
    int rc = rbd_metadata_get(r->image, key, value, &len);

    *ret_found = FALSE;
    if (rc == -ENOENT || rc == -ERANGE) {
        return TRUE;    /* none, or not one of ours (too long for a number) */
    }
    if (rc < 0) {
        return rbd_fail(r, rc, "read metadata of", error);
    }
    value[MIN(len, sizeof(value) - 1)] = '\0';
    errno = 0;
    *ret = g_ascii_strtoull(value, &end, 10);
    *ret_found = errno == 0 && end != value && *end == '\0' && g_ascii_isdigit(value[0]);
    return TRUE;
}

gboolean
ioh_rbd_meta_set(IohRbd *r, const char *key, guint64 value, GError **error)
{
    g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT, value);
    int rc = rbd_metadata_set(r->image, key, text);

    return rc >= 0 || rbd_fail(r, rc, "write metadata of", error);
}

gboolean
ioh_rbd_meta_remove(IohRbd *r, const char *key, GError **error)
{
    int rc = rbd_metadata_remove(r->image, key);

    return rc >= 0 || rc == -ENOENT ||
           rbd_fail(r, rc, "write metadata of", error);
}

/* The request pool: object-sized requests (--request-size lowers them), --requests of
 * them, from the copy's memory account (one request always, the rest if the budget
 * has room). */
static gboolean
alloc_pool(IohRbd *r, const IohCopyOptions *o, GError **error)
{
    guint want = o->nbd_requests ? o->nbd_requests : IOH_RBD_DEFAULT_REQUESTS;
    guint64 got;

    r->req_size = (gsize)MIN(r->obj_size, o->nbd_request_size ? (guint64)o->nbd_request_size
                                                              : r->obj_size);
    got = o->memory ? ioh_mem_claim(o->memory, "rbd", r->req_size,
                                    (guint64)want * r->req_size, r->req_size, NULL, NULL)
                    : (guint64)want * r->req_size;
    r->nreqs = (guint)MAX(got / r->req_size, 1);
    g_debug("%s: objects of %" G_GUINT64_FORMAT " bytes, %u requests of %zu bytes",
            r->end->name, r->obj_size, r->nreqs, r->req_size);
    if (posix_memalign((void **)&r->mem, 4096, r->req_size * r->nreqs) != 0) {
        r->mem = NULL;
        return ioh_error_set(error, ENOMEM, "open", r->end->name, "allocate %u requests "
                             "of %zu bytes: %s", r->nreqs, r->req_size, g_strerror(ENOMEM));
    }
    r->reqs = g_new0(Req, r->nreqs);
    for (guint i = 0; i < r->nreqs; i++) {
        r->reqs[i] = (Req){ .r = r, .buf = r->mem + (gsize)i * r->req_size };
    }
    return TRUE;
}

/* rbd_open() for a save: a missing image is created thin (rbd_create: the default
 * format and features, the default object size) of @create_size bytes, unless @create
 * is FALSE (a region of a multi-channel image: the tool sized the image before). */
static int
open_for_write(IohRbd *r, gboolean create, guint64 create_size)
{
    int order = 0;
    int ret = rbd_open(r->io, r->name.image, &r->image, NULL);

    if (ret != -ENOENT || !create) {
        return ret;
    }
    ret = rbd_create(r->io, r->name.image, create_size, &order);
    if (ret < 0) {
        return ret;
    }
    r->created = TRUE;
    g_debug("%s: created, %" G_GUINT64_FORMAT " bytes", r->end->name, create_size);
    return rbd_open(r->io, r->name.image, &r->image, NULL);
}

static gboolean
open_image(IohRbd *r, gboolean for_write, gboolean create, guint64 create_size,
           GError **error)
{
    rbd_image_info_t info;
    int ret;

    if (for_write && r->name.snap) {
        return ioh_error_set(error, EROFS, "open", r->end->name, "a snapshot is read-only "
                             "(restore from it; save to the image)");
    }
    ret = for_write ? open_for_write(r, create, create_size)
                    : rbd_open_read_only(r->io, r->name.image, &r->image, r->name.snap);
    if (ret == -ENOENT) {
        r->image = NULL;
        return ioh_error_set(error, ENOENT, "open", r->end->name, "%s does not exist in "
                             "pool %s", r->name.snap ? "the image or snapshot" : "the image",
                             r->name.pool);
    }
    if (ret < 0) {
        r->image = NULL;
        return rbd_fail(r, ret, "open", error);
    }
    ret = rbd_stat(r->image, &info, sizeof(info));
    if (ret < 0) {
        return rbd_fail(r, ret, "open", error);
    }
    r->size = info.size;
    r->obj_size = info.obj_size ? info.obj_size : 4 << 20;
    return TRUE;
}

/* The command line parsed it already: a failure here names the end all the same. */
static gboolean
parse_name(IohRbd *r, GError **error)
{
    g_autoptr(GError) err = NULL;

    return ioh_rbd_name_parse(r->end->uri, &r->name, &err) ||
           ioh_error_set(error, EINVAL, "open", r->end->name, "%s", err->message);
}

IohRbd *
ioh_rbd_open(IohCopy *c, IohEnd *end, gboolean for_write, guint64 create_size,
             GError **error)
{
    IohRbd *r = g_new0(IohRbd, 1);

    r->end = end;
    r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    r->timeout_s = c->opts->nbd_stall_timeout ? c->opts->nbd_stall_timeout
                                              : IOH_RBD_DEFAULT_TIMEOUT_S;
    r->cancellable = c->opts->cancellable;
    end->priv = r;
    end->priv_free = rbd_free;
    if (r->wake < 0) {
        ioh_error_set_errno(error, errno, "open", end->name);
        return NULL;
    }
    if (!parse_name(r, error) ||
        !ioh_rbd_connect(&r->name, r->timeout_s, r->cancellable, &r->cluster, &r->io,
                         error) ||
        !open_image(r, for_write, !c->opts->no_truncate, create_size, error) || !alloc_pool(r, c->opts, error)) {
        return NULL;
    }
    return r;
}
