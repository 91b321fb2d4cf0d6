/* qg-relay.c - copy and hash a stream in a thread */
#include "qg-relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <gio/gio.h>
#include <xxhash.h>

#include "ioh-error.h"
#include "ioh-fd.h"

#define QG_RELAY_BUF (1024 * 1024)

struct _QgRelay {
    int in_fd;
    int out_fd;
    GCancellable *cancel;   /* cancelled to stop the thread */
    char *what;
    GThread *thread;
    guint64 bytes;          /* atomic */
    guint64 checksum;
    GError *error;
    gboolean done;
    gint ended;             /* atomic: the thread has stopped (EOF, error or cancel) */
};

G_DEFINE_QUARK(qg-relay-error-quark, qg_relay_error)

/* Waits until @fd is ready for @events or the relay is cancelled (ioh_fd_wait()). */
static gboolean
qg_relay_poll(QgRelay *r, int fd, short events)
{
    g_autoptr(GError) local = NULL;

    if (ioh_fd_wait(fd, events, r->cancel, -1, &local) > 0) {
        return TRUE;
    }
    if (ioh_error_is_cancelled(local)) {
        g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_CANCELLED,
                    "%s stream cancelled", r->what);
    }
    return FALSE;
}

static gboolean
qg_relay_write_all(QgRelay *r, const guint8 *buf, gsize len)
{
    g_autoptr(GError) local = NULL;

    if (ioh_fd_write_full(r->out_fd, buf, len, r->cancel, NULL, &local)) {
        return TRUE;
    }
    if (ioh_error_is_cancelled(local)) {
        g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_CANCELLED,
                    "%s stream cancelled", r->what);
    } else {
        g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_WRITE,
                    "%s stream: cannot write after %" G_GUINT64_FORMAT " bytes: %s",
                    r->what, r->bytes, g_strerror(ioh_error_get_errno(local)));
    }
    return FALSE;
}

/* After EPIPE: waits for the input to say more; TRUE if it is at EOF with nothing left. */
static gboolean
qg_relay_input_ended(QgRelay *r)
{
    int avail = -1;
    int saved = errno;
    gboolean ended = qg_relay_poll(r, r->in_fd, POLLIN) &&
                     ioctl(r->in_fd, FIONREAD, &avail) == 0 && avail == 0;

    if (r->error && r->error->code == QG_RELAY_ERROR_CANCELLED) {
        g_clear_error(&r->error);
    }
    errno = saved;
    return ended;
}

/* Waits for either side after tee(2) said EAGAIN: the input empty or the output full. */
static gboolean
qg_relay_wait_tee(QgRelay *r)
{
    int ready = ioh_fd_wait(r->in_fd, POLLIN, NULL, 0, NULL);

    if (ready > 0 && (ready & POLLIN)) {
        return qg_relay_poll(r, r->out_fd, POLLOUT);
    }
    return qg_relay_poll(r, r->in_fd, POLLIN);
}

/* Both ends pipes: tee(2) puts the input's pages into the output without copying them,
 * then we read them out of the input to hash them: one copy per byte instead of two.
 * Returns 1 at EOF, 0 on error or cancel (r->error set), -1 when tee(2) does not apply
 * (nothing moved yet: the caller copies instead). */
static int
qg_relay_tee_loop(QgRelay *r, XXH3_state_t *st, guint8 *buf)
{
    for (;;) {
        ssize_t n = tee(r->in_fd, r->out_fd, QG_RELAY_BUF, SPLICE_F_NONBLOCK);
        gsize left;

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                if (!qg_relay_wait_tee(r)) {
                    return 0;
                }
                continue;
            }
            if (errno == EINVAL && r->bytes == 0) {
                return -1;
            }
            if (errno == EPIPE && qg_relay_input_ended(r)) {
                /* tee(2) looks at the output first: a reader that took every byte and
                 * left is EPIPE even when nothing is left to send. */
                return 1;
            }
            g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_WRITE,
                        "%s stream: cannot write after %" G_GUINT64_FORMAT " bytes: %s",
                        r->what, r->bytes, g_strerror(errno));
            return 0;
        }
        if (n == 0) {
            return 1;
        }
        for (left = n; left > 0;) {
            ssize_t m = read(r->in_fd, buf, MIN(left, QG_RELAY_BUF));
            if (m < 0 && errno == EINTR) {
                continue;
            }
            if (m <= 0) {
                /* The bytes tee(2) just saw are ours alone to read: cannot happen. */
                g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_READ,
                            "%s stream: cannot read after %" G_GUINT64_FORMAT " bytes: %s",
                            r->what, r->bytes, m < 0 ? g_strerror(errno) : "early EOF");
                return 0;
            }
            XXH3_64bits_update(st, buf, m);
            left -= m;
        }
        __atomic_add_fetch(&r->bytes, (guint64)n, __ATOMIC_RELAXED);
    }
}

static gpointer
qg_relay_thread(gpointer data)
{
    QgRelay *r = data;
    g_autofree guint8 *buf = g_malloc(QG_RELAY_BUF);
    XXH3_state_t *st = XXH3_createState();
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    XXH3_64bits_reset(st);

    switch (qg_relay_tee_loop(r, st, buf)) {
    case 1:
        r->checksum = XXH3_64bits_digest(st);
        r->done = TRUE;
        goto out;
    case 0:
        goto out;
    default:
        break;   /* not two pipes: copy */
    }
    for (;;) {
        ssize_t n = read(r->in_fd, buf, QG_RELAY_BUF);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                if (!qg_relay_poll(r, r->in_fd, POLLIN)) {
                    break;
                }
                continue;
            }
            g_set_error(&r->error, QG_RELAY_ERROR, QG_RELAY_ERROR_READ,
                        "%s stream: cannot read after %" G_GUINT64_FORMAT " bytes: %s",
                        r->what, r->bytes, g_strerror(errno));
            break;
        }
        if (n == 0) {
            r->checksum = XXH3_64bits_digest(st);
            r->done = TRUE;
            break;
        }
        XXH3_64bits_update(st, buf, n);
        if (!qg_relay_write_all(r, buf, n)) {
            break;
        }
        __atomic_add_fetch(&r->bytes, (guint64)n, __ATOMIC_RELAXED);
    }
out:
    XXH3_freeState(st);
    /* Before the closes: whoever sees their EOF / EPIPE also sees the relay ended (so a
     * helper that fails with EPIPE because we stopped reading is known as a consequence,
     * not a cause). */
    g_atomic_int_set(&r->ended, 1);
    /* Close as soon as possible: the ends must see EOF / EPIPE without waiting for us. */
    close(r->in_fd);
    r->in_fd = -1;
    close(r->out_fd);
    r->out_fd = -1;
    return NULL;
}

QgRelay *
qg_relay_start(int in_fd, int out_fd, const char *what, GError **error)
{
    QgRelay *r;

    g_autoptr(GError) local = NULL;

    if (!ioh_fd_set_nonblock(in_fd, TRUE, &local) ||
        !ioh_fd_set_nonblock(out_fd, TRUE, &local)) {
        g_set_error(error, QG_RELAY_ERROR, QG_RELAY_ERROR_READ, "%s stream: %s", what,
                    local->message);
        close(in_fd);
        close(out_fd);
        return NULL;
    }
    r = g_new0(QgRelay, 1);
    r->in_fd = in_fd;
    r->out_fd = out_fd;
    r->what = g_strdup(what);
    r->cancel = g_cancellable_new();
    /* g_thread_new() would abort the process: library code reports instead. */
    r->thread = g_thread_try_new("qg-relay", qg_relay_thread, r, error);
    if (!r->thread) {
        g_object_unref(r->cancel);
        close(in_fd);
        close(out_fd);
        g_free(r->what);
        g_free(r);
        return NULL;
    }
    return r;
}

guint64
qg_relay_get_bytes(QgRelay *relay)
{
    return __atomic_load_n(&relay->bytes, __ATOMIC_RELAXED);
}

gboolean
qg_relay_has_ended(QgRelay *relay)
{
    return g_atomic_int_get(&relay->ended) != 0;
}

static void
qg_relay_join(QgRelay *r)
{
    if (r->thread) {
        g_thread_join(r->thread);
        r->thread = NULL;
    }
}

gboolean
qg_relay_wait(QgRelay *relay, guint64 *ret_bytes, guint64 *ret_checksum, GError **error)
{
    qg_relay_join(relay);
    if (ret_bytes) {
        *ret_bytes = relay->bytes;
    }
    if (!relay->done) {
        g_set_error_literal(error, QG_RELAY_ERROR,
                            relay->error ? relay->error->code : QG_RELAY_ERROR_READ,
                            relay->error ? relay->error->message : "stream relay failed");
        return FALSE;
    }
    if (ret_checksum) {
        *ret_checksum = relay->checksum;
    }
    return TRUE;
}

void
qg_relay_free(QgRelay *relay)
{
    if (!relay) {
        return;
    }
    if (relay->thread) {
        g_cancellable_cancel(relay->cancel);
        qg_relay_join(relay);
    }
    g_clear_object(&relay->cancel);
    g_clear_error(&relay->error);
    g_free(relay->what);
    g_free(relay);
}
