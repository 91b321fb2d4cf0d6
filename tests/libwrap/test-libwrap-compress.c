/* test-libwrap-compress.c - libwrap against the real iohelper binary, through the public
 * API only: compression (/libwrap/compress/...)
 */
#include "config.h"

#include "libwrap-util.h"

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
    /* auto stores raw where this disk is faster than the compressor: never much over */
    g_assert_cmpuint(stored, <, strstr(c->spec, "auto") ? size + size / 100 : size / 2);
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
        g_assert_nonnull(strstr(error->message, "is not zstd or zstd:LEVEL (LEVEL -7 to 19) or auto"));
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
    libwrap_test_init(&argc, &argv);
    {
        static const CompressCase cases[] = {
            { IOH_WRAP_NONE, "zstd", 0 },
            { IOH_WRAP_POLLABLE, "zstd:-3", 2 },
            { IOH_WRAP_FADVISE, "zstd:3", 1 },
            { IOH_WRAP_DIRECT, "zstd", 2 },
            { IOH_WRAP_DIRECT, "auto", 0 },
            { IOH_WRAP_NONE, "zstd:auto", 1 },
        };
        static const char *const names[] = { "none", "pollable", "fadvise", "direct",
                                             "auto-direct", "auto-none" };

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
