/* test-libwrap-checksum.c - libwrap against the real iohelper binary, through the public
 * API only: checksum (/libwrap/checksum/..., /libwrap/options/...)
 */
#include "config.h"

#include "libwrap-util.h"

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

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    g_test_add("/libwrap/checksum/roundtrip", SumFixture, NULL, sum_setup,
               test_checksum_roundtrip, sum_teardown);
    g_test_add("/libwrap/checksum/verify-mismatch", SumFixture, NULL, sum_setup,
               test_checksum_mismatch, sum_teardown);
    g_test_add("/libwrap/checksum/refuses", SumFixture, NULL, sum_setup,
               test_checksum_refuses, sum_teardown);
    g_test_add("/libwrap/options/refuses", SumFixture, NULL, sum_setup,
               test_options_refuses, sum_teardown);
    return g_test_run();
}
