/* ioh-test-pump.c - feeding and draining a pipe, in this thread or another one: the one
 * producer and consumer every C test uses in place of QEMU. */
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define PUMP_CHUNK (1 << 20)

struct IohtPump {
    IohtPumpOpts o;
    char *path;
    int fd;
    gboolean feed;
    gboolean threaded;         /* set before the thread starts: it closes the fd */
    GThread *thread;
    GMutex lock;
    gboolean released;
    guint64 done;
    gboolean ok;
};

/* Pauses once @p->o.stall_at bytes have moved: @stall_ms, or until ioht_pump_release(). */
static void
pump_stall(IohtPump *p)
{
    if (p->o.stall_ms != IOHT_STALL_HELD) {
        g_usleep((gulong)p->o.stall_ms * 1000);
        return;
    }
    for (;;) {
        gboolean done;

        g_mutex_lock(&p->lock);
        done = p->released;
        g_mutex_unlock(&p->lock);
        if (done) {
            return;
        }
        g_usleep(10000);
    }
}

/* How many bytes the next read or write may move: up to the stall point and the maximum. */
static gsize
pump_want(IohtPump *p, gboolean *stalled, gsize piece)
{
    guint64 max = p->o.max ? p->o.max : G_MAXUINT64;
    guint64 want = MIN((guint64)piece, max - p->done);

    if (p->o.stall_ms && !*stalled && p->done >= p->o.stall_at) {
        pump_stall(p);
        *stalled = TRUE;
    }
    if (p->o.stall_ms && !*stalled) {
        want = MIN(want, p->o.stall_at - p->done);
    }
    return (gsize)want;
}

/* Writes @len bytes of @buf into the pipe. FALSE when the reader went away (EPIPE). */
static gboolean
pump_write(IohtPump *p, const char *buf, gsize len)
{
    gsize off = 0;

    while (off < len) {
        gssize w = write(p->fd, buf + off, len - off);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
            g_usleep(errno == EAGAIN ? 1000 : 0);
            continue;
        }
        if (w < 0 && !p->o.strict) {
            g_assert_cmpint(errno, ==, EPIPE);
            return FALSE;
        }
        g_assert_cmpint(w, >, 0);
        off += (gsize)w;
        p->done += (guint64)w;
    }
    return TRUE;
}

/* The next piece to feed into @buf (from the file or the bytes); 0 at the end. */
static gsize
feed_next(IohtPump *p, int in, char *buf, gsize want)
{
    gssize n;

    if (in < 0) {
        gsize left = p->o.len - (gsize)MIN((guint64)p->o.len, p->done);
        n = (gssize)MIN(want, left);
        memcpy(buf, (const char *)p->o.data + p->done, (gsize)n);
        return (gsize)n;
    }
    n = read(in, buf, want);
    g_assert_cmpint(n, >=, 0);
    return (gsize)n;
}

static void
pump_feed(IohtPump *p)
{
    g_autofree char *buf = g_malloc(PUMP_CHUNK);
    int in = -1;
    gboolean stalled = FALSE;
    gsize piece = 1;

    if (p->path) {
        in = open(p->path, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(in, >=, 0);
    }
    p->ok = TRUE;
    for (;;) {
        gsize size = p->o.vary_pieces ? piece : PUMP_CHUNK;
        gsize n = feed_next(p, in, buf, pump_want(p, &stalled, size));

        if (n == 0) {
            break;
        }
        if (!pump_write(p, buf, n)) {
            p->ok = FALSE;
            break;
        }
        piece = piece * 3 % 4093 + 1;
    }
    if (in >= 0) {
        close(in);
    }
}

static void
pump_drain(IohtPump *p)
{
    g_autofree char *buf = g_malloc(PUMP_CHUNK);
    gboolean stalled = FALSE;
    int out = -1;

    if (p->path) {
        out = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(out, >=, 0);
    }
    for (;;) {
        gsize want = pump_want(p, &stalled, PUMP_CHUNK);
        gssize n = want ? read(p->fd, buf, want) : 0;

        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            g_usleep(errno == EAGAIN ? 1000 : 0);
            continue;
        }
        g_assert_cmpint(n, >=, 0);
        if (n == 0) {
            break;
        }
        if (out >= 0) {
            g_assert_cmpint(write(out, buf, (gsize)n), ==, n);
        }
        if (p->o.keep) {
            g_byte_array_append(p->o.keep, (const guint8 *)buf, (guint)n);
        }
        p->done += (guint64)n;
    }
    if (out >= 0) {
        g_assert_cmpint(close(out), ==, 0);
    }
    p->ok = TRUE;
}

static void
pump_run(IohtPump *p)
{
    if (p->o.delay_ms) {
        g_usleep((gulong)p->o.delay_ms * 1000);
    }
    if (p->feed) {
        pump_feed(p);
    } else {
        pump_drain(p);
    }
    if (p->threaded && !p->o.keep_open) {
        close(p->fd);
    }
}

static gpointer
pump_thread(gpointer data)
{
    pump_run(data);
    return NULL;
}

static IohtPump *
pump_new(int fd, gboolean feed, const IohtPumpOpts *o)
{
    IohtPump *p = g_new0(IohtPump, 1);

    if (o) {
        p->o = *o;
    }
    p->path = g_strdup(p->o.path);
    p->fd = fd;
    p->feed = feed;
    g_mutex_init(&p->lock);
    return p;
}

static void
pump_free(IohtPump *p)
{
    g_mutex_clear(&p->lock);
    g_free(p->path);
    g_free(p);
}

static IohtPump *
pump_start(int fd, gboolean feed, const IohtPumpOpts *o)
{
    IohtPump *p = pump_new(fd, feed, o);

    p->threaded = TRUE;
    p->thread = g_thread_new(feed ? "feed" : "drain", pump_thread, p);
    return p;
}

IohtPump *
ioht_feed_start(int fd, const IohtPumpOpts *o)
{
    return pump_start(fd, TRUE, o);
}

IohtPump *
ioht_drain_start(int fd, const IohtPumpOpts *o)
{
    return pump_start(fd, FALSE, o);
}

void
ioht_pump_release(IohtPump *p)
{
    g_mutex_lock(&p->lock);
    p->released = TRUE;
    g_mutex_unlock(&p->lock);
}

guint64
ioht_pump_join(IohtPump *p, gboolean *ret_ok)
{
    guint64 done;

    g_thread_join(p->thread);
    done = p->done;
    if (ret_ok) {
        *ret_ok = p->ok;
    }
    pump_free(p);
    return done;
}

/* Runs a pump in this thread; *ret_ok as ioht_pump_join() says. */
static guint64
pump_here(int fd, gboolean feed, const IohtPumpOpts *o, gboolean *ret_ok)
{
    IohtPump *p = pump_new(fd, feed, o);
    guint64 done;

    pump_run(p);
    done = p->done;
    *ret_ok = p->ok;
    pump_free(p);
    return done;
}

gboolean
ioht_feed(int fd, const IohtPumpOpts *o)
{
    gboolean ok;

    pump_here(fd, TRUE, o, &ok);
    return ok;
}

guint64
ioht_drain(int fd, const IohtPumpOpts *o)
{
    gboolean ok;

    return pump_here(fd, FALSE, o, &ok);
}

gboolean
ioht_feed_file(const char *src, int fd)
{
    IohtPumpOpts o = { .path = src };

    return ioht_feed(fd, &o);
}

guint64
ioht_drain_to_file(int fd, const char *dst)
{
    IohtPumpOpts o = { .path = dst };

    return ioht_drain(fd, &o);
}
