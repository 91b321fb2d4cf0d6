/* test-cache-policy.c - write-behind and drop-behind (ioh-cache-policy.c) in-process: a
 * buffered save starts write-back once per full window; a --fadvise save and restore leave
 * (almost) nothing of the image in the page cache (mincore after the copy); a --fadvise
 * save divides its window by the saves running at once (their marks in the budget's
 * directory, here a temp one through IOHELPER_RUNDIR). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "engine-util.h"
#include "ioh-error.h"

#define WINDOW (4 * MiB)
#define SIZE (48 * MiB + 5)
/* What may stay cached after a --fadvise copy: a page dropped while still in another
 * CPU's LRU batch may stay (ioh-cache-policy.c); far below the image's size. */
#define CACHED_MAX (SIZE / 4)

static char *workdir;

/* A save of SIZE random bytes from a pipe into a new file in @mode: its stats. */
static void
save(const char *img, IohCacheMode mode, IohStats *stats)
{
    g_autofree char *in = engt_random(SIZE, 31);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) dst = ioh_end_open(img, TRUE, 0, &error);
    IohCopyOptions opts;

    g_assert_no_error(error);
    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.fadvise_window = WINDOW;
    g_assert_true(engt_save(in, SIZE, dst, &opts, stats, &error));
    g_assert_no_error(error);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_cmpuint(stats->bytes, ==, SIZE);
    g_assert_cmpuint(stats->synced, ==, SIZE);
}

/* Buffered: sync_file_range(WRITE) once per full window, no wait, nothing dropped. */
static void
test_write_behind(void)
{
    g_autofree char *img = g_build_filename(workdir, "wb", NULL);
    IohStats stats;

    save(img, IOH_CACHE_BUFFERED, &stats);
    g_assert_cmpuint(stats.cache_calls, ==, SIZE / WINDOW);
    g_unlink(img);
}

static void
test_fadvise_save(void)
{
    g_autofree char *img = g_build_filename(workdir, "fs", NULL);
    IohStats stats;
    guint64 cached;

    save(img, IOH_CACHE_FADVISE, &stats);
    cached = ioht_cached_bytes(img);
    g_test_message("%" G_GUINT64_FORMAT " KiB cached, %" G_GUINT64_FORMAT " cache calls",
                   cached / 1024, stats.cache_calls);
    g_assert_cmpuint(cached, <=, CACHED_MAX);
    g_assert_cmpuint(stats.cache_calls, >=, SIZE / WINDOW);
    g_unlink(img);
}

static void
sync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_no_errno(fsync(fd));
    close(fd);
}

static void
test_fadvise_restore(void)
{
    g_autofree char *img = g_build_filename(workdir, "fr", NULL);
    g_autoptr(GByteArray) got = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autofree char *text = NULL;
    IohCopyOptions opts;
    IohStats stats;
    gsize len;

    ioht_write_random_file(img, SIZE, 32);
    sync_file(img);    /* a dirty page cannot be dropped: an image on disk, as a restore's */
    g_assert_true(g_file_get_contents(img, &text, &len, NULL));    /* all of it cached */
    if (ioht_cached_bytes(img) < SIZE / 2) {
        g_test_skip("the page cache did not keep the image (memory pressure)");
        return;
    }
    ioh_copy_options_init(&opts);
    opts.mode = IOH_CACHE_FADVISE;
    opts.fadvise_window = WINDOW;
    src = ioh_end_open(img, FALSE, 0, &error);
    g_assert_true(engt_restore(src, &opts, &stats, got, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(got->len, ==, len);
    g_assert_true(memcmp(got->data, text, len) == 0);
    g_assert_cmpuint(ioht_cached_bytes(img), <=, CACHED_MAX);
    g_unlink(img);
}

/* The mark of a --fadvise save run by @pid, as the budget writes it: "PID START 0". */
static void
plant_mark(const char *rundir, GPid pid)
{
    g_autofree char *stat = g_strdup_printf("/proc/%d/stat", pid);
    g_autofree char *text = NULL;
    g_autofree char *mark = g_strdup_printf("%s/%d.fadvise", rundir, pid);
    g_autofree char *line = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(stat, &text, NULL, NULL));
    p = strrchr(text, ')');
    for (int field = 2; p && field < 22; field++) {
        p = strchr(p + 1, ' ');
    }
    g_assert_nonnull(p);
    line = g_strdup_printf("%d %" G_GUINT64_FORMAT " 0\n", pid,
                           g_ascii_strtoull(p + 1, NULL, 10));
    g_assert_true(g_file_set_contents_full(mark, line, -1, G_FILE_SET_CONTENTS_NONE, 0600,
                                           NULL));
}

/* Another save running (a live process's mark): the window is halved, and the save's own
 * mark is gone afterwards. */
static void
test_window_shared(void)
{
    g_autofree char *img = g_build_filename(workdir, "ws", NULL);
    g_autofree char *rundir = g_build_filename(workdir, "run", NULL);
    g_autofree char *own = NULL;
    const char *argv[] = { "/bin/sleep", "300", NULL };
    IohStats stats;
    GPid other;

    g_assert_cmpint(g_mkdir(rundir, 01777), ==, 0);
    g_assert_cmpint(chmod(rundir, 01777), ==, 0);
    g_setenv("IOHELPER_RUNDIR", rundir, TRUE);
    g_assert_true(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                NULL, &other, NULL));
    plant_mark(rundir, other);
    engt_log_clear();
    save(img, IOH_CACHE_FADVISE, &stats);
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    g_assert_true(engt_logged("fadvise: drop-behind window 2097152 bytes (2 saves at once)"));
    own = g_strdup_printf("%s/%d.fadvise", rundir, getpid());
    g_assert_false(g_file_test(own, G_FILE_TEST_EXISTS));
    g_unsetenv("IOHELPER_RUNDIR");
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    engt_log_start();
    workdir = ioht_workdir();
    g_test_add_func("/cache-policy/write-behind/buffered-save", test_write_behind);
    g_test_add_func("/cache-policy/drop-behind/fadvise-save", test_fadvise_save);
    g_test_add_func("/cache-policy/drop-behind/fadvise-restore", test_fadvise_restore);
    g_test_add_func("/cache-policy/window-shared", test_window_shared);
    return ioht_run_tests(&workdir);
}
