/* test-iohelper-copy.c - the iohelper binary, end to end (real pipes, real files on ext4,
 * O_DIRECT): round trips in every mode and form, offsets, the pipe's size
 * (/helper/roundtrip/..., /helper/file-to-file/..., /helper/fd-operands/...,
 * /helper/offset-length/..., /helper/pipe/...)
 */
#include "iohelper-util.h"

/* ---- round trips ---- */

typedef struct {
    const char *mode;    /* "", "--direct", "--fadvise" */
    guint64 size;
} RoundTrip;

static void
test_roundtrip(gconstpointer data)
{
    const RoundTrip *rt = data;
    g_autofree char *src = wpath("rt-src");
    g_autofree char *img = wpath("rt-img");
    g_autofree char *back = wpath("rt-back");
    const char *opts[] = { rt->mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);
    g_auto(GStrv) restore = helper_argv(ioht_helper_path(), opts, img, "-");

    if (g_str_equal(rt->mode, "--direct") && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, rt->size, (guint32)rt->size);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_cmpuint(file_size(img), ==, rt->size);
    g_assert_true(ioht_files_equal(src, img));
    g_assert_cmpint(run_drained(restore, -1, back, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, back));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
}

/* A file-to-file copy works too. */
static void
test_file_to_file(void)
{
    g_autofree char *src = wpath("ff-src");
    g_autofree char *dst = wpath("ff-dst");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, src, dst);

    ioht_write_random_file(src, 3 * MiB + 7, 7);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, NULL)), ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    g_unlink(src);
    g_unlink(dst);
}

/* fd:N operands: the helper uses inherited fds. */
static void
test_fd_operands(void)
{
    g_autofree char *src = wpath("fd-src");
    g_autofree char *dst = wpath("fd-dst");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, "fd:0", "fd:1");
    int in, out;

    ioht_write_random_file(src, MiB + 1, 8);
    in = open(src, O_RDONLY | O_CLOEXEC);
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, in, out, NULL)), ==, 0);
    close(in);
    close(out);
    g_assert_true(ioht_files_equal(src, dst));
    g_unlink(src);
    g_unlink(dst);
}

/* --offset keeps what precedes the stream; --length delivers exactly that much, and a
 * stream shorter than --length is an error, never a short success. */
static void
test_offset_length(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = wpath("ol-src");
    g_autofree char *img = wpath("ol-img");
    g_autofree char *back = wpath("ol-back");
    g_autofree char *junk = wpath("ol-junk");
    const guint64 size = 5 * MiB + 333;
    const char *save_opts[] = { "--offset=4096", mode, NULL };
    const char *restore_opts[] = { "--offset=4096", "--length=5243213", mode, NULL };
    const char *too_much[] = { "--offset=4096", "--length=6M", mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), save_opts, "-", img);
    g_auto(GStrv) restore = helper_argv(ioht_helper_path(), restore_opts, img, "-");
    g_auto(GStrv) restore_long = helper_argv(ioht_helper_path(), too_much, img, "-");
    g_autofree char *head = g_strnfill(4096, 'H');
    g_autofree char *contents = NULL;
    g_autofree char *err = NULL;
    gsize len;
    int fd;

    if (g_str_equal(mode, "--direct") && skip_unless_direct()) {
        return;
    }
    g_assert_true(g_file_set_contents(img, head, 4096, NULL));
    ioht_write_random_file(src, size, 11);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_cmpuint(file_size(img), ==, 4096 + size);
    g_assert_true(g_file_get_contents(img, &contents, &len, NULL));
    g_assert_cmpmem(contents, 4096, head, 4096);

    /* Bytes after the stream must not reach the reader. */
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(write(fd, "TRAILING", 8), ==, 8);
    close(fd);
    g_assert_cmpint(run_drained(restore, -1, back, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, back));

    g_assert_cmpint(run_drained(restore_long, -1, junk, &err), ==, 1);
    g_assert_nonnull(strstr(err, "stream ended after"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
    g_unlink(junk);
}

/* ---- pipes ---- */

/* The helper raises the pipe it reads to 1 MiB (or the size asked), seen from our end. */
static void
test_pipe_size(gconstpointer data)
{
    const char *opt = data;
    guint want = *opt ? 256 * 1024 : MiB;
    g_autofree char *img = wpath("ps-img");
    const char *opts[] = { opt, NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *max_text = NULL;
    int p[2], size;
    GPid pid;

    g_assert_true(g_file_get_contents("/proc/sys/fs/pipe-max-size", &max_text, NULL, NULL));
    want = MIN(want, (guint)atoi(max_text));
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_cmpint(fcntl(p[1], F_GETPIPE_SZ), ==, 65536);
    pid = spawn_helper(argv, p[0], -1);
    close(p[0]);
    /* Once the helper has read a first byte it has sized the pipe. */
    g_assert_cmpint(write(p[1], "x", 1), ==, 1);
    for (int i = 0; i < 200 && fcntl(p[1], F_GETPIPE_SZ) != (int)want; i++) {
        g_usleep(10000);
    }
    size = fcntl(p[1], F_GETPIPE_SZ);
    close(p[1]);
    g_assert_cmpint(ioht_wait_exit_code(pid), ==, 0);
    g_assert_cmpint(size, ==, (int)want);
    g_unlink(img);
}

static void
add_roundtrips(void)
{
    static const char *modes[] = { "", "--direct", "--fadvise" };
    static const char *names[] = { "buffered", "direct", "fadvise" };
    static const guint64 sizes[] = { 0, 1, 4095, 4096, 4097, MiB - 1, MiB, MiB + 1,
                                     256ULL * MiB + 12345 };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
            RoundTrip *rt = g_new0(RoundTrip, 1);
            g_autofree char *path = g_strdup_printf("/helper/roundtrip/%s/%" G_GUINT64_FORMAT,
                                                    names[m], sizes[s]);
            rt->mode = modes[m];
            rt->size = sizes[s];
            g_test_add_data_func_full(path, rt, test_roundtrip, g_free);
        }
    }
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    add_roundtrips();
    g_test_add_func("/helper/file-to-file", test_file_to_file);
    g_test_add_func("/helper/fd-operands", test_fd_operands);
    g_test_add_data_func("/helper/offset-length/buffered", "", test_offset_length);
    g_test_add_data_func("/helper/offset-length/direct", "--direct", test_offset_length);
    g_test_add_data_func("/helper/offset-length/fadvise", "--fadvise", test_offset_length);
    g_test_add_data_func("/helper/pipe/raised-to-1MiB", "", test_pipe_size);
    g_test_add_data_func("/helper/pipe/pipe-size-option", "--pipe-size=256K", test_pipe_size);
    return iohelper_test_run();
}
