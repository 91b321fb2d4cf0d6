/* example-save.c - how a management daemon saves a VM stream through libwrap
 *
 * Copy this into your daemon. Where it writes a generated stream into the fd, your
 * daemon hands the fd to QEMU instead (QMP "getfd" + "migrate fd:NAME", or
 * "add-fd" + "file:/dev/fdset/N") and waits for the migration to complete.
 *
 *   example-save [--direct|--fadvise|--pollable] [--size=MIB] FILE
 *
 * Build outside this tree:
 *   cc example-save.c $(pkg-config --cflags --libs iohwrap) -o example-save
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iohwrap.h>

typedef struct {
    GMainLoop *loop;
    IohWrap *wrap;
    int fd;
    guint64 size;
    gboolean wrote_all;
    gboolean ok;
    GError *error;
} Job;

static void on_finished(GObject *source, GAsyncResult *res, gpointer user_data);

/* Back in the main loop once "QEMU" is done: collect the helper's verdict. */
static gboolean
on_stream_done(gpointer data)
{
    Job *job = data;

    ioh_wrap_finish_async(job->wrap, NULL, on_finished, job);
    return G_SOURCE_REMOVE;
}

/* Stands in for QEMU: writes @size bytes of stream into the fd, then closes it. */
static gpointer
produce(gpointer data)
{
    Job *p = data;
    g_autofree char *buf = g_malloc(1024 * 1024);
    guint64 left = p->size;

    for (gsize i = 0; i < 1024 * 1024; i++) {
        buf[i] = (char)(i * 7 + 3);
    }
    p->wrote_all = TRUE;
    while (left > 0) {
        gsize chunk = (gsize)MIN(left, (guint64)1024 * 1024);
        gssize n = write(p->fd, buf, chunk);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            p->wrote_all = FALSE;    /* EPIPE: the helper died; finish tells why */
            break;
        }
        left -= (guint64)n;
    }
    close(p->fd);    /* QEMU closes its fd when the migration completes */
    /* A daemon learns this from QMP's MIGRATION event, in its main loop. */
    g_idle_add(on_stream_done, p);
    return NULL;
}

static void
on_progress(guint64 written, guint64 synced, gpointer user_data)
{
    (void)user_data;
    printf("progress: %" G_GUINT64_FORMAT " bytes written, %" G_GUINT64_FORMAT
           " bytes synced\n", written, synced);
}

static void
on_finished(GObject *source, GAsyncResult *res, gpointer user_data)
{
    Job *job = user_data;

    (void)source;
    job->ok = ioh_wrap_finish_finish(job->wrap, res, &job->error);
    g_main_loop_quit(job->loop);
}

static const char usage[] =
    "usage: example-save [--direct|--fadvise|--pollable] [--size=MIB] FILE\n";

static gboolean
parse_args(int argc, char **argv, IohWrapFlags *flags, guint64 *mib, const char **path)
{
    for (int i = 1; i < argc; i++) {
        if (g_str_equal(argv[i], "--direct")) {
            *flags |= IOH_WRAP_DIRECT;
        } else if (g_str_equal(argv[i], "--fadvise")) {
            *flags |= IOH_WRAP_FADVISE;
        } else if (g_str_equal(argv[i], "--pollable")) {
            *flags |= IOH_WRAP_POLLABLE;
        } else if (g_str_has_prefix(argv[i], "--size=")) {
            *mib = g_ascii_strtoull(argv[i] + 7, NULL, 10);
        } else if (argv[i][0] != '-' && !*path) {
            *path = argv[i];
        } else {
            return FALSE;
        }
    }
    return *path != NULL;
}

/* Steps 1 and 2: the daemon opens the image and wraps it. NULL after a message. */
static IohWrap *
open_and_wrap(const char *path, IohWrapFlags flags, int *ret_fd)
{
    g_autoptr(GError) error = NULL;
    IohWrapParams params = { .progress_interval_ms = 200 };
    IohWrap *wrap;
    /* O_WRONLY means save. 0600: it holds guest RAM. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0) {
        fprintf(stderr, "example-save: open %s: %s\n", path, g_strerror(errno));
        return NULL;
    }
    /* Without a flag the fd comes back unchanged and no helper runs. */
    wrap = ioh_wrap_new(&fd, path, flags, &params, &error);
    if (!wrap) {
        fprintf(stderr, "example-save: %s\n", error->message);
        close(fd);
        return NULL;
    }
    if (ioh_wrap_is_spawned(wrap)) {
        printf("example-save: helper %d serves %s; hand fd %d (a %d-byte pipe) to QEMU\n",
               (int)ioh_wrap_get_pid(wrap), path, fd, fcntl(fd, F_GETPIPE_SZ));
    } else {
        printf("example-save: no helper needed; hand fd %d (the file) to QEMU\n", fd);
    }
    *ret_fd = fd;
    return wrap;
}

/* Steps 3 and 4: "QEMU" writes the stream into @fd (and closes it) while the daemon's
 * main loop runs: progress arrives, then the helper's verdict. */
static gboolean
run_stream(IohWrap *wrap, int fd, guint64 size, GError **error)
{
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    Job job = { .loop = loop, .wrap = wrap, .fd = fd, .size = size };
    GThread *thread = g_thread_new("qemu", produce, &job);

    g_main_loop_run(loop);
    g_thread_join(thread);
    if (!job.ok) {
        g_propagate_error(error, job.error);
    }
    return job.ok;
}

int
main(int argc, char **argv)
{
    IohWrapFlags flags = IOH_WRAP_NONE;
    guint64 mib = 256, written, synced;
    const char *path = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    gint64 t0;
    double secs;
    int fd = -1;

    /* A helper that dies must give EPIPE to the writer, not kill the daemon. */
    signal(SIGPIPE, SIG_IGN);

    if (!parse_args(argc, argv, &flags, &mib, &path)) {
        fputs(usage, stderr);
        return 2;
    }
    wrap = open_and_wrap(path, flags, &fd);
    if (!wrap) {
        return 1;
    }
    ioh_wrap_set_progress_func(wrap, on_progress, NULL, NULL);
    t0 = g_get_monotonic_time();
    if (!run_stream(wrap, fd, mib * 1024 * 1024, &error)) {
        fprintf(stderr, "example-save: save failed: %s\n", error->message);
        return 1;
    }
    secs = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    ioh_wrap_get_progress(wrap, &written, &synced);
    if (!ioh_wrap_is_spawned(wrap)) {
        written = synced = mib * 1024 * 1024;
    }
    printf("example-save: saved %" G_GUINT64_FORMAT " bytes to %s in %.2f s "
           "(%.0f MiB/s), %" G_GUINT64_FORMAT " durable\n", written, path, secs,
           (double)written / (1 << 20) / MAX(secs, 1e-6), synced);
    return 0;
}
