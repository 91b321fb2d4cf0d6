/* test-iohelper-direct.c - the iohelper binary, end to end (real pipes, real files on
 * ext4, O_DIRECT): O_DIRECT's edges and what each mode leaves in the page cache
 * (/helper/direct/..., /helper/cache/...)
 */
#include "iohelper-util.h"

/* ---- page cache: --direct and --fadvise leave (almost) nothing behind ---- */

static void
test_cache_left(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = wpath("pc-src");
    g_autofree char *img = wpath("pc-img");
    const char *opts[] = { mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);
    guint64 size = 96 * MiB + 100, cached;

    if (g_str_equal(mode, "--direct") && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, size, 5);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, img));
    g_unlink(src);
    /* compare reads the image through the cache: measure a fresh save instead */
    g_unlink(img);
    ioht_write_random_file(src, size, 5);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    cached = ioht_cached_bytes(img);
    g_test_message("%s: %" G_GUINT64_FORMAT " KiB of %" G_GUINT64_FORMAT " KiB cached", mode,
                   cached / 1024, size / 1024);
    if (g_str_equal(mode, "--direct")) {
        g_assert_cmpuint(cached, <=, 64 * 1024);    /* only the buffered tail */
    } else {
        g_assert_cmpuint(cached, <=, 24 * MiB);
    }
    g_unlink(src);
    g_unlink(img);
}

/* ---- block devices: O_DIRECT with an unaligned tail, no padding written ---- */

static void
test_block_device(void)
{
    g_autofree char *backing = wpath("blk-backing");
    g_autofree char *src = wpath("blk-src");
    g_autofree char *back = wpath("blk-back");
    g_autofree char *dev = NULL;
    g_autofree char *out = NULL;
    g_autofree char *contents = NULL;
    const guint64 size = 3 * MiB + 1234;
    gsize len;
    int st;

    if (skip_unless_root()) {
        return;
    }
    ioht_write_random_file(src, size, 31);
    {
        int fd = open(backing, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(ftruncate(fd, 8 * MiB), ==, 0);
        close(fd);
    }
    {
        g_autofree char *cmd = g_strdup_printf("losetup --find --show %s", backing);
        if (!g_spawn_command_line_sync(cmd, &out, NULL, &st, NULL) || st != 0) {
            g_test_skip("losetup failed: no loop devices here");
            g_unlink(backing);
            g_unlink(src);
            return;
        }
        dev = g_strstrip(g_strdup(out));
    }
    {
        const char *opts[] = { "--direct", NULL };
        g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", dev);
        const char *ropts[] = { "--direct", "--length=3146962", NULL };
        g_auto(GStrv) restore = helper_argv(ioht_helper_path(), ropts, dev, "-");
        int rc1 = run_fed(save, src, -1, NULL);
        int rc2 = run_drained(restore, -1, back, NULL);
        g_autofree char *cmd = g_strdup_printf("losetup -d %s", dev);
        g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL);
        g_assert_cmpint(rc1, ==, 0);
        g_assert_cmpint(rc2, ==, 0);
    }
    g_assert_true(ioht_files_equal(src, back));
    /* The bytes past the stream stayed zero: the tail was not padded. */
    g_assert_true(g_file_get_contents(backing, &contents, &len, NULL));
    for (gsize i = size; i < size + 8192; i++) {
        g_assert_cmpint(contents[i], ==, 0);
    }
    g_unlink(backing);
    g_unlink(src);
    g_unlink(back);
}

/* O_DIRECT needs an aligned start: an unaligned --offset is refused up front. */
static void
test_direct_unaligned_offset(void)
{
    g_autofree char *src = wpath("uo-src");
    g_autofree char *img = wpath("uo-img");
    const char *opts[] = { "--direct", "--offset=100", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *err = NULL;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, 8192, 16);
    g_assert_cmpint(run_fed(argv, src, -1, &err), ==, 1);
    assert_one_line(err, "not a multiple of");
    g_unlink(src);
    g_unlink(img);
}

/* ---- the io_uring save's relay pipe (ioh-relay.c): it splices the stream out of
 * the producer's pipe, so it must take exactly the stream, at the pipe's edges, and with
 * --length leave every later byte in the producer's pipe ---- */

static void
test_relay_sizes(void)
{
    g_autofree char *src = wpath("rl-src");
    g_autofree char *img = wpath("rl-img");
    const char *opts[] = { "--direct", "--stats", NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);
    const guint64 sizes[] = { 0, 1, 4095, 4096, MiB - 1, MiB, MiB + 1, 9 * MiB + 4097 };

    if (skip_unless_direct()) {
        return;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *err = NULL;

        ioht_write_random_file(src, sizes[i], 50 + (guint)i);
        g_assert_cmpint(run_fed(save, src, -1, &err), ==, 0);
        g_test_message("%" G_GUINT64_FORMAT " bytes: %s", sizes[i], err);
        g_assert_true(ioht_files_equal(src, img));
        g_unlink(img);
    }
    g_unlink(src);
}

static void
test_relay_length(void)
{
    g_autofree char *dir = wpath("");
    g_autofree char *src = wpath("rn-src");
    g_autofree char *img = wpath("rn-img");
    g_autofree char *left = wpath("rn-rest");
    g_autofree char *err = NULL;
    g_autofree char *all = NULL;
    g_autofree char *got = NULL;
    g_autofree char *rest = NULL;
    gsize n_all, n_got, n_rest;
    const guint64 length = 3 * MiB + 5;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, length + 64 * 1024, 60);
    /* One pipe for both: what the helper left in it, cat reads after. */
    g_assert_cmpint(ioht_sh(dir, &err, "cat rn-src | { $H --direct --stats --length=%"
                            G_GUINT64_FORMAT " - rn-img && cat > rn-rest; }", length), ==, 0);
    g_test_message("%s", err);
    g_assert_true(g_file_get_contents(src, &all, &n_all, NULL));
    g_assert_true(g_file_get_contents(img, &got, &n_got, NULL));
    g_assert_true(g_file_get_contents(left, &rest, &n_rest, NULL));
    g_assert_cmpuint(n_got, ==, length);
    g_assert_true(memcmp(got, all, length) == 0);
    g_assert_cmpuint(n_rest, ==, n_all - length);
    g_assert_true(memcmp(rest, all + length, n_rest) == 0);
    g_unlink(src);
    g_unlink(img);
    g_unlink(left);
}

/* The ring's reader (a filtered save: a checksum) reads the pipe through a relay pipe as
 * well: exactly the stream at every size around the pipe's edges, and with --length
 * every later byte left in the producer's pipe. */
static void
test_ring_relay(void)
{
    g_autofree char *dir = wpath("");
    g_autofree char *src = wpath("rr-src");
    g_autofree char *img = wpath("rr-img");
    const guint64 sizes[] = { 0, 1, 4095, MiB - 1, MiB + 1, 9 * MiB + 4097 };

    if (skip_unless_direct()) {
        return;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *err = NULL;

        ioht_write_random_file(src, sizes[i], 70 + (guint)i);
        g_assert_cmpint(ioht_sh(dir, &err, "cat rr-src | G_MESSAGES_DEBUG=iohelper $H "
                                "--direct --checksum=xxh3 - rr-img"), ==, 0);
        g_assert_nonnull(strstr(err, "read through a relay pipe"));
        g_assert_true(ioht_files_equal(src, img));
        g_unlink(img);
    }
    g_unlink(src);
}

static void
test_ring_relay_length(void)
{
    g_autofree char *dir = wpath("");
    g_autofree char *src = wpath("rq-src");
    g_autofree char *left = wpath("rq-rest");
    g_autofree char *err = NULL;
    const guint64 length = 3 * MiB + 5;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, length + 64 * 1024, 71);
    g_assert_cmpint(ioht_sh(dir, &err, "cat rq-src | { G_MESSAGES_DEBUG=iohelper $H --direct "
                            "--checksum=xxh3 --length=%" G_GUINT64_FORMAT " - rq-img && "
                            "cat > rq-rest; } && head -c %" G_GUINT64_FORMAT " rq-src | "
                            "cmp - rq-img && tail -c +%" G_GUINT64_FORMAT " rq-src | "
                            "cmp - rq-rest", length, length, length + 1), ==, 0);
    g_assert_nonnull(strstr(err, "read through a relay pipe"));
    g_unlink(src);
    g_unlink(left);
}

/* --stats of a --direct save whose unaligned tail went through the page cache (O_DIRECT
 * cleared): says how many bytes, in text and JSON; an aligned stream says nothing more
 * (before, both said only "direct save"). With and without io_uring. */
static void
test_stats_buffered_tail(void)
{
    g_autofree char *dir = wpath("");
    g_autofree char *src = wpath("st-src");
    g_autofree char *img = wpath("st-img");
    const char *cmds[] = {
        "$H --direct --stats - st-img",
        "IOHELPER_IO_URING=off $H --direct --stats=json - st-img",
    };
    g_autofree char *aligned = NULL;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, 3 * MiB + 1000, 72);
    for (gsize i = 0; i < G_N_ELEMENTS(cmds); i++) {
        g_autofree char *err = NULL;

        g_assert_cmpint(ioht_sh(dir, &err, "cat st-src | %s", cmds[i]), ==, 0);
        g_test_message("%s", err);
        g_assert_nonnull(strstr(err, i ? "\"buffered_bytes\":1000"
                                       : "direct save (its last 1000 bytes through the "
                                         "page cache"));
        g_assert_true(ioht_files_equal(src, img));
    }
    ioht_write_random_file(src, 3 * MiB, 73);
    g_assert_cmpint(ioht_sh(dir, &aligned, "cat st-src | %s", cmds[0]), ==, 0);
    g_assert_null(strstr(aligned, "page cache"));
    g_unlink(src);
    g_unlink(img);
}

/* ---- case 4: O_APPEND with O_DIRECT: the write lands at the file's end; say so when
 * that end is unaligned, and append exactly when it is aligned ---- */
static void
test_append_direct(void)
{
    g_autofree char *src = wpath("ad-src");
    g_autofree char *img = wpath("ad-img");
    const char *opts[] = { "--direct", NULL };
    g_auto(GStrv) standalone = helper_argv(ioht_helper_path(), opts, "-", "fd:1");
    g_autofree char *err = NULL;
    g_autofree char *err2 = NULL;
    g_autofree char *err3 = NULL;
    int fd;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, MiB + 3, 43);
    ioht_write_random_file(img, 100, 44);
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(run_fed(standalone, src, fd, &err), ==, 1);
    close(fd);
    assert_one_line(err, "O_APPEND, so writes land at its end, offset 100");
    g_assert_null(strstr(err, "refused by its file system"));
    {   /* libvirt's form */
        g_auto(GStrv) lv = helper_argv(ioht_helper_path(), NULL, img, "1");
        fd = open(img, O_WRONLY | O_APPEND | O_DIRECT | O_CLOEXEC);
        g_assert_cmpint(run_fed(lv, src, fd, &err2), ==, 1);
        close(fd);
        assert_one_line(err2, "O_APPEND, so writes land at its end, offset 100");
    }
    g_assert_cmpuint(file_size(img), ==, 100);
    ioht_write_random_file(img, 8192, 44);
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(run_fed(standalone, src, fd, &err3), ==, 0);
    close(fd);
    g_assert_cmpuint(file_size(img), ==, 8192 + MiB + 3);
    g_unlink(src);
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    g_test_add_data_func("/helper/cache/direct-leaves-nothing", "--direct", test_cache_left);
    g_test_add_data_func("/helper/cache/fadvise-leaves-little", "--fadvise", test_cache_left);
    g_test_add_func("/helper/direct/block-device-tail", test_block_device);
    g_test_add_func("/helper/direct/unaligned-offset-refused", test_direct_unaligned_offset);
    g_test_add_func("/helper/direct/append-lands-at-end", test_append_direct);
    g_test_add_func("/helper/direct/stats-buffered-tail", test_stats_buffered_tail);
    g_test_add_func("/helper/direct/relay-sizes", test_relay_sizes);
    g_test_add_func("/helper/direct/relay-length-leaves-the-rest", test_relay_length);
    g_test_add_func("/helper/ring/relay-sizes", test_ring_relay);
    g_test_add_func("/helper/ring/relay-length-leaves-the-rest", test_ring_relay_length);
    return iohelper_test_run();
}
