/* test-libwrap-refuses.c - libwrap against the real iohelper binary, through the public
 * API only: what the constructors refuse (/libwrap/errors/..., /libwrap/new/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* ---- misuse --------------------------------------------------------------------- */

static void
expect_refused(int fd, IohWrapFlags flags, const IohWrapParams *params, int code,
               const char *text)
{
    g_autoptr(GError) error = NULL;
    int before = fd;
    IohWrap *wrap = ioh_wrap_new(&fd, "/x.save", flags, params, &error);

    g_assert_null(wrap);
    g_assert_error(error, IOH_WRAP_ERROR, code);
    g_test_message("refused: %s", error->message);
    g_assert_nonnull(strstr(error->message, text));
    g_assert_cmpint(fd, ==, before);
}

static void
test_errors(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "e.save");
    g_autofree char *noexec = tpath(dir, "not-executable");
    IohWrapParams odd = { .offset = 100 };
    int fd = open_save(path);
    int rw = open(path, O_RDWR | O_CLOEXEC);
    int closed = open(path, O_RDONLY | O_CLOEXEC);
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autoptr(GError) error = NULL;

    close(closed);
    expect_refused(fd, 1 << 7, NULL, IOH_WRAP_ERROR_INVALID, "unknown flags");
    expect_refused(fd, IOH_WRAP_DIRECT | IOH_WRAP_FADVISE, NULL, IOH_WRAP_ERROR_INVALID,
                   "cannot be combined");
    expect_refused(fd, IOH_WRAP_DIRECT, &odd, IOH_WRAP_ERROR_INVALID, "multiple of 4096");
    expect_refused(closed, IOH_WRAP_POLLABLE, NULL, IOH_WRAP_ERROR_BADFD,
                   "Bad file descriptor");
    expect_refused(-1, IOH_WRAP_NONE, NULL, IOH_WRAP_ERROR_BADFD, "Bad file descriptor");
    expect_refused(rw, IOH_WRAP_POLLABLE, NULL, IOH_WRAP_ERROR_BADFD, "read-write");
    expect_refused(rw, IOH_WRAP_NONE, NULL, IOH_WRAP_ERROR_BADFD, "read-write");
    g_assert_null(ioh_wrap_new(NULL, path, IOH_WRAP_NONE, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);

    g_setenv("IOHELPER_PATH", "/nonexistent/iohelper", TRUE);
    expect_refused(fd, IOH_WRAP_POLLABLE, NULL, IOH_WRAP_ERROR_NOHELPER,
                   "/nonexistent/iohelper: No such file or directory");
    g_assert_true(g_file_set_contents(noexec, "#!/bin/sh\n", -1, NULL));
    g_chmod(noexec, 0644);
    g_setenv("IOHELPER_PATH", noexec, TRUE);
    expect_refused(fd, IOH_WRAP_FADVISE, NULL, IOH_WRAP_ERROR_NOHELPER, "not an executable");
    g_setenv("IOHELPER_PATH", dir, TRUE);
    expect_refused(fd, IOH_WRAP_FADVISE, NULL, IOH_WRAP_ERROR_NOHELPER, "not an executable");
    /* Unset (or empty): the installed libexec path. */
    g_setenv("IOHELPER_PATH", "", TRUE);
    {
        g_autofree char *installed = g_build_filename(IOHELPER_LIBEXECDIR, "iohelper", NULL);
        if (!g_file_test(installed, G_FILE_TEST_IS_EXECUTABLE)) {
            expect_refused(fd, IOH_WRAP_POLLABLE, NULL, IOH_WRAP_ERROR_NOHELPER, installed);
        } else {
            g_test_message("%s is installed: the default path works", installed);
        }
    }
    if (saved_env) {
        g_setenv("IOHELPER_PATH", saved_env, TRUE);
    } else {
        g_unsetenv("IOHELPER_PATH");
    }

    /* NULL wraps are errors, not crashes. */
    g_assert_false(ioh_wrap_finish(NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_false(ioh_wrap_is_spawned(NULL));
    g_assert_cmpint(ioh_wrap_get_pid(NULL), ==, 0);
    ioh_wrap_free(NULL);
    g_assert_cmpint(waitpid(-1, NULL, WNOHANG), ==, -1);

    close(fd);
    close(rw);
}

/* ---- ioh_wrap_new refuses what the helper would refuse -------------------------- */

/* The modes a refusal must hold in: the no-helper path and each helper mode. */
static const IohWrapFlags all_paths[] = { IOH_WRAP_NONE, IOH_WRAP_POLLABLE, IOH_WRAP_FADVISE,
                                          IOH_WRAP_DIRECT };

/* ioh_wrap_new(&fd, path, ...) fails with @code and a message holding @text, and leaves
 * everything as it was: the fd number, its flags and position, and no child spawned. */
static void
refused(int orig, const char *path, IohWrapFlags flags, const IohWrapParams *params, int code,
        const char *text)
{
    g_autoptr(GError) error = NULL;
    /* A copy: a wrap that accepted wrongly takes its fd over, not the caller's. */
    int fd = fcntl(orig, F_DUPFD_CLOEXEC, 3);
    int before = fd;
    int fl = fcntl(fd, F_GETFL);
    off_t pos = lseek(fd, 0, SEEK_CUR);
    IohWrap *wrap = ioh_wrap_new(&fd, path, flags, params, &error);

    if (wrap) {
        g_test_message("flags 0x%x: accepted, expected \"%s\"", (guint)flags, text);
        ioh_wrap_free(wrap);
    }
    g_assert_null(wrap);
    g_assert_error(error, IOH_WRAP_ERROR, code);
    g_test_message("flags 0x%x refused: %s", (guint)flags, error->message);
    g_assert_nonnull(strstr(error->message, text));
    /* Library words, not the helper's command line. */
    g_assert_null(strstr(error->message, "--"));
    g_assert_null(strstr(error->message, "try"));
    g_assert_cmpint(fd, ==, before);
    g_assert_cmpint(fcntl(fd, F_GETFL), ==, fl);
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, pos);
    g_assert_cmpint(waitpid(-1, NULL, WNOHANG), ==, -1);
    close(fd);
}

static void
refused_everywhere(int fd, const char *path, const IohWrapParams *params, int code,
                   const char *text)
{
    for (guint i = 0; i < G_N_ELEMENTS(all_paths); i++) {
        refused(fd, path, all_paths[i], params, code, text);
    }
}

/* ioh_wrap_new() accepts; the wrap is freed at once (a helper is killed). */
static void
accepted(int *fd, const char *path, IohWrapFlags flags, const IohWrapParams *params)
{
    g_autoptr(GError) error = NULL;
    IohWrap *wrap = ioh_wrap_new(fd, path, flags, params, &error);

    g_assert_no_error(error);
    g_assert_nonnull(wrap);
    ioh_wrap_free(wrap);
}

/* Values no path can honour: a parameter named with its value, in library words. */
static void
test_new_values(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "v.save");
    g_autofree char *img = tpath(dir, "v.img");
    const guint64 huge[] = { (guint64)G_MAXINT64 + 1, G_MAXUINT64 };
    const guint bad_ms[] = { 1, 9, 3600001, G_MAXUINT };
    int fds[2];

    if (!have_direct(dir)) {
        return;
    }
    ioht_write_random_file(img, 64 * 1024, 5);
    fds[0] = open_save(path);
    fds[1] = open_restore(img);
    for (guint d = 0; d < G_N_ELEMENTS(fds); d++) {
        int fd = fds[d];

        refused_everywhere(fd, "", NULL, IOH_WRAP_ERROR_INVALID, "path is empty");
        for (guint i = 0; i < G_N_ELEMENTS(huge); i++) {
            IohWrapParams off = { .offset = huge[i] };
            IohWrapParams len = { .length = huge[i] };
            g_autofree char *want_off = g_strdup_printf(
                "offset %" G_GUINT64_FORMAT " is too large (at most %" G_GINT64_FORMAT ")",
                huge[i], G_MAXINT64);
            g_autofree char *want_len = g_strdup_printf(
                "length %" G_GUINT64_FORMAT " is too large (at most %" G_GINT64_FORMAT ")",
                huge[i], G_MAXINT64);

            refused_everywhere(fd, path, &off, IOH_WRAP_ERROR_INVALID, want_off);
            refused_everywhere(fd, path, &len, IOH_WRAP_ERROR_INVALID, want_len);
        }
        {
            /* Each in range, the sum not: also from the fd's own position. */
            IohWrapParams sum = { .offset = 4096, .length = G_MAXINT64 - 4095 };
            IohWrapParams from_pos = { .length = G_MAXINT64 - 4095 };

            refused_everywhere(fd, path, &sum, IOH_WRAP_ERROR_INVALID,
                               "offset 4096 + length 9223372036854771712 ends past the "
                               "largest file offset 9223372036854775807");
            g_assert_cmpint(lseek(fd, 4096, SEEK_SET), ==, 4096);
            refused_everywhere(fd, path, &from_pos, IOH_WRAP_ERROR_INVALID,
                               "start 4096 + length 9223372036854771712 ends past");
            g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
        }
        for (guint i = 0; i < G_N_ELEMENTS(bad_ms); i++) {
            IohWrapParams p = { .progress_interval_ms = bad_ms[i] };
            g_autofree char *want = g_strdup_printf(
                "progress_interval_ms %u is out of range (10 to 3600000, or 0 for 1000)",
                bad_ms[i]);

            refused_everywhere(fd, path, &p, IOH_WRAP_ERROR_INVALID, want);
        }
    }
    /* The bounds themselves are the helper's: accepted. */
    for (guint i = 0; i < 2; i++) {
        IohWrapParams p = { .progress_interval_ms = i ? 3600000 : 10 };
        accepted(&fds[1], img, IOH_WRAP_POLLABLE, &p);
        fds[1] = open_restore(img);
    }
    close(fds[0]);
    close(fds[1]);
}

/* An fd the helper cannot use as asked: refused with what it is. */
static void
test_new_fd_kinds(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "k.save");
    IohWrapParams at4k = { .offset = 4096 };
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int opath = open(dir, O_PATH | O_CLOEXEC);
    int p[2];

    g_assert_cmpint(d, >=, 0);
    g_assert_cmpint(opath, >=, 0);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    refused_everywhere(d, dir, NULL, IOH_WRAP_ERROR_BADFD, "is a directory");
    refused_everywhere(opath, dir, NULL, IOH_WRAP_ERROR_BADFD, "O_PATH descriptor");
    for (guint end = 0; end < 2; end++) {
        /* A pipe for either direction: fine as it is, but it cannot seek nor bypass a
         * cache (the helper would ignore or refuse the flag). */
        refused(p[end], path, IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_BADFD,
                "IOH_WRAP_DIRECT (O_DIRECT) needs a regular file or block device, and "
                "this is a pipe");
        refused(p[end], path, IOH_WRAP_FADVISE, NULL, IOH_WRAP_ERROR_BADFD,
                "IOH_WRAP_FADVISE needs a regular file or block device, and this is a pipe");
        refused(p[end], path, IOH_WRAP_NONE, &at4k, IOH_WRAP_ERROR_BADFD,
                "offset 4096 needs a regular file or block device, and this is a pipe");
        refused(p[end], path, IOH_WRAP_POLLABLE, &at4k, IOH_WRAP_ERROR_BADFD,
                "offset 4096 needs a regular file or block device, and this is a pipe");
    }
    {
        /* A file system that refuses O_DIRECT (procfs files): known before the helper. */
        int proc = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(proc, >=, 0);
        refused(proc, "/proc/self/status", IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_BADFD,
                "its file system refuses O_DIRECT (IOH_WRAP_DIRECT)");
        close(proc);
    }
    close(d);
    close(opath);
    close(p[0]);
    close(p[1]);
}

/* Where the stream would land or come from: the offset, the fd's position, O_APPEND,
 * the alignment O_DIRECT needs, and a restore's file size. */
static void
test_new_placement(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *img = tpath(dir, "p.img");
    g_autofree char *odd = tpath(dir, "odd.save");
    IohWrapParams past = { .offset = 2 * MIB };
    IohWrapParams longer = { .offset = 4096, .length = MIB };
    IohWrapParams exact = { .offset = 4096, .length = MIB - 4096 };
    IohWrapParams far = { .offset = (guint64)1 << 62 };
    IohWrapParams at4k = { .offset = 4096 };
    int fd, ap;

    if (!have_direct(dir)) {
        return;
    }
    ioht_write_random_file(img, MIB, 9);
    fd = open_restore(img);
    refused_everywhere(fd, img, &past, IOH_WRAP_ERROR_INVALID,
                       "offset 2097152 is past the end of");
    refused_everywhere(fd, img, &longer, IOH_WRAP_ERROR_INVALID,
                       "holds 1048576 bytes, short of offset 4096 + length 1048576");
    g_assert_cmpint(lseek(fd, 2 * MIB, SEEK_SET), ==, 2 * MIB);
    refused_everywhere(fd, img, NULL, IOH_WRAP_ERROR_INVALID,
                       "the fd's position 2097152 is past the end of");
    g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
    /* Up to the last byte, and an empty stream at the very end, are fine. */
    accepted(&fd, img, IOH_WRAP_POLLABLE, &exact);
    fd = open_restore(img);
    past.offset = MIB;
    accepted(&fd, img, IOH_WRAP_POLLABLE, &past);

    /* Past what ext4 (or any file system) can seek to: known now, not at the finish. */
    fd = open_save(odd);
    refused_everywhere(fd, odd, &far, IOH_WRAP_ERROR_BADFD,
                       "cannot seek to offset 4611686018427387904");

    /* O_DIRECT needs an aligned start, wherever the start comes from. */
    g_assert_cmpint(pwrite(fd, "x", 1, 4999), ==, 1);
    g_assert_cmpint(lseek(fd, 5000, SEEK_SET), ==, 5000);
    refused(fd, odd, IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_INVALID,
            "would start at byte 5000 of");
    refused(fd, odd, IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_INVALID, "(the fd's position)");
    close(fd);

    /* O_APPEND: a save lands at the end, whatever the offset or position says. */
    ap = open(odd, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(ap, >=, 0);
    for (guint i = 0; i < G_N_ELEMENTS(all_paths); i++) {
        refused(ap, odd, all_paths[i], &at4k, IOH_WRAP_ERROR_BADFD,
                "has O_APPEND: a save lands at the end of the file, not at offset 4096");
    }
    refused(ap, odd, IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_INVALID,
            "would start at byte 5000 of");
    refused(ap, odd, IOH_WRAP_DIRECT, NULL, IOH_WRAP_ERROR_INVALID, "(its end: O_APPEND)");
    g_assert_cmpint(ftruncate(ap, 8192), ==, 0);
    accepted(&ap, odd, IOH_WRAP_DIRECT, NULL);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/errors/misuse", NULL, test_errors);
    ioht_dir_add("/libwrap/new/refuses/values", NULL, test_new_values);
    ioht_dir_add("/libwrap/new/refuses/fd-kinds", NULL, test_new_fd_kinds);
    ioht_dir_add("/libwrap/new/refuses/placement", NULL, test_new_placement);
    return g_test_run();
}
