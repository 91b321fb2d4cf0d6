/* test-libwrap-nospawn.c - libwrap against the real iohelper binary, through the public
 * API only: the path without a helper (/libwrap/nospawn/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* ---- no helper ------------------------------------------------------------------ */

static void
test_nospawn_untouched(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "plain.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_save(path);
    int orig = fd, fl;
    guint64 w = 1, s = 1;

    g_assert_cmpint(write(fd, "header", 6), ==, 6);
    fl = fcntl(fd, F_GETFL);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_NONE, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(wrap);
    g_assert_false(ioh_wrap_is_spawned(wrap));
    g_assert_cmpint(ioh_wrap_get_pid(wrap), ==, 0);
    g_assert_cmpint(fd, ==, orig);
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, 6);
    g_assert_cmpint(fcntl(fd, F_GETFL), ==, fl);
    /* No child of ours exists. */
    g_assert_cmpint(waitpid(-1, NULL, WNOHANG), ==, -1);
    g_assert_cmpint(errno, ==, ECHILD);
    ioh_wrap_get_progress(wrap, &w, &s);
    g_assert_cmpuint(w, ==, 0);
    g_assert_cmpuint(s, ==, 0);

    g_assert_cmpint(write(fd, "stream", 6), ==, 6);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_finish(wrap, &error));    /* idempotent */
    g_assert_true(fd_is_open(fd));                     /* still the caller's */
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, 12);
    g_clear_pointer(&wrap, ioh_wrap_free);
    g_assert_true(fd_is_open(fd));
    close(fd);
}

static void
test_nospawn_restore(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "plain.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .offset = 4096 };
    int fd, orig;

    ioht_write_random_file(path, 8192, 1);
    fd = orig = open_restore(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_NONE, &params, &error);
    g_assert_no_error(error);
    g_assert_false(ioh_wrap_is_spawned(wrap));
    g_assert_cmpint(fd, ==, orig);
    /* An explicit offset places the stream on this path too. */
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, 4096);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    close(fd);
}

/* An fd opened O_DIRECT cannot take QEMU's unaligned writes: it always gets a helper. */
static void
test_odirect_fd(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = tpath(dir, "od.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd;

    if (!have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, 1 * MIB + 3, 12);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_null(ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_NONE, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_true(ioht_files_equal(src, path));
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/nospawn/fd-untouched", NULL, test_nospawn_untouched);
    ioht_dir_add("/libwrap/nospawn/restore-offset", NULL, test_nospawn_restore);
    ioht_dir_add("/libwrap/nospawn/odirect-fd-gets-helper", NULL, test_odirect_fd);
    return g_test_run();
}
