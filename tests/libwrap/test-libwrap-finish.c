/* test-libwrap-finish.c - libwrap against the real iohelper binary, through the public API
 * only: finish and free (/libwrap/finish/..., /libwrap/free/..., /libwrap/concurrent/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* ---- finish_finish checks its wrap ------------------------------------------------ */

static void
on_result(GObject *source, GAsyncResult *res, gpointer data)
{
    (void)source;
    *(GAsyncResult **)data = g_object_ref(res);
}

static void
test_finish_other_wrap(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *pa = tpath(dir, "a.save");
    g_autofree char *pb = tpath(dir, "b.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) a = NULL;
    g_autoptr(IohWrap) b = NULL;
    g_autoptr(GAsyncResult) res = NULL;
    int fa = open_save(pa), fb = open_save(pb);

    a = ioh_wrap_new(&fa, pa, IOH_WRAP_NONE, NULL, &error);
    g_assert_no_error(error);
    b = ioh_wrap_new(&fb, pb, IOH_WRAP_NONE, NULL, &error);
    g_assert_no_error(error);
    ioh_wrap_finish_async(a, NULL, on_result, &res);
    while (!res) {
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_false(ioh_wrap_finish_finish(b, res, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "belongs to another wrap"));
    g_clear_error(&error);
    g_assert_true(ioh_wrap_finish_finish(a, res, &error));
    g_assert_no_error(error);
    close(fa);
    close(fb);
}

/* Freeing a wrap whose helper still runs kills and reaps it. */
static void
test_free_running(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "f.save");
    g_autoptr(GError) error = NULL;
    IohWrap *wrap;
    int fd = open_save(path);
    GPid pid;

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    pid = ioh_wrap_get_pid(wrap);
    g_assert_cmpint(write(fd, "abc", 3), ==, 3);
    ioh_wrap_free(wrap);
    g_assert_false(fd_is_open(fd));
    g_assert_cmpint(waitpid(pid, NULL, WNOHANG), ==, -1);    /* reaped, not a zombie */
    g_assert_cmpint(errno, ==, ECHILD);
    g_assert_cmpint(kill(pid, 0), ==, -1);
}

/* A caller that closed its end itself, and got the number back for another file: the
 * finish must close only the pipe, never what now has that number. */
static void
test_finish_spares_reused_fd(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "r.save");
    g_autofree char *other = tpath(dir, "other");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_save(path);
    int pipe_no, reused;

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpint(write(fd, "data", 4), ==, 4);
    pipe_no = fd;
    close(fd);
    reused = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    g_assert_cmpint(reused, >=, 0);
    if (reused != pipe_no) {
        g_assert_cmpint(dup3(reused, pipe_no, O_CLOEXEC), ==, pipe_no);
        close(reused);
        reused = pipe_no;
    }
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_true(fd_is_open(reused));
    close(reused);
}

static gpointer
stream_thread(gpointer data)
{
    Stream *s = data;

    if (s->restore) {
        s->got = ioht_drain_to_file(s->fd, s->dst);
        s->ok = TRUE;
    } else {
        s->ok = ioht_feed_file(s->src, s->fd);
        close(s->fd);
    }
    return NULL;
}

static void
test_concurrent(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    enum { N = 8 };
    const char *dir = fx->dir;
    const guint64 size = 8 * MIB + 123;
    Stream st[N];
    IohWrap *wraps[N];
    GThread *threads[N];

    /* Four saves and four restores, all eight helpers alive at once. */
    for (int i = 0; i < N; i++) {
        g_autoptr(GError) error = NULL;
        IohWrapFlags flags = (i % 3 == 0) ? IOH_WRAP_FADVISE : IOH_WRAP_POLLABLE;

        st[i].restore = i % 2 == 1;
        st[i].src = g_strdup_printf("%s/src%d", dir, i);
        st[i].dst = g_strdup_printf("%s/dst%d", dir, i);
        ioht_write_random_file(st[i].src, size + (guint64)i, (guint32)i + 100);
        st[i].fd = st[i].restore ? open_restore(st[i].src) : open_save(st[i].dst);
        wraps[i] = ioh_wrap_new(&st[i].fd, st[i].restore ? st[i].src : st[i].dst, flags,
                                NULL, &error);
        g_assert_no_error(error);
        g_assert_true(ioh_wrap_is_spawned(wraps[i]));
    }
    for (int i = 0; i < N; i++) {
        g_assert_cmpint(kill(ioh_wrap_get_pid(wraps[i]), 0), ==, 0);
        threads[i] = g_thread_new("stream", stream_thread, &st[i]);
    }
    for (int i = 0; i < N; i++) {
        g_autoptr(GError) error = NULL;

        g_thread_join(threads[i]);
        g_assert_true(st[i].ok);
        g_assert_true(ioh_wrap_finish(wraps[i], &error));
        g_assert_no_error(error);
        if (st[i].restore) {
            g_assert_cmpuint(st[i].got, ==, size + (guint64)i);
        }
        g_assert_true(ioht_files_equal(st[i].src, st[i].dst));
        ioh_wrap_free(wraps[i]);
        g_free(st[i].src);
        g_free(st[i].dst);
    }
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/finish/other-wrap", NULL, test_finish_other_wrap);
    ioht_dir_add("/libwrap/free/running-helper", NULL, test_free_running);
    ioht_dir_add("/libwrap/finish/spares-reused-fd", NULL, test_finish_spares_reused_fd);
    ioht_dir_add("/libwrap/concurrent/8-wraps", NULL, test_concurrent);
    return g_test_run();
}
