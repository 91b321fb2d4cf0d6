/* test-zstd.c - the zstd and unzstd filters (ioh-filter-zstd.c) in-process, through a
 * filter chain: what zstd makes is standard zstd (libzstd decodes it), unzstd gives back
 * the exact stream, and a damaged image (a changed byte, a cut frame, no frame) is
 * refused with EBADMSG; then a file-to-file copy through each, O_DIRECT where the file
 * system has it (the vectored, aligned output). */
#include <errno.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <zstd.h>

#include "engine-util.h"
#include "ioh-error.h"
#include "ioh-filter.h"

static char *workdir;
static gboolean have_direct;

static gboolean
keep_bytes(gpointer data, const void *buf, gsize len, GError **error)
{
    (void)error;
    g_byte_array_append(data, buf, (guint)len);
    return TRUE;
}

/* @len bytes of @in through the filter @name in pieces of @piece bytes; the output, or
 * NULL with @error set by the filter (a transform, the flush or the finish). */
static GByteArray *
through(const char *name, const guint8 *in, gsize len, gsize piece, GError **error)
{
    const char *filters[] = { name, NULL };
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(IohFilterChain) chain = NULL;
    IohCopyOptions opts;
    IohStats stats = { 0 };

    ioh_copy_options_init(&opts);
    opts.filters = filters;
    opts.compress_level = 3;
    opts.threads = 2;
    chain = ioh_filter_chain_new(&opts, error);
    g_assert_nonnull(chain);
    ioh_filter_chain_set_sink(chain, "image", 1, keep_bytes, NULL, out);
    if (!engt_chain_run(chain, in, len, piece, &stats, error)) {
        return NULL;
    }
    g_assert_cmpstr(stats.compression, ==, "zstd");
    return g_steal_pointer(&out);
}

/* libzstd's own streaming decoder over every frame of @img: the stream. */
static GByteArray *
libzstd_decode(const GByteArray *img)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    GByteArray *out = g_byte_array_new();
    ZSTD_inBuffer in = { img->data, img->len, 0 };
    guint8 buf[65536];
    size_t r = 0;

    while (in.pos < in.size || r != 0) {
        ZSTD_outBuffer ob = { buf, sizeof(buf), 0 };
        r = ZSTD_decompressStream(d, &ob, &in);
        g_assert_false(ZSTD_isError(r));
        g_byte_array_append(out, buf, (guint)ob.pos);
        if (in.pos == in.size && ob.pos < ob.size && r != 0) {
            g_assert_not_reached();    /* cut inside a frame */
        }
    }
    ZSTD_freeDCtx(d);
    return out;
}

/* A stream of compressible text, random bytes (stored raw after the probe) and zeros. */
static guint8 *
mixed_stream(gsize *ret_len)
{
    gsize text = 3 * MiB, rnd = 2 * MiB, zero = MiB + 4097;
    guint8 *s = g_malloc0(text + rnd + zero);
    g_autofree char *r = engt_random(rnd, 5);

    for (gsize i = 0; i < text; i++) {
        s[i] = "the quick brown fox jumps over the lazy dog, again and again\n"[i % 61];
    }
    memcpy(s + text, r, rnd);
    *ret_len = text + rnd + zero;
    return s;
}

static void
test_roundtrip(gconstpointer data)
{
    gsize piece = GPOINTER_TO_SIZE(data), len;
    g_autofree guint8 *in = mixed_stream(&len);
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) img = through("zstd", in, len, piece, &error);
    g_autoptr(GByteArray) back = NULL;
    g_autoptr(GByteArray) lib = NULL;

    g_assert_no_error(error);
    g_test_message("%zu bytes in pieces of %zu: image %u bytes", len, piece, img->len);
    g_assert_cmpuint(img->len, <, len - 3 * MiB);     /* the text and zeros shrank */
    g_assert_cmpuint(img->len, >, 2 * MiB);           /* the random part did not */
    lib = libzstd_decode(img);
    g_assert_cmpuint(lib->len, ==, len);
    g_assert_true(memcmp(lib->data, in, len) == 0);
    back = through("unzstd", img->data, img->len, piece, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->len, ==, len);
    g_assert_true(memcmp(back->data, in, len) == 0);
}

/* The empty stream is one empty frame, and decodes to nothing. */
static void
test_empty(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) img = through("zstd", NULL, 0, 1, &error);
    g_autoptr(GByteArray) back = NULL;

    g_assert_no_error(error);
    g_assert_cmpuint(img->len, >, 0);
    back = through("unzstd", img->data, img->len, MiB, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->len, ==, 0);
}

/* Refused: "decompress image: corrupt zstd image: ..." (EBADMSG), whatever came before. */
static void
assert_refused(const guint8 *img, gsize len, const char *why)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) back = through("unzstd", img, len, 65536, &error);

    g_assert_null(back);
    g_assert_error(error, IOH_ERROR, EBADMSG);
    ioht_assert_contains(error->message, "image");
    ioht_assert_contains(error->message, why);
}

static void
test_refused(void)
{
    g_autofree guint8 *in = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) img = NULL;
    g_autofree char *junk = engt_random(100000, 9);
    gsize len;

    in = mixed_stream(&len);
    img = through("zstd", in, 3 * MiB, MiB, &error);    /* the text: one compressed frame */
    g_assert_no_error(error);
    img->data[img->len / 2] ^= 0x10;                    /* a changed byte */
    assert_refused(img->data, img->len, "corrupt zstd image");
    img->data[img->len / 2] ^= 0x10;
    assert_refused(img->data, img->len - 3, "truncated");   /* cut inside the frame */
    assert_refused(img->data, 0, "empty");
    assert_refused((const guint8 *)junk, 100000, "corrupt zstd image");
}

static void
test_copy(gconstpointer data)
{
    IohCacheMode mode = GPOINTER_TO_INT(data);
    g_autofree char *img = g_build_filename(workdir, "img", NULL);
    const char *zstd[] = { "zstd", NULL }, *unzstd[] = { "unzstd", NULL };
    g_autoptr(GByteArray) back = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) dst = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autofree guint8 *in = NULL;
    IohCopyOptions opts;
    IohStats stats;
    gsize len;

    if (mode == IOH_CACHE_DIRECT && !have_direct) {
        g_test_skip("the work folder's file system refuses O_DIRECT");
        return;
    }
    in = mixed_stream(&len);
    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.compress_level = 1;
    opts.filters = zstd;
    dst = ioh_end_open(img, TRUE, 0, &error);
    g_assert_true(engt_save(in, len, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_cmpuint(stats.bytes, ==, len);
    g_assert_cmpuint(stats.stored, <, len);
    g_assert_cmpuint(stats.synced, ==, stats.stored);
    opts.filters = unzstd;
    src = ioh_end_open(img, FALSE, 0, &error);
    g_assert_true(engt_restore(src, &opts, &stats, back, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(stats.bytes, ==, len);
    g_assert_cmpuint(back->len, ==, len);
    g_assert_true(memcmp(back->data, in, len) == 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);
    g_test_add_data_func("/zstd/roundtrip/pieces-1MiB", GSIZE_TO_POINTER(MiB), test_roundtrip);
    g_test_add_data_func("/zstd/roundtrip/pieces-4097", GSIZE_TO_POINTER(4097), test_roundtrip);
    g_test_add_func("/zstd/roundtrip/empty", test_empty);
    g_test_add_func("/zstd/refused", test_refused);
    g_test_add_data_func("/zstd/copy/buffered", GINT_TO_POINTER(IOH_CACHE_BUFFERED), test_copy);
    g_test_add_data_func("/zstd/copy/direct", GINT_TO_POINTER(IOH_CACHE_DIRECT), test_copy);
    return ioht_run_tests(&workdir);
}
