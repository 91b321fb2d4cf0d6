/* test-sink-file.c - the file sink (ioh-sink-file.c) in-process, on a real file system
 * (the work folder: never tmpfs): an O_DIRECT save's unaligned tail goes through the page
 * cache with O_DIRECT cleared, every byte counted synced; the file ends where the stream
 * ends (an inherited fd on a longer file); a save at an offset keeps what lies before; a
 * write past RLIMIT_FSIZE is EFBIG, not "O_DIRECT refused". */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "engine-util.h"
#include "ioh-error.h"

static char *workdir;
static gboolean have_direct;

static gboolean
skip_unless_direct(void)
{
    if (!have_direct) {
        g_test_skip("the work folder's file system refuses O_DIRECT");
    }
    return !have_direct;
}

static guint64
size_of(const char *path)
{
    struct stat st;

    g_assert_no_errno(stat(path, &st));
    return (guint64)st.st_size;
}

/* Saves @len random bytes into @dst in @mode at @offset (0: none): the stats. */
static void
save(IohEnd *dst, IohCacheMode mode, guint64 offset, gsize len, const char *in,
     IohStats *stats)
{
    g_autoptr(GError) error = NULL;
    IohCopyOptions opts;

    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.has_offset = offset > 0;
    opts.offset = offset;
    g_assert_true(engt_save(in, len, dst, &opts, stats, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(stats->bytes, ==, len);
    g_assert_cmpuint(stats->synced, ==, len);
}

static void
test_direct_tail(gconstpointer data)
{
    gsize len = GPOINTER_TO_SIZE(data);
    g_autofree char *img = g_build_filename(workdir, "tail", NULL);
    g_autofree char *in = engt_random(len, (guint32)len);
    g_autofree char *saved = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohStats stats;
    gsize slen;

    if (skip_unless_direct()) {
        return;
    }
    dst = ioh_end_open(img, TRUE, 0, &error);
    save(dst, IOH_CACHE_DIRECT, 0, len, in, &stats);
    /* O_DIRECT was cleared for the tail only: an aligned stream keeps it to the end */
    g_assert_cmpint(dst->direct, ==, len % 4096 == 0);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
    g_assert_cmpuint(slen, ==, len);
    g_assert_true(memcmp(saved, in, len) == 0);
    g_unlink(img);
}

/* An inherited fd on a file longer than the stream: the old bytes past it go. */
static void
test_truncates(void)
{
    g_autofree char *img = g_build_filename(workdir, "longer", NULL);
    g_autofree char *in = engt_random(MiB + 3, 51);
    g_autoptr(IohEnd) dst = NULL;
    IohStats stats;
    int fd;

    ioht_write_random_file(img, 8 * MiB, 52);
    fd = open(img, O_WRONLY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    dst = ioh_end_from_fd(fd, "longer", NULL);
    save(dst, IOH_CACHE_BUFFERED, 0, MiB + 3, in, &stats);
    g_assert_true(ioh_end_close(dst, NULL));
    g_assert_cmpuint(size_of(img), ==, MiB + 3);
    g_unlink(img);
}

/* --offset: the bytes before the offset stay, the stream follows them. */
static void
test_offset(gconstpointer data)
{
    IohCacheMode mode = GPOINTER_TO_INT(data);
    g_autofree char *img = g_build_filename(workdir, "offset", NULL);
    g_autofree char *in = engt_random(MiB + 7, 53);
    g_autofree char *head = g_strnfill(4096, 'h');
    g_autofree char *saved = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohStats stats;
    gsize slen;

    if (mode == IOH_CACHE_DIRECT && skip_unless_direct()) {
        return;
    }
    g_assert_true(g_file_set_contents(img, head, 4096, NULL));
    dst = ioh_end_open(img, TRUE, 4096, NULL);
    save(dst, mode, 4096, MiB + 7, in, &stats);
    g_assert_true(ioh_end_close(dst, NULL));
    g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
    g_assert_cmpuint(slen, ==, 4096 + MiB + 7);
    g_assert_true(memcmp(saved, head, 4096) == 0);
    g_assert_true(memcmp(saved + 4096, in, MiB + 7) == 0);
    g_unlink(img);
}

/* The kernel clips a write at RLIMIT_FSIZE to an unaligned length, which O_DIRECT
 * refuses with EINVAL: the sink must report the real cause, EFBIG. */
static void
test_fsize_limit(void)
{
    g_autofree char *img = g_build_filename(workdir, "fsize", NULL);
    g_autofree char *in = engt_random(4 * MiB, 54);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) dst = NULL;
    struct rlimit old, lim;
    IohCopyOptions opts;
    IohStats stats;

    if (skip_unless_direct()) {
        return;
    }
    g_assert_no_errno(getrlimit(RLIMIT_FSIZE, &old));
    lim = (struct rlimit){ .rlim_cur = 2 * MiB + 100, .rlim_max = old.rlim_max };
    dst = ioh_end_open(img, TRUE, 0, &error);
    ioh_copy_options_init(&opts);
    opts.mode = IOH_CACHE_DIRECT;
    g_assert_no_errno(setrlimit(RLIMIT_FSIZE, &lim));
    g_assert_false(engt_save(in, 4 * MiB, dst, &opts, &stats, &error));
    g_assert_no_errno(setrlimit(RLIMIT_FSIZE, &old));
    g_assert_error(error, IOH_ERROR, EFBIG);
    ioht_assert_contains(error->message, img);
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);    /* a write past RLIMIT_FSIZE fails with EFBIG instead */
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);
    g_test_add_data_func("/sink-file/direct-tail/4097", GSIZE_TO_POINTER(4097),
                         test_direct_tail);
    g_test_add_data_func("/sink-file/direct-tail/1MiB+1", GSIZE_TO_POINTER(MiB + 1),
                         test_direct_tail);
    g_test_add_data_func("/sink-file/direct-tail/3MiB-1", GSIZE_TO_POINTER(3 * MiB - 1),
                         test_direct_tail);
    g_test_add_data_func("/sink-file/direct-tail/aligned", GSIZE_TO_POINTER(2 * MiB),
                         test_direct_tail);
    g_test_add_data_func("/sink-file/direct-tail/100", GSIZE_TO_POINTER(100),
                         test_direct_tail);
    g_test_add_func("/sink-file/truncates-longer-file", test_truncates);
    g_test_add_data_func("/sink-file/offset/buffered", GINT_TO_POINTER(IOH_CACHE_BUFFERED),
                         test_offset);
    g_test_add_data_func("/sink-file/offset/direct", GINT_TO_POINTER(IOH_CACHE_DIRECT),
                         test_offset);
    g_test_add_func("/sink-file/fsize-limit-efbig", test_fsize_limit);
    return ioht_run_tests(&workdir);
}
