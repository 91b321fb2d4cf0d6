/* bench-relay.c - what the checksumming relay costs: pipe -> relay -> pipe throughput
 * next to a plain pipe, and XXH3-64 alone. Not a test: `meson test --benchmark`. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glib-unix.h>
#include <xxhash.h>

#include "qg-relay.h"

#define CHUNK (1 << 20)

typedef struct {
    int fd;
    guint64 len;
} Job;

static gpointer
writer(gpointer p)
{
    Job *j = p;
    g_autofree guint8 *buf = g_malloc(CHUNK);

    memset(buf, 0x5a, CHUNK);
    for (guint64 done = 0; done < j->len;) {
        ssize_t n = write(j->fd, buf, CHUNK);
        g_assert_cmpint(n, >, 0);
        done += n;
    }
    close(j->fd);
    return NULL;
}

static gpointer
reader(gpointer p)
{
    Job *j = p;
    g_autofree guint8 *buf = g_malloc(CHUNK);
    ssize_t n;

    while ((n = read(j->fd, buf, CHUNK)) > 0) {
        j->len += n;
    }
    close(j->fd);
    return NULL;
}

static double
cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
big_pipe(int p[2])
{
    g_assert_true(g_unix_open_pipe(p, FD_CLOEXEC, NULL));
    fcntl(p[1], F_SETPIPE_SZ, CHUNK);
}

int
main(void)
{
    const guint64 len = G_GUINT64_CONSTANT(2) << 30;
    g_autofree guint8 *buf = g_malloc(CHUNK);
    int a[2], b[2];
    gint64 t;
    double cpu;
    guint64 h = 0;
    Job w, r;
    GThread *wt, *rt;
    QgRelay *relay;

    memset(buf, 0x33, CHUNK);
    t = g_get_monotonic_time();
    for (guint64 i = 0; i < len / CHUNK; i++) {
        h ^= XXH3_64bits(buf, CHUNK);
    }
    printf("# xxh3-64 alone:          %.2f GB/s (%" G_GINT64_MODIFIER "x)\n",
           len / 1e3 / (g_get_monotonic_time() - t), h);

    big_pipe(a);
    w = (Job){ a[1], len };
    r = (Job){ a[0], 0 };
    t = g_get_monotonic_time();
    cpu = cpu_seconds();
    wt = g_thread_new("w", writer, &w);
    rt = g_thread_new("r", reader, &r);
    g_thread_join(wt);
    g_thread_join(rt);
    printf("# pipe -> reader:         %.2f GB/s, %.2f CPU s/GB\n",
           r.len / 1e3 / (g_get_monotonic_time() - t), (cpu_seconds() - cpu) * 1e9 / r.len);

    big_pipe(a);
    big_pipe(b);
    w = (Job){ a[1], len };
    r = (Job){ b[0], 0 };
    t = g_get_monotonic_time();
    cpu = cpu_seconds();
    relay = qg_relay_start(a[0], b[1], "bench", NULL);
    wt = g_thread_new("w", writer, &w);
    rt = g_thread_new("r", reader, &r);
    g_assert_true(qg_relay_wait(relay, NULL, NULL, NULL));
    g_thread_join(wt);
    g_thread_join(rt);
    printf("# pipe -> relay -> pipe:  %.2f GB/s, %.2f CPU s/GB\n",
           r.len / 1e3 / (g_get_monotonic_time() - t), (cpu_seconds() - cpu) * 1e9 / r.len);
    qg_relay_free(relay);
    printf("1..1\nok 1 /qemu/bench/relay\n");
    return 0;
}
