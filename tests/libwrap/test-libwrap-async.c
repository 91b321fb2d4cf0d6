/* test-libwrap-async.c - libwrap against the real iohelper binary, through the public API
 * only: async finish (/libwrap/async/...)
 */
#include "config.h"

#include "libwrap-util.h"

static void
on_finished(GObject *source, GAsyncResult *res, gpointer data)
{
    Async *a = data;

    g_assert_null(source);
    a->ok = ioh_wrap_finish_finish(a->wrap, res, &a->error);
    a->done = TRUE;
    g_main_loop_quit(a->loop);
}

static gboolean
start_finish(gpointer data)
{
    Async *a = data;

    ioh_wrap_finish_async(a->wrap, NULL, on_finished, a);
    return G_SOURCE_REMOVE;
}

static gpointer
feed_then_finish(gpointer data)
{
    Async *a = data;

    a->stream.ok = ioht_feed_file(a->stream.src, a->stream.fd);
    close(a->stream.fd);
    /* Back to the main loop: the stream is complete, ask for the helper's verdict. */
    g_idle_add(start_finish, a);
    return NULL;
}

/* The start of an async test: a save fd of @path wrapped (*@fd: the caller's end), and
 * @a's loop and wrap. */
static IohWrap *
async_open(const char *path, IohWrapFlags flags, const IohWrapParams *params, Async *a,
           int *fd)
{
    g_autoptr(GError) error = NULL;
    IohWrap *wrap;

    *fd = open_save(path);
    wrap = ioh_wrap_new(fd, path, flags, params, &error);
    g_assert_no_error(error);
    a->loop = g_main_loop_new(NULL, FALSE);
    a->wrap = wrap;
    return wrap;
}

/* Asks the wrap's verdict asynchronously and waits for it in @a's loop. */
static void
async_run(Async *a, GCancellable *cancel)
{
    a->done = FALSE;
    ioh_wrap_finish_async(a->wrap, cancel, on_finished, a);
    g_main_loop_run(a->loop);
}

/* The async finish failed with @domain and @code (the error then cleared). */
static void
async_assert_failed(Async *a, GQuark domain, int code)
{
    g_assert_false(a->ok);
    g_assert_error(a->error, domain, code);
    g_clear_error(&a->error);
}

static void
test_async_progress(IohtDir *fx, gconstpointer data)
{
    IohWrapFlags flags = GPOINTER_TO_UINT(data);
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = tpath(dir, "async.save");
    const guint64 size = 64 * MIB;
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Async a = { 0 };
    GThread *t;
    guint64 w, s;
    int fd;

    if ((flags & IOH_WRAP_DIRECT) && !have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, size, 9);
    wrap = async_open(path, flags, &params, &a, &fd);
    a.written = g_array_new(FALSE, FALSE, sizeof(guint64));
    a.synced = g_array_new(FALSE, FALSE, sizeof(guint64));
    a.stream.src = src;
    a.stream.fd = fd;
    ioh_wrap_set_progress_func(wrap, on_progress, &a, NULL);
    t = g_thread_new("feed", feed_then_finish, &a);
    g_main_loop_run(a.loop);
    g_thread_join(t);
    g_assert_true(a.stream.ok);
    g_assert_true(a.done);
    g_assert_no_error(a.error);
    g_assert_true(a.ok);
    /* The final progress came before the finish callback, in this context. */
    check_progress(&a, size, TRUE);
    ioh_wrap_get_progress(wrap, &w, &s);
    g_assert_cmpuint(w, ==, size);
    g_assert_cmpuint(s, ==, size);
    g_assert_true(ioh_wrap_finish(wrap, &error));    /* idempotent after async */
    g_assert_true(ioht_files_equal(src, path));
    g_array_unref(a.written);
    g_array_unref(a.synced);
    g_main_loop_unref(a.loop);
}

static void
test_async_killed(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "ak.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Async a = { 0 };
    int fd;

    wrap = async_open(path, IOH_WRAP_POLLABLE, NULL, &a, &fd);
    g_assert_cmpint(write(fd, "some bytes", 10), ==, 10);
    g_assert_cmpint(kill(ioh_wrap_get_pid(wrap), SIGKILL), ==, 0);
    ioh_wrap_finish_async(wrap, NULL, on_finished, &a);
    g_assert_false(fd_is_open(fd));
    g_main_loop_run(a.loop);
    g_assert_nonnull(a.error);
    g_assert_cmpstr(a.error->message, ==, "helper killed by signal 9");
    async_assert_failed(&a, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    /* The sync finish now returns the same. */
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    g_main_loop_unref(a.loop);
}

static void
test_async_cancel(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "ac.save");
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    Async a = { 0 };
    int fd;
    int keep;

    wrap = async_open(path, IOH_WRAP_POLLABLE, NULL, &a, &fd);
    /* A "QEMU" that never closes its copy: the helper would wait forever. */
    keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    g_timeout_add(100, G_SOURCE_FUNC(g_cancellable_cancel), cancel);
    async_run(&a, cancel);
    async_assert_failed(&a, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    close(keep);
    g_main_loop_unref(a.loop);
}

/* Freeing the wrap while its async finish is pending completes it, cancelled. */
static void
test_async_free_pending(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "afp.save");
    IohWrap *wrap;
    Async a = { 0 };
    int fd;
    int keep;
    GPid pid;

    wrap = async_open(path, IOH_WRAP_POLLABLE, NULL, &a, &fd);
    pid = ioh_wrap_get_pid(wrap);
    keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    ioh_wrap_finish_async(wrap, NULL, on_finished, &a);
    ioh_wrap_free(wrap);
    g_assert_cmpint(waitpid(pid, NULL, WNOHANG), ==, -1);
    if (!a.done) {
        g_main_loop_run(a.loop);
    }
    async_assert_failed(&a, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    close(keep);
    g_main_loop_unref(a.loop);
}

static void
test_async_nospawn(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "an.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Async a = { 0 };
    int fd;

    wrap = async_open(path, IOH_WRAP_NONE, NULL, &a, &fd);
    /* The caller closes its fd before the finish: the wrap syncs its own reference
     * (in a worker thread, not in this loop). */
    g_assert_cmpint(write(fd, "stream", 6), ==, 6);
    close(fd);
    async_run(&a, NULL);
    g_assert_true(a.ok);
    g_assert_no_error(a.error);
    /* Idempotent, sync and async. */
    g_assert_true(ioh_wrap_finish(wrap, &error));
    async_run(&a, NULL);
    g_assert_true(a.ok);
    g_main_loop_unref(a.loop);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/async/progress/fadvise", GUINT_TO_POINTER(IOH_WRAP_FADVISE),
                 test_async_progress);
    ioht_dir_add("/libwrap/async/progress/direct", GUINT_TO_POINTER(IOH_WRAP_DIRECT),
                 test_async_progress);
    ioht_dir_add("/libwrap/async/progress/pollable", GUINT_TO_POINTER(IOH_WRAP_POLLABLE),
                 test_async_progress);
    ioht_dir_add("/libwrap/async/killed", NULL, test_async_killed);
    ioht_dir_add("/libwrap/async/cancel", NULL, test_async_cancel);
    ioht_dir_add("/libwrap/async/free-pending", NULL, test_async_free_pending);
    ioht_dir_add("/libwrap/async/nospawn", NULL, test_async_nospawn);
    return g_test_run();
}
