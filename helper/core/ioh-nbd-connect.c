/* ioh-nbd-connect.c - connecting to an NBD server, bounded and cancellable (ioh-nbd-connect.h)
 *
 * Why not nbd_connect_uri(): it blocks until the handshake ends, and a server that
 * accepts the connection and then says nothing holds it for as long as the kernel
 * keeps the socket (a restore waited 636 s and ignored SIGTERM). The aio form returns at
 * once; the handshake is then driven here, with poll() on libnbd's fd in the direction
 * it asks for, the cancellable's fd beside it, and a deadline.
 */
#include "ioh-nbd-connect.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "ioh-error.h"
#include "ioh-nbd-uri.h"

const char *
ioh_nbd_cause(const char *msg)
{
    const char *colon = strstr(msg, ": ");

    return colon ? colon + 2 : msg;
}

gboolean
ioh_nbd_fail(GError **error, const char *uri, const char *what)
{
    int errsv = nbd_get_errno();
    const char *msg = nbd_get_error();
    g_autofree char *name = ioh_nbd_safe_name(uri);
    g_autofree char *cause = ioh_nbd_redact(uri, msg ? ioh_nbd_cause(msg)
                                                     : g_strerror(errsv ? errsv : EIO));

    return ioh_error_set(error, errsv ? errsv : EIO, what, name, "%s", cause);
}

gboolean
ioh_nbd_no_flush(GError **error, const char *name)
{
    return ioh_error_set(error, EOPNOTSUPP, "flush", name, "NBD server does not support "
                         "flush: cannot make the save durable");
}

gboolean
ioh_nbd_check_save(struct nbd_handle *h, const char *uri, GError **error)
{
    g_autofree char *name = ioh_nbd_safe_name(uri);

    if (nbd_is_read_only(h) == 1) {
        return ioh_error_set(error, EROFS, "open", name, "the export is read-only");
    }
    if (nbd_can_flush(h) != 1) {
        return ioh_nbd_no_flush(error, name);
    }
    return TRUE;
}

/* One wait on @h: FALSE once @deadline (0: none) passed or @cancel_fd is readable
 * (*@ret_errno ETIMEDOUT or ECANCELED), or libnbd failed (*@ret_errno 0). */
static gboolean
drive_step(struct nbd_handle *h, int cancel_fd, gint64 deadline, int *ret_errno)
{
    unsigned dir = nbd_aio_get_direction(h);
    gint64 left = deadline ? MAX((deadline - g_get_monotonic_time() + 999) / 1000, 0) : -1;
    struct pollfd p[2] = {
        { .fd = nbd_aio_get_fd(h),
          .events = ((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
                    ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0) },
        { .fd = cancel_fd, .events = POLLIN },
    };
    int ready = left != 0 ? poll(p, cancel_fd >= 0 ? 2 : 1, (int)MIN(left, G_MAXINT)) : 0;

    *ret_errno = 0;
    if (ready < 0) {
        return errno == EINTR;
    }
    if (ready == 0 || (p[1].revents & POLLIN)) {
        *ret_errno = ready == 0 ? ETIMEDOUT : ECANCELED;
        return FALSE;
    }
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && nbd_aio_notify_read(h) < 0) {
        return FALSE;
    }
    return !(p[0].revents & POLLOUT) || nbd_aio_notify_write(h) >= 0;
}

/* > 0: done, < 0: failed (libnbd's error set), 0: not yet. */
typedef int (*DriveDone)(struct nbd_handle *h, int64_t cookie);

/* Drives @h's state machine here until @done says so, @timeout_s (0: no bound) passed or
 * @cancellable is cancelled: 0, ETIMEDOUT, ECANCELED, or -1 (libnbd's error set). */
static int
drive(struct nbd_handle *h, DriveDone done, int64_t cookie, guint timeout_s,
      GCancellable *cancellable)
{
    gint64 deadline = timeout_s ? g_get_monotonic_time() + timeout_s * G_TIME_SPAN_SECOND : 0;
    int cancel_fd = cancellable ? g_cancellable_get_fd(cancellable) : -1;
    int errsv = 0, r;

    while ((r = done(h, cookie)) == 0 && drive_step(h, cancel_fd, deadline, &errsv)) {
    }
    if (cancellable) {
        g_cancellable_release_fd(cancellable);
    }
    return r > 0 ? 0 : r < 0 ? -1 : errsv ? errsv : -1;
}

static int
handshake_done(struct nbd_handle *h, int64_t cookie G_GNUC_UNUSED)
{
    if (nbd_aio_is_ready(h)) {
        return 1;
    }
    return nbd_aio_is_dead(h) || nbd_aio_is_closed(h) ? -1 : 0;
}

gboolean
ioh_nbd_connect_uri(struct nbd_handle *h, const char *uri, guint timeout_s,
                    GCancellable *cancellable, GError **error)
{
    guint secs = timeout_s ? timeout_s : IOH_NBD_CONNECT_TIMEOUT_S;
    g_autofree char *name = ioh_nbd_safe_name(uri);
    int r = nbd_aio_connect_uri(h, uri) == 0 ? drive(h, handshake_done, 0, secs, cancellable)
                                             : -1;

    if (r == 0) {
        return TRUE;
    }
    if (r == ECANCELED) {
        return ioh_error_set_cancelled(error, "connect", name);
    }
    if (r == ETIMEDOUT) {
        return ioh_error_set(error, ETIMEDOUT, "connect", name, "the server did not "
                             "complete the NBD handshake in %u s", secs);
    }
    return ioh_nbd_fail(error, uri, "connect");
}

static int
command_done(struct nbd_handle *h, int64_t cookie)
{
    int r = nbd_aio_command_completed(h, cookie);

    return r != 0 ? r : nbd_aio_is_dead(h) || nbd_aio_is_closed(h) ? -1 : 0;
}

gboolean
ioh_nbd_wait_command(struct nbd_handle *h, int64_t cookie, const char *uri, const char *what,
                     guint timeout_s, GCancellable *cancellable, GError **error)
{
    g_autofree char *name = ioh_nbd_safe_name(uri);
    int r = cookie >= 0 ? drive(h, command_done, cookie, timeout_s, cancellable) : -1;

    if (r == 0) {
        return TRUE;
    }
    if (r == ECANCELED) {
        return ioh_error_set_cancelled(error, what, name);
    }
    if (r == ETIMEDOUT) {
        return ioh_error_set(error, ETIMEDOUT, what, name, "the server did not answer in "
                             "%u s", timeout_s);
    }
    return ioh_nbd_fail(error, uri, what);
}

/* NBD_CMD_DISC sent: it has no reply, and what the server does after it (close, or
 * not) is nothing we wait for. */
static int
disc_sent(struct nbd_handle *h, int64_t cookie G_GNUC_UNUSED)
{
    return nbd_aio_is_closed(h) || nbd_aio_is_dead(h) ||
           !(nbd_aio_get_direction(h) & LIBNBD_AIO_DIRECTION_WRITE);
}

void
ioh_nbd_disconnect(struct nbd_handle *h, guint timeout_s)
{
    if (nbd_aio_is_ready(h) && nbd_aio_disconnect(h, 0) == 0) {
        (void)drive(h, disc_sent, 0, timeout_s ? timeout_s : IOH_NBD_CONNECT_TIMEOUT_S,
                    NULL);
    }
}
