/* core-util.c - plumbing of the core's tests */
#include "core-util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void
coret_pipe(int fds[2], gboolean nonblock, int size)
{
    g_assert_cmpint(pipe2(fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0)), ==, 0);
    if (size > 0) {
        g_assert_cmpint(fcntl(fds[1], F_SETPIPE_SZ, size), >=, size);
    }
}

gsize
coret_fill(int fd)
{
    static const char junk[4096];
    gsize total = 0;

    for (;;) {
        gssize n = write(fd, junk, sizeof(junk));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            g_assert_cmpint(errno, ==, EAGAIN);
            /* a page may still take less than 4096: fill byte by byte */
            while (write(fd, junk, 1) == 1) {
                total++;
            }
            return total;
        }
        total += (gsize)n;
    }
}

struct CoretDrain {
    IohtPump *pump;
    GByteArray *got;
};

CoretDrain *
coret_drain_start(int fd, guint delay_ms)
{
    CoretDrain *d = g_new0(CoretDrain, 1);
    IohtPumpOpts o = { .delay_ms = delay_ms };

    d->got = g_byte_array_new();
    o.keep = d->got;
    d->pump = ioht_drain_start(fd, &o);
    return d;
}

GByteArray *
coret_drain_join(CoretDrain *d)
{
    GByteArray *got = d->got;

    ioht_pump_join(d->pump, NULL);
    g_free(d);
    return got;
}

IohtPump *
coret_feed_start(int fd, const guint8 *data, gsize len, guint delay_ms)
{
    IohtPumpOpts o = { .data = data, .len = len, .delay_ms = delay_ms,
                       .vary_pieces = TRUE, .strict = TRUE };

    return ioht_feed_start(fd, &o);
}

typedef struct {
    GCancellable *c;
    guint delay_ms;
} Later;

static gpointer
cancel_thread(gpointer data)
{
    Later *l = data;

    g_usleep(l->delay_ms * 1000);
    g_cancellable_cancel(l->c);
    g_object_unref(l->c);
    g_free(l);
    return NULL;
}

GThread *
coret_cancel_later(GCancellable *c, guint delay_ms)
{
    Later *l = g_new0(Later, 1);

    l->c = g_object_ref(c);
    l->delay_ms = delay_ms;
    return g_thread_new("cancel", cancel_thread, l);
}

guint8 *
coret_random(gsize len, guint32 seed)
{
    guint8 *p = g_malloc(len);
    guint32 x = seed ? seed : 1;

    for (gsize i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (guint8)x;
    }
    return p;
}

guint64
coret_rss(void)
{
    g_autofree char *text = NULL;
    const char *p;

    g_assert_true(g_file_get_contents("/proc/self/status", &text, NULL, NULL));
    p = strstr(text, "VmRSS:");
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + 6, NULL, 10) * 1024;
}
