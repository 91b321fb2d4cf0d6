/* test-splice-strategy.c - splice(2) between a pipe and the page cache
 * (ioh-strategy-splice.c) in-process: a save and a restore move the exact bytes by
 * splice; a --fadvise restore copies its last pipe-full (held pages cannot be dropped);
 * an O_APPEND file, which the kernel will not splice into, falls back to read/write from
 * where it stands; a length ends the restore there; a filter that must see the bytes
 * turns splice off. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "engine-util.h"

static char *workdir;

/* A save of @len random bytes into @dst (@mode, @filters); the file must hold @prefix
 * then the bytes. */
static void
save_checked(IohEnd *dst, const char *img, const char *prefix, IohCacheMode mode,
             const char *const *filters, gsize len, IohStats *stats)
{
    g_autofree char *in = engt_random(len, (guint32)len);
    g_autofree char *saved = NULL;
    g_autoptr(GError) error = NULL;
    gsize plen = strlen(prefix), slen;
    IohCopyOptions opts;

    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.filters = filters;
    g_assert_true(engt_save(in, len, dst, &opts, stats, &error));
    g_assert_no_error(error);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
    g_assert_cmpuint(slen, ==, plen + len);
    g_assert_true(memcmp(saved, prefix, plen) == 0);
    g_assert_true(memcmp(saved + plen, in, len) == 0);
    g_assert_cmpuint(stats->bytes, ==, len);
}

static void
test_save(gconstpointer data)
{
    IohCacheMode mode = GPOINTER_TO_INT(data);
    g_autofree char *img = g_build_filename(workdir, "save", NULL);
    g_autoptr(IohEnd) dst = ioh_end_open(img, TRUE, 0, NULL);
    IohStats stats;

    save_checked(dst, img, "", mode, NULL, 5 * MiB + 4097, &stats);
    g_assert_cmpuint(stats.splices, >=, 6);
    g_assert_cmpuint(stats.splices, ==, stats.writes);    /* every write was a splice */
    g_unlink(img);
}

/* Restores @img (all of it, or @length bytes) into a pipe in @mode: the bytes read. */
static GByteArray *
restore(const char *img, IohCacheMode mode, gsize length, IohStats *stats)
{
    GByteArray *got = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = ioh_end_open(img, FALSE, 0, &error);
    IohCopyOptions opts;

    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.has_length = length > 0;
    opts.length = length;
    g_assert_true(engt_restore(src, &opts, stats, got, &error));
    g_assert_no_error(error);
    return got;
}

static void
test_restore(gconstpointer data)
{
    IohCacheMode mode = GPOINTER_TO_INT(data);
    g_autofree char *img = g_build_filename(workdir, "restore", NULL);
    gsize len = 8 * MiB + 4097;
    g_autofree char *in = engt_random(len, 41);
    g_autoptr(GByteArray) got = NULL;
    IohStats stats;

    g_assert_true(g_file_set_contents(img, in, (gssize)len, NULL));
    got = restore(img, mode, 0, &stats);
    g_assert_cmpuint(got->len, ==, len);
    g_assert_true(memcmp(got->data, in, len) == 0);
    g_assert_cmpuint(stats.splices, >=, 7);
    if (mode == IOH_CACHE_FADVISE) {
        /* the last pipe-full (1 MiB) went by read and write */
        g_assert_cmpuint(stats.writes, >, stats.splices);
    } else {
        g_assert_cmpuint(stats.writes, ==, stats.splices);
    }
    g_unlink(img);
}

/* A length ends the restore there, mid-file, on a byte that is no buffer's edge. */
static void
test_restore_length(void)
{
    g_autofree char *img = g_build_filename(workdir, "length", NULL);
    g_autofree char *in = engt_random(3 * MiB, 42);
    g_autoptr(GByteArray) got = NULL;
    IohStats stats;

    g_assert_true(g_file_set_contents(img, in, 3 * MiB, NULL));
    got = restore(img, IOH_CACHE_BUFFERED, MiB + 5, &stats);
    g_assert_cmpuint(got->len, ==, MiB + 5);
    g_assert_true(memcmp(got->data, in, MiB + 5) == 0);
    g_assert_cmpuint(stats.splices, >=, 2);
    g_unlink(img);
}

/* splice into an O_APPEND file is EINVAL: the save goes on with read/write, appended. */
static void
test_append_falls_back(void)
{
    g_autofree char *img = g_build_filename(workdir, "append", NULL);
    g_autoptr(IohEnd) dst = NULL;
    IohStats stats;
    int fd;

    g_assert_true(g_file_set_contents(img, "prefix", 6, NULL));
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    dst = ioh_end_from_fd(fd, "append", NULL);
    save_checked(dst, img, "prefix", IOH_CACHE_BUFFERED, NULL, 2 * MiB + 3, &stats);
    g_assert_cmpuint(stats.splices, ==, 1);     /* the one the kernel refused */
    g_assert_cmpuint(stats.writes, >, stats.splices);
    g_unlink(img);
}

/* A filter must see the bytes: no splice. */
static void
test_filter_reads(void)
{
    static const char *const filters[] = { "xxh3", NULL };
    g_autofree char *img = g_build_filename(workdir, "filter", NULL);
    g_autoptr(IohEnd) dst = ioh_end_open(img, TRUE, 0, NULL);
    IohStats stats;

    save_checked(dst, img, "", IOH_CACHE_BUFFERED, filters, MiB + 1, &stats);
    g_assert_cmpuint(stats.splices, ==, 0);
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    workdir = ioht_workdir();
    g_test_add_data_func("/splice/save/buffered", GINT_TO_POINTER(IOH_CACHE_BUFFERED),
                         test_save);
    g_test_add_data_func("/splice/save/fadvise", GINT_TO_POINTER(IOH_CACHE_FADVISE),
                         test_save);
    g_test_add_data_func("/splice/restore/buffered", GINT_TO_POINTER(IOH_CACHE_BUFFERED),
                         test_restore);
    g_test_add_data_func("/splice/restore/fadvise-tail-copied",
                         GINT_TO_POINTER(IOH_CACHE_FADVISE), test_restore);
    g_test_add_func("/splice/restore/length", test_restore_length);
    g_test_add_func("/splice/append-falls-back", test_append_falls_back);
    g_test_add_func("/splice/filter-reads", test_filter_reads);
    return ioht_run_tests(&workdir);
}
