/* test-libwrap.c - libwrap against the real iohelper binary
 *
 * Every test drives the real helper ($IOHELPER_PATH) through the public API only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "iohwrap.h"
#include "ioh-error.h"
#include "ioh-test.h"

#define MIB (1024 * 1024)

/* ---- helpers ------------------------------------------------------------------- */

static char *
tpath(const char *dir, const char *name)
{
    return g_build_filename(dir, name, NULL);
}

static int
open_save(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static int
open_restore(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static gboolean
fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* Saves @src into @dst through a wrap with @flags, then checks the result. */
static void
save_through(const char *src, const char *dst, IohWrapFlags flags,
             const IohWrapParams *params)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_save(dst);

    wrap = ioh_wrap_new(&fd, dst, flags, params, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_false(fd_is_open(fd));    /* finish closed our end */
}

static guint64
restore_through(const char *saved, const char *out, IohWrapFlags flags,
                const IohWrapParams *params)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_restore(saved);
    guint64 n;

    wrap = ioh_wrap_new(&fd, saved, flags, params, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    n = ioht_drain_to_file(fd, out);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    return n;
}

static gboolean
have_direct(const char *dir)
{
    if (!ioht_dir_supports_direct(dir)) {
        g_test_skip("the work folder's file system refuses O_DIRECT");
        return FALSE;
    }
    return TRUE;
}

static gint
cmp_int(gconstpointer a, gconstpointer b)
{
    return GPOINTER_TO_INT(a) - GPOINTER_TO_INT(b);
}

/* The fd numbers open in process @pid, sorted. */
static GList *
list_fds(GPid pid)
{
    g_autofree char *dirname = g_strdup_printf("/proc/%d/fd", (int)pid);
    g_autoptr(GDir) dir = g_dir_open(dirname, 0, NULL);
    GList *fds = NULL;
    const char *name;

    g_assert_nonnull(dir);
    while ((name = g_dir_read_name(dir))) {
        fds = g_list_prepend(fds, GINT_TO_POINTER(atoi(name)));
    }
    return g_list_sort(fds, cmp_int);
}

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

/* ---- the progress callback's data ------------------------------------------------ */

typedef struct {
    guint notified;
    gboolean inside;          /* the callback is running */
    gboolean notified_inside; /* the notify ran while it did */
    IohWrap *wrap;
    gpointer other;
} Held;

static void
held_notify(gpointer data)
{
    Held *h = data;

    h->notified++;
    h->notified_inside |= h->inside;
}

static void
held_progress(guint64 written, guint64 synced, gpointer data)
{
    Held *h = data;

    (void)written;
    (void)synced;
    h->inside = TRUE;
    /* Replace this very callback from inside it: the old data must outlive the call. */
    if (h->other) {
        ioh_wrap_set_progress_func(h->wrap, NULL, h->other, held_notify);
        h->other = NULL;
    }
    h->inside = FALSE;
}

/* NULL wrap: a programmer error, reported as GLib does; the data is still given back. */
static void
test_progress_null_wrap(void)
{
    Held h = { 0 };

    g_test_expect_message("iohwrap", G_LOG_LEVEL_CRITICAL, "*wrap != NULL*");
    ioh_wrap_set_progress_func(NULL, held_progress, &h, held_notify);
    g_test_assert_expected_messages();
    g_assert_cmpuint(h.notified, ==, 1);
}

/* Every path that drops the data calls its notify once: replacing, clearing, freeing. */
static void
test_progress_notify(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "n.save");
    Held a = { 0 }, b = { 0 }, c = { 0 };

    for (guint spawn = 0; spawn < 2; spawn++) {
        int fd = open_save(path);
        g_autoptr(GError) error = NULL;
        IohWrap *wrap = ioh_wrap_new(&fd, path, spawn ? IOH_WRAP_POLLABLE : IOH_WRAP_NONE,
                                     NULL, &error);

        g_assert_no_error(error);
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        memset(&c, 0, sizeof(c));
        ioh_wrap_set_progress_func(wrap, held_progress, &a, held_notify);
        ioh_wrap_set_progress_func(wrap, held_progress, &b, held_notify);
        g_assert_cmpuint(a.notified, ==, 1);
        g_assert_cmpuint(b.notified, ==, 0);
        /* No callback, but data to give back: held until replaced or freed. */
        ioh_wrap_set_progress_func(wrap, NULL, &c, held_notify);
        g_assert_cmpuint(b.notified, ==, 1);
        g_assert_cmpuint(c.notified, ==, 0);
        if (spawn) {
            close(fd);
            g_assert_true(ioh_wrap_finish(wrap, &error));
            g_assert_no_error(error);
        } else {
            close(fd);
        }
        ioh_wrap_free(wrap);
        g_assert_cmpuint(a.notified, ==, 1);
        g_assert_cmpuint(b.notified, ==, 1);
        g_assert_cmpuint(c.notified, ==, 1);
    }
}

/* Replacing the callback from inside it: the old data is given back only once the call
 * has returned (as GLib's sources do), never under the running callback. */
static void
test_progress_replace_inside(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = tpath(dir, "r.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Held h = { 0 }, other = { 0 };
    int fd = open_save(path);

    ioht_write_random_file(src, MIB, 21);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    h.wrap = wrap;
    h.other = &other;
    ioh_wrap_set_progress_func(wrap, held_progress, &h, held_notify);
    g_assert_true(ioht_feed_file(src, fd));
    /* This thread owns the default context: the final figures are delivered here. */
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_null(h.other);                 /* the callback ran and replaced itself */
    g_assert_cmpuint(h.notified, ==, 1);
    g_assert_false(h.notified_inside);
    g_clear_pointer(&wrap, ioh_wrap_free);
    g_assert_cmpuint(other.notified, ==, 1);
}

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

/* ---- round trips ---------------------------------------------------------------- */

typedef struct {
    IohWrapFlags flags;
    guint64 size;
} RoundTrip;

static void
test_roundtrip(IohtDir *fx, gconstpointer data)
{
    const RoundTrip *rt = data;
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "vm.save");
    g_autofree char *back = tpath(dir, "restored");
    struct stat st;

    if ((rt->flags & IOH_WRAP_DIRECT) && !have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, rt->size, (guint32)rt->size);
    save_through(src, saved, rt->flags, NULL);
    g_assert_cmpint(g_stat(saved, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, rt->size);
    g_assert_true(ioht_files_equal(src, saved));
    g_assert_cmpuint(restore_through(saved, back, rt->flags, NULL), ==, rt->size);
    g_assert_true(ioht_files_equal(src, back));
}

/* A stream after a 4096-byte header, restored with an exact length from a longer file. */
static void
test_offset_length(IohtDir *fx, gconstpointer data)
{
    IohWrapFlags flags = GPOINTER_TO_UINT(data);
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "vm.save");
    g_autofree char *back = tpath(dir, "restored");
    g_autofree char *contents = NULL;
    const guint64 size = 2 * MIB + 5;
    IohWrapParams params = { .offset = 4096 };
    gsize len;
    int fd;

    if ((flags & IOH_WRAP_DIRECT) && !have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, size, 7);
    fd = open_save(saved);
    g_assert_cmpint(pwrite(fd, "HEADER", 6, 0), ==, 6);
    close(fd);
    /* The save keeps the header and writes the stream at 4096. */
    fd = open(saved, O_WRONLY | O_CLOEXEC);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, flags, &params, &error);
        g_assert_no_error(error);
        g_assert_true(ioht_feed_file(src, fd));
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
    }
    /* Trailing garbage after the stream: --length must stop before it. */
    fd = open(saved, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(write(fd, "TRAILER", 7), ==, 7);
    close(fd);
    g_assert_true(g_file_get_contents(saved, &contents, &len, NULL));
    g_assert_cmpuint(len, ==, 4096 + size + 7);
    g_assert_cmpint(memcmp(contents, "HEADER", 6), ==, 0);

    params.length = size;
    g_assert_cmpuint(restore_through(saved, back, flags, &params), ==, size);
    g_assert_true(ioht_files_equal(src, back));
}

/* ---- the pipe and the child's fds ------------------------------------------------ */

static guint
expected_pipe_size(void)
{
    g_autofree char *text = NULL;
    guint64 max = MIB;

    if (g_file_get_contents("/proc/sys/fs/pipe-max-size", &text, NULL, NULL)) {
        max = g_ascii_strtoull(text, NULL, 10);
    }
    return (guint)MIN(max, (guint64)MIB);
}

static void
test_pipe_size(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "p.save");
    IohWrapFlags modes[] = { IOH_WRAP_POLLABLE, IOH_WRAP_FADVISE };

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        for (int restore = 0; restore <= 1; restore++) {
            g_autoptr(GError) error = NULL;
            g_autoptr(IohWrap) wrap = NULL;
            int fd = restore ? open_restore(path) : open_save(path);
            int fl;

            wrap = ioh_wrap_new(&fd, path, modes[i], NULL, &error);
            g_assert_no_error(error);
            g_assert_cmpint(fcntl(fd, F_GETPIPE_SZ), ==, (int)expected_pipe_size());
            fl = fcntl(fd, F_GETFL);
            g_assert_cmpint(fl & O_ACCMODE, ==, restore ? O_RDONLY : O_WRONLY);
            g_assert_cmpint(fl & O_NONBLOCK, ==, 0);
            g_assert_cmpint(fcntl(fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
            if (restore) {
                char c;
                g_assert_cmpint(read(fd, &c, 1), ==, 0);    /* empty file: EOF */
            }
            g_assert_true(ioh_wrap_finish(wrap, &error));
            g_assert_no_error(error);
        }
    }
}

static char *
fd_target(GPid pid, int fd)
{
    g_autofree char *link = g_strdup_printf("/proc/%d/fd/%d", (int)pid, fd);

    return g_file_read_link(link, NULL);
}

/* TRUE when fd @n of process @pid has O_CLOEXEC (from /proc/PID/fdinfo/N). */
static gboolean
fd_has_cloexec(GPid pid, int n)
{
    g_autofree char *p = g_strdup_printf("/proc/%d/fdinfo/%d", (int)pid, n);
    g_autofree char *text = NULL;
    const char *f;

    g_assert_true(g_file_get_contents(p, &text, NULL, NULL));
    f = strstr(text, "flags:");
    g_assert_nonnull(f);
    return (g_ascii_strtoull(f + strlen("flags:"), NULL, 8) & O_CLOEXEC) != 0;
}

/* Waits until the helper of @wrap has started copying, so that what it opened while
 * starting (its runtime, a sanitizer's) is settled: a restore has put bytes into @fd;
 * a save has sent its first progress line for the first MiB written into @fd. */
static void
wait_helper_copying(IohWrap *wrap, int fd, gboolean restore)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    g_autofree char *zeros = g_malloc0(MIB);
    IohtPumpOpts first = { .data = zeros, .len = MIB };
    guint64 written = 0;

    if (restore) {
        g_assert_cmpint(poll(&pfd, 1, 30000), ==, 1);
        return;
    }
    /* a whole buffer: the helper reports once it has stored one */
    g_assert_true(ioht_feed(fd, &first));
    while (written == 0 && g_get_monotonic_time() < end) {
        g_usleep(5000);
        ioh_wrap_get_progress(wrap, &written, NULL);
    }
    g_assert_cmpuint(written, >, 0);
}

/* The helper @pid inherited exactly fds 0 to 3: the fds without O_CLOEXEC. */
static void
assert_inherited_0_to_3(GPid pid)
{
    g_autoptr(GList) fds = list_fds(pid);
    GList *inherited = NULL;

    for (GList *l = fds; l; l = l->next) {
        int n = GPOINTER_TO_INT(l->data);
        g_autofree char *t = fd_target(pid, n);
        gboolean cloexec = fd_has_cloexec(pid, n);
        g_test_message("helper %d fd %d -> %s%s", (int)pid, n, t,
                       cloexec ? " (its own, O_CLOEXEC)" : " (inherited)");
        if (!cloexec) {
            inherited = g_list_append(inherited, l->data);
        }
    }
    g_assert_cmpuint(g_list_length(inherited), ==, 4);
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(GPOINTER_TO_INT(g_list_nth_data(inherited, (guint)i)), ==, i);
    }
    g_list_free(inherited);
}

static void
test_no_fd_leak(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "leak.save");
    g_autofree char *real = NULL;
    int decoys[3];

    real = realpath(dir, NULL);
    /* Inheritable fds (no O_CLOEXEC), as a careless daemon has: none may reach the child. */
    decoys[0] = open("/dev/null", O_RDONLY);
    decoys[1] = open(path, O_WRONLY | O_CREAT, 0600);
    decoys[2] = dup(2);
    for (int restore = 0; restore <= 1; restore++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = NULL;
        g_autofree char *file_link = NULL;
        g_autofree char *pipe_link = NULL;
        g_autofree char *want = g_build_filename(real, "leak.save", NULL);
        int file_no = restore ? 0 : 1;
        GPid pid;
        int fd;

        if (restore) {
            /* More than the pipe holds: the helper blocks writing while we look. */
            ioht_write_random_file(path, 4 * MIB, 5);
        }
        fd = restore ? open_restore(path) : open_save(path);

        wrap = ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error);
        g_assert_no_error(error);
        pid = ioh_wrap_get_pid(wrap);
        g_assert_cmpint(pid, >, 0);
        wait_helper_copying(wrap, fd, restore);
        /* The helper waits on its pipe: it is alive while we look (and past its exec and
         * its start: it copies already). What it opened itself (its reader thread's
         * eventfd, ...) carries O_CLOEXEC, as every fd of ours does; an fd that crossed
         * the exec cannot. So the fds without O_CLOEXEC are exactly what it inherited. */
        assert_inherited_0_to_3(pid);
        file_link = fd_target(pid, file_no);
        pipe_link = fd_target(pid, 1 - file_no);
        g_test_message("helper %d: fd %d -> %s, fd %d -> %s", (int)pid, file_no, file_link,
                       1 - file_no, pipe_link);
        g_assert_cmpstr(file_link, ==, want);
        g_assert_true(g_str_has_prefix(pipe_link, "pipe:"));
        {
            g_autofree char *l2 = fd_target(pid, 2);
            g_autofree char *l3 = fd_target(pid, 3);
            g_assert_true(g_str_has_prefix(l2, "pipe:"));
            g_assert_true(g_str_has_prefix(l3, "pipe:"));
        }
        /* The caller's end is the other end of the helper's pipe. */
        {
            g_autofree char *mine = g_strdup_printf("/proc/self/fd/%d", fd);
            g_autofree char *mine_link = g_file_read_link(mine, NULL);
            g_assert_cmpstr(mine_link, ==, pipe_link);
        }
        if (restore) {
            g_autofree char *sink = tpath(dir, "sink");
            g_assert_cmpuint(ioht_drain_to_file(fd, sink), ==, 4 * MIB);
        }
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
    }
    for (guint i = 0; i < G_N_ELEMENTS(decoys); i++) {
        close(decoys[i]);
    }
}

/* ---- failures -------------------------------------------------------------------- */

static gboolean
run_cmd(const char *cmd, char **ret_err)
{
    g_auto(GStrv) argv = NULL;
    int status = -1;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, ret_err,
                      &status, NULL)) {
        return FALSE;
    }
    return g_spawn_check_wait_status(status, NULL);
}

static void
test_fail_enospc(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *mnt = tpath(dir, "small");
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = NULL;
    g_autofree char *cmd = NULL;
    g_autofree char *err = NULL;
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd;

    if (geteuid() != 0) {
        g_test_skip("mounting a 1 MiB tmpfs needs root");
        return;
    }
    g_assert_cmpint(g_mkdir(mnt, 0700), ==, 0);
    /* In a mount namespace of this test process's own when the kernel lets us: then a
     * failing assertion cannot leave the tmpfs mounted on the shared machine. */
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
        g_test_message("private mount namespace");
    }
    cmd = g_strdup_printf("mount -t tmpfs -o size=1m tmpfs '%s'", mnt);
    if (!run_cmd(cmd, &err)) {
        g_test_skip_printf("cannot mount a tmpfs here: %s", err ? g_strstrip(err) : "?");
        return;
    }
    path = tpath(mnt, "full.save");
    ioht_write_random_file(src, 3 * MIB, 3);
    fd = open_save(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    /* The helper dies after 1 MiB; what it had not read yet may still fit the pipe,
     * so the writer sees EPIPE or not: the finish tells. */
    ioht_feed_file(src, fd);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    want = g_strdup_printf("write %s: No space left on device", path);
    g_assert_cmpstr(error->message, ==, want);
    /* From the helper's final error line, not from its stderr. */
    g_assert_cmpint(ioh_error_get_errno(error), ==, ENOSPC);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "write");
    g_assert_cmpstr(ioh_error_get_path(error), ==, path);
    /* Idempotent: the same failure again. */
    g_clear_error(&error);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_cmpstr(error->message, ==, want);
    g_clear_pointer(&wrap, ioh_wrap_free);

    g_free(cmd);
    cmd = g_strdup_printf("umount '%s'", mnt);
    g_assert_true(run_cmd(cmd, NULL));
}

/* Restores @dir/@name (1 MiB) through a pipe with a length of 2 MiB: a stream that ends
 * early, which only the copy can find (a file shorter than offset + length is refused by
 * ioh_wrap_new() already). Returns the finish's error. */
static GError *
short_restore_error(const char *dir, const char *name)
{
    g_autofree char *src = tpath(dir, name);
    g_autofree char *back = tpath(dir, "back");
    g_autoptr(IohWrap) wrap = NULL;
    GError *error = NULL;
    IohWrapParams params = { .length = 2 * MIB };
    IohtPumpOpts feed = { .path = src };
    IohtPump *feeder;
    int p[2];
    int fd;

    ioht_write_random_file(src, MIB, 4);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    fd = p[0];
    wrap = ioh_wrap_new(&fd, src, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    feeder = ioht_feed_start(p[1], &feed);
    g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, MIB);
    ioht_pump_join(feeder, NULL);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    return error;
}

static void
test_fail_short_restore(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autoptr(GError) error = short_restore_error(dir, "short.save");
    g_autofree char *src = tpath(dir, "short.save");

    g_assert_true(g_str_has_prefix(error->message, "read "));
    g_assert_nonnull(strstr(error->message, "stream ended after 1048576 of 2097152 bytes"));
    g_assert_null(strstr(error->message, "iohelper:"));
    g_assert_cmpint(ioh_error_get_errno(error), ==, EIO);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "read");
    g_assert_cmpstr(ioh_error_get_path(error), ==, src);
}

/* A helper that says a lot before its last line (40 KB: many reads, short of the 64 KiB
 * the stderr pipe holds while nobody reads it): the whole stderr is read, and the last
 * "iohelper:" line is the message. */
static void
test_fail_long_stderr(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *wrapper = tpath(dir, "chatty-iohelper");
    g_autofree char *script = NULL;
    g_autofree char *path = tpath(dir, "chatty.save");
    g_autofree char *back = tpath(dir, "back");
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .length = 8192 };
    int p[2];
    int fd;

    script = g_strdup_printf("#!/bin/sh\n"
                             "i=0; while [ $i -lt 700 ]; do\n"
                             "  echo \"warning: line $i of chatter, padded to be long enough\" >&2\n"
                             "  i=$((i + 1)); done\n"
                             "echo 'iohelper: an earlier line that is not the last' >&2\n"
                             "exec '%s' \"$@\"\n", saved_env);
    g_assert_true(g_file_set_contents(wrapper, script, -1, NULL));
    g_assert_cmpint(g_chmod(wrapper, 0755), ==, 0);
    g_setenv("IOHELPER_PATH", wrapper, TRUE);
    /* A stream short of its length, through a pipe (a short file is refused by new). */
    ioht_write_random_file(path, 4096, 14);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_true(ioht_feed_file(path, p[1]));
    close(p[1]);
    fd = p[0];
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, 4096);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    g_assert_true(g_str_has_prefix(error->message, "read "));
    g_assert_nonnull(strstr(error->message, "stream ended after 4096 of 8192 bytes"));
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
}

/* A path holding '"', a newline and control characters, through the status fd: the
 * GError's path field is the path byte for byte, its message one line ('?' for the
 * control characters, as the helper prints it on stderr). */
static void
test_fail_odd_path(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *name = "od\"d\npa\x01th\x1b";
    const char *dir = fx->dir;
    g_autoptr(GError) error = short_restore_error(dir, name);
    g_autofree char *src = tpath(dir, name);
    g_autofree char *shown = g_strdelimit(g_strdup(src), "\n\x01\x1b", '?');
    g_autofree char *want = g_strdup_printf("read %s: stream ended after 1048576 of "
                                            "2097152 bytes", shown);

    g_assert_cmpstr(ioh_error_get_path(error), ==, src);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "read");
    g_assert_cmpint(ioh_error_get_errno(error), ==, EIO);
    g_assert_cmpstr(error->message, ==, want);
}

/* A typo in the helper's config file (memory-budget=64MB) fails ioh_wrap_new() itself,
 * with the helper's error line naming the file and the cause (not "exited with status 2
 * without a final status line" at the finish, once QEMU had the pipe): the fd is the
 * caller's still, untouched, for a file and for a URI alike. */
static void
test_fail_config_typo(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *conf = tpath(fx->dir, "typo.conf");
    g_autofree char *path = tpath(fx->dir, "typo.save");
    g_autofree char *uri = g_strdup_printf("nbd+unix:///x?socket=%s/none.sock", fx->dir);
    g_autofree char *saved_conf = g_strdup(g_getenv("IOHELPER_CONF"));
    g_autoptr(GError) error = NULL;
    int fd = open_save(path), orig = fd, ufd = -1;

    g_assert_true(g_file_set_contents(conf, "[iohelper]\nmemory-budget=64MB\n", -1, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    g_assert_null(ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    ioht_assert_contains(error->message, conf);
    ioht_assert_contains(error->message, "64MB");
    g_assert_cmpstr(ioh_error_get_path(error), ==, conf);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "config");
    g_assert_cmpint(fd, ==, orig);
    g_assert_cmpint(fcntl(fd, F_GETFL) & O_ACCMODE, ==, O_WRONLY);
    g_assert_cmpint(write(fd, "x", 1), ==, 1);    /* still the caller's file */
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, 1);
    close(fd);
    g_clear_error(&error);
    g_assert_null(ioh_wrap_new_uri(uri, TRUE, &ufd, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    ioht_assert_contains(error->message, conf);
    g_assert_cmpint(ufd, ==, -1);
    if (saved_conf) {
        g_setenv("IOHELPER_CONF", saved_conf, TRUE);
    } else {
        g_unsetenv("IOHELPER_CONF");
    }
}

/* Write @script as an executable helper in @dir and point IOHELPER_PATH at it. */
static char *
fake_helper(const char *dir, const char *script)
{
    char *path = tpath(dir, "fake-iohelper");

    g_assert_true(g_file_set_contents(path, script, -1, NULL));
    g_assert_cmpint(g_chmod(path, 0755), ==, 0);
    g_setenv("IOHELPER_PATH", path, TRUE);
    return path;
}

/* A helper that exits 1 without a final line: the error names the helper and its exit
 * status, whatever its stderr says (nobody parses it: a line that looks like the
 * helper's own is not taken for the cause). */
static void
test_fail_no_final_line(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autofree char *path = tpath(dir, "nofinal.save");
    g_autofree char *helper = fake_helper(dir,
        "#!/bin/sh\n"
        "echo '{\"v\":1,\"minor\":0,\"type\":\"progress\",\"written\":4096,"
        "\"stored\":4096,\"synced\":0,\"seconds\":0.1,\"done\":false}' >&3\n"
        "cat >/dev/null\n"
        "echo \"iohelper: failure with $4: write $4: No space left on device\" >&2\n"
        "exit 1\n");
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    guint64 w = 0;
    int fd = open_save(path);

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
    g_assert_no_error(error);
    g_assert_cmpint(write(fd, "x", 1), ==, 1);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    want = g_strdup_printf("helper %s for %s exited with status 1 without a final status "
                           "line", helper, path);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpint(ioh_error_get_errno(error), ==, 0);
    g_assert_null(ioh_error_get_path(error));
    /* Its progress line was read all the same. */
    ioh_wrap_get_progress(wrap, &w, NULL);
    g_assert_cmpuint(w, ==, 4096);
}

/* The helper killed mid-copy, after its progress lines and before its final line:
 * KILLED with the signal, and no error invented from anything else. */
static void
test_fail_killed(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "killed.save");
    g_autofree char *chunk = g_malloc0(MIB);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .progress_interval_ms = 10 };
    guint64 w = 0;
    int fd = open_save(path);

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, &params, &error);
    g_assert_no_error(error);
    /* Mid-copy: some bytes are through the helper before it dies. */
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(write(fd, chunk, MIB), ==, MIB);
    }
    /* until a progress line says a MiB went through: the helper is mid-protocol */
    for (int i = 0; i < 500 && w < MIB; i++) {
        g_usleep(10000);
        ioh_wrap_get_progress(wrap, &w, NULL);
    }
    g_assert_cmpuint(w, >=, MIB);
    g_assert_cmpint(kill(ioh_wrap_get_pid(wrap), SIGKILL), ==, 0);
    while (write(fd, chunk, MIB) > 0) {
    }
    g_assert_cmpint(errno, ==, EPIPE);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    g_assert_cmpstr(error->message, ==, "helper killed by signal 9");
    g_assert_cmpint(ioh_error_get_errno(error), ==, 0);
    ioh_wrap_get_progress(wrap, &w, NULL);
    g_test_message("progress at death: %" G_GUINT64_FORMAT, w);
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

/* A helper whose status lines never arrive (here: sent to /dev/null by a wrapper, as
 * when a caller never drained a full status pipe): the final figures still equal the
 * stream, taken from the file position the helper left. */
static void
test_progress_without_status(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *wrapper = tpath(dir, "quiet-iohelper");
    g_autofree char *script = NULL;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "q.save");
    g_autofree char *back = tpath(dir, "back");
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    const guint64 size = 3 * MIB + 1;
    IohWrapParams params = { .offset = 8192 };
    guint64 w, s;
    int fd;

    script = g_strdup_printf("#!/bin/sh\nexec '%s' \"$@\" 3>/dev/null\n", saved_env);
    g_assert_true(g_file_set_contents(wrapper, script, -1, NULL));
    g_assert_cmpint(g_chmod(wrapper, 0755), ==, 0);
    g_setenv("IOHELPER_PATH", wrapper, TRUE);
    ioht_write_random_file(src, size, 13);

    fd = open_save(saved);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, IOH_WRAP_FADVISE, &params, &error);
        g_assert_no_error(error);
        g_assert_true(ioht_feed_file(src, fd));
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, ==, size);
        g_assert_cmpuint(s, ==, size);
    }
    params.length = size - 100;
    fd = open_restore(saved);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, IOH_WRAP_POLLABLE, &params, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, size - 100);
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, ==, size - 100);
        g_assert_cmpuint(s, ==, size - 100);
    }
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
}

/* ---- many at once ----------------------------------------------------------------- */

typedef struct {
    char *src, *dst;
    int fd;
    gboolean restore;
    guint64 got;
    gboolean ok;
} Stream;

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

/* ---- main loop: async finish and progress ------------------------------------------ */

typedef struct {
    GMainLoop *loop;
    IohWrap *wrap;
    GArray *written;
    GArray *synced;
    gboolean done;
    gboolean ok;
    GError *error;
    Stream stream;
} Async;

static void
on_progress(guint64 written, guint64 synced, gpointer data)
{
    Async *a = data;

    g_array_append_val(a->written, written);
    g_array_append_val(a->synced, synced);
}

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

static void
check_progress(Async *a, guint64 size, gboolean synced_too)
{
    g_test_message("%u progress calls", a->written->len);
    g_assert_cmpuint(a->written->len, >=, 2);
    for (guint i = 1; i < a->written->len; i++) {
        guint64 pw = g_array_index(a->written, guint64, i - 1);
        guint64 w = g_array_index(a->written, guint64, i);
        guint64 ps = g_array_index(a->synced, guint64, i - 1);
        guint64 s = g_array_index(a->synced, guint64, i);
        g_assert_cmpuint(w, >=, pw);
        g_assert_cmpuint(s, >=, ps);
        g_assert_true(w > pw || s > ps);    /* each call brings news */
        g_assert_cmpuint(s, <=, w);
    }
    g_assert_cmpuint(g_array_index(a->written, guint64, a->written->len - 1), ==, size);
    if (synced_too) {
        g_assert_cmpuint(g_array_index(a->synced, guint64, a->synced->len - 1), ==, size);
    }
    /* Some report came before the end: progress is live, not only the final figure. */
    g_assert_cmpuint(g_array_index(a->written, guint64, 0), <, size);
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

/* Progress on a restore: synced equals written; sync finish delivers the last figure. */
static void
test_progress_restore_sync(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "r.save");
    g_autofree char *back = tpath(dir, "back");
    const guint64 size = 32 * MIB + 1;
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Async a = { 0 };
    int fd;

    ioht_write_random_file(path, size, 11);
    fd = open_restore(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    a.written = g_array_new(FALSE, FALSE, sizeof(guint64));
    a.synced = g_array_new(FALSE, FALSE, sizeof(guint64));
    ioh_wrap_set_progress_func(wrap, on_progress, &a, NULL);
    {
        /* Read slowly enough that the helper reports midway; iterate the context. */
        g_autofree char *buf = g_malloc(MIB);
        guint64 total = 0;
        for (;;) {
            gssize n = read(fd, buf, MIB);
            g_assert_cmpint(n, >=, 0);
            if (n == 0) {
                break;
            }
            total += (guint64)n;
            g_usleep(2000);
            while (g_main_context_iteration(NULL, FALSE)) {
            }
        }
        g_assert_cmpuint(total, ==, size);
    }
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    /* This thread owns the default context: finish delivered the final figure itself. */
    g_assert_cmpuint(g_array_index(a.written, guint64, a.written->len - 1), ==, size);
    for (guint i = 0; i < a.written->len; i++) {
        g_assert_cmpuint(g_array_index(a.written, guint64, i), ==,
                         g_array_index(a.synced, guint64, i));
    }
    check_progress(&a, size, TRUE);
    g_array_unref(a.written);
    g_array_unref(a.synced);
}

/* ioh_wrap_get_progress() without any main loop sees the copy advance. */
static void
test_progress_poll(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "poll.save");
    g_autofree char *chunk = g_malloc0(MIB);
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    guint64 w = 0, s = 0, last = 0;
    guint rises = 0;
    int fd;

    if (!have_direct(dir)) {
        return;
    }
    fd = open_save(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_DIRECT, &params, &error);
    g_assert_no_error(error);
    for (int i = 0; i < 32; i++) {
        g_assert_cmpint(write(fd, chunk, MIB), ==, MIB);
        g_usleep(15000);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, >=, last);
        rises += w > last;
        last = w;
    }
    g_assert_cmpuint(rises, >=, 2);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    ioh_wrap_get_progress(wrap, &w, &s);
    g_assert_cmpuint(w, ==, 32 * MIB);
    g_assert_cmpuint(s, ==, 32 * MIB);
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
    g_assert_false(a.ok);
    g_assert_error(a.error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    g_assert_cmpstr(a.error->message, ==, "helper killed by signal 9");
    g_clear_error(&a.error);
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
    ioh_wrap_finish_async(wrap, cancel, on_finished, &a);
    g_timeout_add(100, G_SOURCE_FUNC(g_cancellable_cancel), cancel);
    g_main_loop_run(a.loop);
    g_assert_false(a.ok);
    g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&a.error);
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
    g_assert_false(a.ok);
    g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&a.error);
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
    ioh_wrap_finish_async(wrap, NULL, on_finished, &a);
    g_main_loop_run(a.loop);
    g_assert_true(a.ok);
    g_assert_no_error(a.error);
    /* Idempotent, sync and async. */
    g_assert_true(ioh_wrap_finish(wrap, &error));
    a.done = FALSE;
    ioh_wrap_finish_async(wrap, NULL, on_finished, &a);
    g_main_loop_run(a.loop);
    g_assert_true(a.ok);
    g_main_loop_unref(a.loop);
}

/* ---- the checksum (ioh_wrap_new_full, ioh_wrap_get_checksum) --------------------- */

/* The value `xxhsum -H3` prints for @file ("XXH3 (FILE) = HEX"). */
static char *
xxh3_of(const char *file)
{
    const char *argv[] = { "xxhsum", "-H3", file, NULL };
    g_autofree char *out = NULL;
    g_autoptr(GError) error = NULL;
    const char *value;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                               &out, NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    value = strrchr(g_strstrip(out), ' ');
    g_assert_nonnull(value);
    g_assert_cmpuint(strlen(value + 1), ==, 16);
    return g_strdup(value + 1);
}

/* Saves @src into @dst with a checksum (no flags: the checksum alone spawns the helper)
 * and returns it. Asked through IohWrapOptions (0.3); the restores use the 0.2 call. */
static char *
save_summed(const char *src, const char *dst)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    int fd = open_save(dst);

    g_assert_true(ioh_wrap_options_set_checksum(options, "xxh3", &error));
    wrap = ioh_wrap_new_with_options(&fd, dst, IOH_WRAP_NONE, NULL, options, &error);
    g_clear_pointer(&options, ioh_wrap_options_free);   /* the wrap keeps a copy */
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_null(ioh_wrap_get_checksum(wrap));    /* not before the finish */
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    return g_strdup(ioh_wrap_get_checksum(wrap));
}

/* Restores @saved with @checksum / @verify; returns the finish's result and the
 * checksum (NULL on failure). */
static gboolean
restore_summed(const char *saved, const char *out, const char *checksum, const char *verify,
               char **ret_sum, GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_restore(saved);
    gboolean ok;

    wrap = ioh_wrap_new_full(&fd, saved, IOH_WRAP_POLLABLE, NULL, checksum, verify, error);
    g_assert_nonnull(wrap);
    ioht_drain_to_file(fd, out);
    ok = ioh_wrap_finish(wrap, error);
    *ret_sum = g_strdup(ioh_wrap_get_checksum(wrap));
    return ok;
}

/* The files of a checksum test, in a work folder of their own. */
typedef struct {
    char *dir;
    char *src;      /* the stream */
    char *saved;    /* the image */
    char *back;     /* what a restore delivered */
} SumFixture;

static void
sum_setup(SumFixture *f, gconstpointer data)
{
    (void)data;
    f->dir = ioht_workdir();
    f->src = tpath(f->dir, "src");
    f->saved = tpath(f->dir, "vm.save");
    f->back = tpath(f->dir, "restored");
}

static void
sum_teardown(SumFixture *f, gconstpointer data)
{
    (void)data;
    ioht_workdir_remove(f->dir);
    g_free(f->dir);
    g_free(f->src);
    g_free(f->saved);
    g_free(f->back);
}

static void
test_checksum_roundtrip(SumFixture *f, gconstpointer data)
{
    g_autofree char *want = NULL;
    g_autofree char *sum = NULL;
    g_autofree char *upper = NULL;
    g_autoptr(GError) error = NULL;

    (void)data;
    ioht_write_random_file(f->src, 3 * MIB + 7, 11);
    want = xxh3_of(f->src);
    sum = save_summed(f->src, f->saved);
    g_assert_cmpstr(sum, ==, want);
    g_assert_true(ioht_files_equal(f->src, f->saved));
    g_clear_pointer(&sum, g_free);

    g_assert_true(restore_summed(f->saved, f->back, "xxh3", NULL, &sum, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(sum, ==, want);
    g_assert_true(ioht_files_equal(f->src, f->back));
    g_clear_pointer(&sum, g_free);

    /* Verification takes either case; it implies the checksum. */
    upper = g_ascii_strup(want, -1);
    g_assert_true(restore_summed(f->saved, f->back, NULL, upper, &sum, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(sum, ==, want);
}

/* A stream that does not have the expected checksum: the finish fails with the helper's
 * own message, and no checksum is reported. */
static void
test_checksum_mismatch(SumFixture *f, gconstpointer data)
{
    g_autofree char *sum = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *prefix = g_strdup_printf("verify %s: xxh3 checksum mismatch", f->saved);

    (void)data;
    ioht_write_random_file(f->saved, MIB + 3, 12);
    g_assert_false(restore_summed(f->saved, f->back, NULL, "0123456789abcdef", &sum, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    g_assert_true(g_str_has_prefix(error->message, prefix));
    g_assert_nonnull(strstr(error->message, "0123456789abcdef"));
    g_assert_null(strstr(error->message, "iohelper:"));
    g_assert_null(sum);
}

/* Refused up front: an unknown algorithm, a malformed value, a verification on a save;
 * no checksum from a wrap that asked for none, nor from NULL. */
static void
test_checksum_refuses(SumFixture *f, gconstpointer data)
{
    static const struct {
        gboolean save;
        const char *checksum, *verify, *needle;
    } bad[] = {
        { TRUE, "md5", NULL, "checksum 'md5' is not a known algorithm" },
        { FALSE, NULL, "0123", "'0123' is not an xxh3 checksum" },
        { FALSE, NULL, "0123456789abcdefg", "is not an xxh3 checksum" },
        { FALSE, NULL, "0123456789abcdeX", "is not an xxh3 checksum" },
        { TRUE, NULL, "0123456789abcdef", "verify_checksum is for a restore" },
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd;

    (void)data;
    ioht_write_random_file(f->saved, 4096, 13);
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        int before = fd = bad[i].save ? open_save(f->saved) : open_restore(f->saved);

        g_assert_null(ioh_wrap_new_full(&fd, f->saved, IOH_WRAP_POLLABLE, NULL,
                                        bad[i].checksum, bad[i].verify, &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_assert_nonnull(strstr(error->message, bad[i].needle));
        g_assert_cmpint(fd, ==, before);
        close(fd);
        g_clear_error(&error);
    }
    g_assert_null(ioh_wrap_get_checksum(NULL));
    fd = open_save(f->saved);
    wrap = ioh_wrap_new(&fd, f->saved, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    close(fd);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_null(ioh_wrap_get_checksum(wrap));
}

/* IohWrapOptions: each setter refuses a bad value at once and keeps the old one; the
 * constructor refuses what does not fit the direction and leaves the fd alone. */
static void
test_options_refuses(SumFixture *f, gconstpointer data)
{
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;
    int fd, before;

    (void)data;
    g_assert_false(ioh_wrap_options_set_checksum(options, "crc32", &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "checksum 'crc32' is not a known algorithm"));
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_verify_checksum(options, "12", &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_checksum(NULL, "xxh3", &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    ioh_wrap_options_free(NULL);

    g_assert_true(ioh_wrap_options_set_verify_checksum(options, "0123456789ABCDEF", &error));
    ioht_write_random_file(f->saved, 4096, 17);
    before = fd = open_save(f->saved);
    g_assert_null(ioh_wrap_new_with_options(&fd, f->saved, IOH_WRAP_POLLABLE, NULL, options,
                                            &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "verify_checksum is for a restore"));
    g_assert_cmpint(fd, ==, before);
    close(fd);
}

/* ---- compression (0.3: set_compress, set_decompress, set_threads, the byte counts) ---- */

/* A stream that compresses the way guest RAM does, partly: text, zeros, random. */
static void
write_mixed_file(const char *path, guint64 size)
{
    g_autoptr(GString) s = g_string_new(NULL);
    g_autoptr(GRand) rand = g_rand_new_with_seed(23);

    for (guint i = 0; s->len < size; i++) {
        if (i % 64 == 63) {
            for (int k = 0; k < 8192; k++) {
                g_string_append_c(s, (char)g_rand_int_range(rand, 0, 256));
            }
        } else if (i % 16 == 7) {
            g_string_set_size(s, s->len + 4096);
            memset(s->str + s->len - 4096, 0, 4096);
        } else {
            g_string_append_printf(s, "line %u of a page-cache-like stream, mostly text\n", i);
        }
    }
    g_string_truncate(s, size);
    g_assert_true(g_file_set_contents(path, s->str, (gssize)s->len, NULL));
}

/* Runs `sh -c @cmd`, which must succeed. */
static void
sh_ok(const char *cmd)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    g_autoptr(GError) error = NULL;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                               NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
}

/* Saves @src compressed (@spec, @threads) at offset 4096 of @saved with a checksum;
 * returns the stored bytes and the checksum. */
static guint64
save_compressed(const char *src, const char *saved, IohWrapFlags flags, const char *spec,
                guint threads, char **ret_sum)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    IohWrapParams params = { .offset = 4096 };
    int fd = open_save(saved);

    g_assert_true(ioh_wrap_options_set_checksum(options, "xxh3", &error));
    g_assert_true(ioh_wrap_options_set_compress(options, spec, &error));
    g_assert_true(ioh_wrap_options_set_threads(options, threads, &error));
    wrap = ioh_wrap_new_with_options(&fd, saved, flags, &params, options, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));       /* whatever the flags */
    g_assert_cmpuint(ioh_wrap_get_stored_bytes(wrap), ==, 0);   /* not before the finish */
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    *ret_sum = g_strdup(ioh_wrap_get_checksum(wrap));
    return ioh_wrap_get_stored_bytes(wrap);
}

/* Restores @stored bytes of zstd frames at 4096 of @saved into @back, verifying @sum;
 * returns the stream bytes the wrap reports. */
static guint64
restore_compressed(const char *saved, const char *back, IohWrapFlags flags, guint64 stored,
                   const char *sum, GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    IohWrapParams params = { .offset = 4096, .length = stored };
    int fd = open_restore(saved);

    g_assert_true(ioh_wrap_options_set_decompress(options, TRUE, NULL));
    g_assert_true(ioh_wrap_options_set_verify_checksum(options, sum, NULL));
    wrap = ioh_wrap_new_with_options(&fd, saved, flags, &params, options, error);
    g_assert_nonnull(wrap);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    ioht_drain_to_file(fd, back);
    if (!ioh_wrap_finish(wrap, error)) {
        g_assert_cmpuint(ioh_wrap_get_stored_bytes(wrap), ==, 0);
        return 0;
    }
    g_assert_cmpuint(ioh_wrap_get_stored_bytes(wrap), ==, stored);
    return ioh_wrap_get_stream_bytes(wrap);
}

typedef struct {
    IohWrapFlags flags;
    const char *spec;
    guint threads;
} CompressCase;

/* Save compressed, `zstd -dc` of the image part equals the stream, the checksum is the
 * stream's, the restore decompresses it back byte for byte. */
static void
test_compress_roundtrip(IohtDir *fx, gconstpointer data)
{
    const CompressCase *c = data;
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "restored");
    g_autofree char *unz = tpath(fx->dir, "unzstd");
    g_autofree char *cmd = NULL;
    g_autofree char *sum = NULL;
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    const guint64 size = 6 * MIB + 3;
    guint64 stored;
    struct stat st;

    if ((c->flags & IOH_WRAP_DIRECT) && !have_direct(fx->dir)) {
        return;
    }
    write_mixed_file(src, size);
    want = xxh3_of(src);
    stored = save_compressed(src, saved, c->flags, c->spec, c->threads, &sum);
    g_assert_cmpstr(sum, ==, want);
    g_assert_cmpuint(stored, >, 0);
    g_assert_cmpuint(stored, <, size / 2);
    g_assert_cmpint(g_stat(saved, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, 4096 + stored);
    cmd = g_strdup_printf("tail -c +4097 '%s' | zstd -q -dc > '%s'", saved, unz);
    sh_ok(cmd);
    g_assert_true(ioht_files_equal(src, unz));

    g_assert_cmpuint(restore_compressed(saved, back, c->flags, stored, sum, &error), ==,
                     size);
    g_assert_no_error(error);
    g_assert_true(ioht_files_equal(src, back));
}

/* A flipped byte in the frames: the restore's finish fails with the helper's line. */
static void
test_compress_corrupt(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "restored");
    g_autofree char *sum = NULL;
    g_autoptr(GError) error = NULL;
    guint64 stored;
    guint8 b;
    int fd;

    write_mixed_file(src, 2 * MIB);
    stored = save_compressed(src, saved, IOH_WRAP_NONE, "zstd:3", 0, &sum);
    fd = open(saved, O_RDWR | O_CLOEXEC);
    g_assert_cmpint(pread(fd, &b, 1, 4096 + stored / 2), ==, 1);
    b ^= 0x55;
    g_assert_cmpint(pwrite(fd, &b, 1, 4096 + stored / 2), ==, 1);
    close(fd);
    g_assert_cmpuint(restore_compressed(saved, back, IOH_WRAP_POLLABLE, stored, sum, &error),
                     ==, 0);
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, "corrupt zstd image"));
    g_assert_nonnull(strstr(error->message, saved));
}

/* Each setter refuses a bad value; the constructor what does not fit the direction,
 * leaving the fd alone and spawning nothing. */
static void
test_compress_refuses(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    static const char *const bad[] = { "gzip", "zstd:20", "zstd:-8", "zstd:", "zstd:1x",
                                       "zstd:3:4", "ZSTD", "" };
    static const struct { gboolean save; gboolean compress, decompress; guint threads;
                          const char *needle; } misfit[] = {
        { FALSE, TRUE, FALSE, 0, "compress is for a save" },
        { TRUE, FALSE, TRUE, 0, "decompress is for a restore" },
        { TRUE, FALSE, FALSE, 2, "they need compress" },
        { FALSE, FALSE, TRUE, 2, "they need compress" },
    };
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(ioh_wrap_options_set_compress(options, bad[i], &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_assert_nonnull(strstr(error->message, "is not zstd or zstd:LEVEL (LEVEL -7 to 19)"));
        g_clear_error(&error);
    }
    g_assert_false(ioh_wrap_options_set_threads(options, 65, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_compress(NULL, "zstd", &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_decompress(NULL, TRUE, &error));
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_threads(NULL, 1, &error));
    g_clear_error(&error);
    g_assert_cmpuint(ioh_wrap_get_stored_bytes(NULL), ==, 0);
    g_assert_cmpuint(ioh_wrap_get_stream_bytes(NULL), ==, 0);
    g_assert_true(ioh_wrap_options_set_compress(options, "zstd:-7", &error));
    g_assert_true(ioh_wrap_options_set_compress(options, "zstd:19", &error));

    ioht_write_random_file(saved, 8192, 5);
    for (gsize i = 0; i < G_N_ELEMENTS(misfit); i++) {
        g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
        int fd = misfit[i].save ? open_save(saved) : open_restore(saved);
        int before = fd;

        g_assert_true(ioh_wrap_options_set_compress(o, misfit[i].compress ? "zstd" : NULL,
                                                    NULL));
        g_assert_true(ioh_wrap_options_set_decompress(o, misfit[i].decompress, NULL));
        g_assert_true(ioh_wrap_options_set_threads(o, misfit[i].threads, NULL));
        g_assert_null(ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, NULL, o,
                                                &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_assert_nonnull(strstr(error->message, misfit[i].needle));
        g_assert_cmpint(fd, ==, before);
        g_assert_true(fd_is_open(fd));
        g_assert_cmpint(waitpid(-1, NULL, WNOHANG), <, 0);   /* no child at all */
        g_clear_error(&error);
        close(fd);
    }
}

/* Without compression the counts are equal; without a helper they are 0. */
static void
test_compress_counts_raw(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(IohWrap) plain = NULL;
    int fd;

    ioht_write_random_file(src, MIB + 1, 3);
    fd = open_save(saved);
    wrap = ioh_wrap_new(&fd, saved, IOH_WRAP_FADVISE, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_cmpuint(ioh_wrap_get_stream_bytes(wrap), ==, MIB + 1);
    g_assert_cmpuint(ioh_wrap_get_stored_bytes(wrap), ==, MIB + 1);

    fd = open_save(saved);
    plain = ioh_wrap_new(&fd, saved, IOH_WRAP_NONE, NULL, &error);
    g_assert_no_error(error);
    g_assert_false(ioh_wrap_is_spawned(plain));
    g_assert_true(ioht_feed_file(src, fd));
    close(fd);
    g_assert_true(ioh_wrap_finish(plain, &error));
    g_assert_cmpuint(ioh_wrap_get_stored_bytes(plain), ==, 0);
}

int
main(int argc, char **argv)
{
    static const IohWrapFlags modes[] = { IOH_WRAP_DIRECT, IOH_WRAP_FADVISE,
                                          IOH_WRAP_POLLABLE };
    static const char *mode_names[] = { "direct", "fadvise", "pollable" };
    static const guint64 sizes[] = { 0, 4097, 3 * MIB + 1, 64 * MIB };
    static const char *size_names[] = { "0", "4097", "3M+1", "64M" };
    static RoundTrip rts[G_N_ELEMENTS(modes) * G_N_ELEMENTS(sizes)];

    g_test_init(&argc, &argv, NULL);
    /* A helper that dies gives EPIPE, as in every daemon that uses libwrap. */
    signal(SIGPIPE, SIG_IGN);

    ioht_dir_add("/libwrap/nospawn/fd-untouched", NULL, test_nospawn_untouched);
    ioht_dir_add("/libwrap/nospawn/restore-offset", NULL, test_nospawn_restore);
    ioht_dir_add("/libwrap/nospawn/odirect-fd-gets-helper", NULL, test_odirect_fd);
    ioht_dir_add("/libwrap/errors/misuse", NULL, test_errors);
    ioht_dir_add("/libwrap/new/refuses/values", NULL, test_new_values);
    ioht_dir_add("/libwrap/new/refuses/fd-kinds", NULL, test_new_fd_kinds);
    ioht_dir_add("/libwrap/new/refuses/placement", NULL, test_new_placement);
    g_test_add_func("/libwrap/progress/notify/null-wrap", test_progress_null_wrap);
    ioht_dir_add("/libwrap/progress/notify/every-drop", NULL, test_progress_notify);
    ioht_dir_add("/libwrap/progress/notify/replace-inside", NULL, test_progress_replace_inside);
    ioht_dir_add("/libwrap/finish/other-wrap", NULL, test_finish_other_wrap);
    for (guint m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
            RoundTrip *rt = &rts[m * G_N_ELEMENTS(sizes) + s];
            g_autofree char *name = g_strdup_printf("/libwrap/roundtrip/%s/%s",
                                                    mode_names[m], size_names[s]);
            rt->flags = modes[m];
            rt->size = sizes[s];
            ioht_dir_add(name, rt, test_roundtrip);
        }
        {
            g_autofree char *name = g_strdup_printf("/libwrap/roundtrip/%s/offset-length",
                                                    mode_names[m]);
            ioht_dir_add(name, GUINT_TO_POINTER(modes[m]), test_offset_length);
        }
    }
    ioht_dir_add("/libwrap/pipe/size-1M", NULL, test_pipe_size);
    ioht_dir_add("/libwrap/pipe/no-fd-leak", NULL, test_no_fd_leak);
    ioht_dir_add("/libwrap/failure/enospc", NULL, test_fail_enospc);
    ioht_dir_add("/libwrap/failure/config-typo-at-new", NULL, test_fail_config_typo);
    ioht_dir_add("/libwrap/failure/short-restore", NULL, test_fail_short_restore);
    ioht_dir_add("/libwrap/failure/long-stderr", NULL, test_fail_long_stderr);
    ioht_dir_add("/libwrap/failure/killed", NULL, test_fail_killed);
    ioht_dir_add("/libwrap/failure/odd-path", NULL, test_fail_odd_path);
    ioht_dir_add("/libwrap/failure/no-final-line", NULL, test_fail_no_final_line);
    ioht_dir_add("/libwrap/free/running-helper", NULL, test_free_running);
    ioht_dir_add("/libwrap/finish/spares-reused-fd", NULL, test_finish_spares_reused_fd);
    ioht_dir_add("/libwrap/concurrent/8-wraps", NULL, test_concurrent);
    g_test_add("/libwrap/checksum/roundtrip", SumFixture, NULL, sum_setup,
               test_checksum_roundtrip, sum_teardown);
    g_test_add("/libwrap/checksum/verify-mismatch", SumFixture, NULL, sum_setup,
               test_checksum_mismatch, sum_teardown);
    g_test_add("/libwrap/checksum/refuses", SumFixture, NULL, sum_setup,
               test_checksum_refuses, sum_teardown);
    g_test_add("/libwrap/options/refuses", SumFixture, NULL, sum_setup,
               test_options_refuses, sum_teardown);
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
    ioht_dir_add("/libwrap/progress/restore-sync", NULL, test_progress_restore_sync);
    ioht_dir_add("/libwrap/progress/poll", NULL, test_progress_poll);
    ioht_dir_add("/libwrap/progress/without-status", NULL, test_progress_without_status);
    {
        static const CompressCase cases[] = {
            { IOH_WRAP_NONE, "zstd", 0 },
            { IOH_WRAP_POLLABLE, "zstd:-3", 2 },
            { IOH_WRAP_FADVISE, "zstd:3", 1 },
            { IOH_WRAP_DIRECT, "zstd", 2 },
        };
        static const char *const names[] = { "none", "pollable", "fadvise", "direct" };

        for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
            g_autofree char *name = g_strdup_printf("/libwrap/compress/roundtrip/%s",
                                                    names[i]);
            ioht_dir_add(name, &cases[i], test_compress_roundtrip);
        }
    }
    ioht_dir_add("/libwrap/compress/corrupt", NULL, test_compress_corrupt);
    ioht_dir_add("/libwrap/compress/refuses", NULL, test_compress_refuses);
    ioht_dir_add("/libwrap/compress/counts-raw", NULL, test_compress_counts_raw);
    return g_test_run();
}
