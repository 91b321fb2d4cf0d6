/* fuzz-unzstd.c - libFuzzer target: the engine's zstd frame reader (the unzstd filter of
 * --decompress)
 *
 * The input is fed to the filter chain { "unzstd" } in pieces whose sizes come from its
 * first byte, as a restore would feed it. A damaged image must be refused with one
 * IOH_ERROR line naming the file (EBADMSG "corrupt zstd image", or ENOTSUP for a window
 * over the limit), and the filter must agree with libzstd's streaming decoder as
 * `zstd -dc` uses it: frame after frame, skippable frames skipped, an input ending inside
 * a frame refused; and, as the filter documents, an input without a zstd frame (empty,
 * or only skippable frames) refused too. Accepted, the bytes must be libzstd's.
 *
 * libzstd's own verdict on a malformed frame can depend on how its input is cut: a frame
 * with a content size that arrives whole is decoded in one pass (ZSTD_decompress()'s
 * rules), one arriving in pieces block by block, and the two differ (an empty compressed
 * block: the one pass refuses it, the blocks skip it; `zstd -t` and the CLI's read size
 * decide). So the reference decodes twice, the input whole and byte by byte, and the
 * filter must match one of the two (both, when they agree). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "ioh-error.h"
#include "ioh-filter.h"
#include "ioh-zstd-out.h"

#define MAX_OUT (1 << 20)

static void
check(gboolean ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-unzstd: invariant broken: %s\n", what);
        abort();
    }
}

static gboolean
collect(gpointer data, const void *buf, gsize len, GError **error)
{
    GByteArray *out = data;

    if (out->len + len > MAX_OUT) {
        return ioh_error_set(error, EFBIG, "write", "fuzz", "more than %d bytes", MAX_OUT);
    }
    g_byte_array_append(out, buf, (guint)len);
    return TRUE;
}

/* Feeds @data in pieces of 1 to 256 bytes (sizes from @seed); FALSE with @error. */
static gboolean
feed(IohFilterChain *chain, const uint8_t *data, size_t size, uint8_t seed, GError **error)
{
    size_t off = 0;

    while (off < size) {
        size_t n = MIN(size - off, (size_t)(seed % 251) + 1);

        if (!ioh_filter_chain_data(chain, data + off, n, error)) {
            return FALSE;
        }
        off += n;
        seed = (uint8_t)(seed * 33 + 7);
    }
    return ioh_filter_chain_flush(chain, error);
}

typedef enum { REF_ACCEPTS, REF_REFUSES, REF_TOO_BIG } RefVerdict;

/* The bytes of the frame starting at @off are a zstd frame, not a skippable one. */
static gboolean
is_zstd_frame(const uint8_t *data, size_t size, size_t off)
{
    uint32_t magic;

    if (size - off < sizeof(magic)) {
        return TRUE;   /* (an unfinished frame: refused anyway) */
    }
    memcpy(&magic, data + off, sizeof(magic));
    return (GUINT32_FROM_LE(magic) & ZSTD_MAGIC_SKIPPABLE_MASK) != ZSTD_MAGIC_SKIPPABLE_START;
}

/* libzstd's streaming decoder over @data given @step bytes a call, into @ret: accepts
 * when every frame is complete and one of them is a zstd frame. */
static RefVerdict
reference(const uint8_t *data, size_t size, size_t step, GByteArray *ret)
{
    static guint8 *buf;   /* allocated once: ASan makes a large allocation costly */
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t off = 0, start = 0, hint = 0, zframes = 0;
    RefVerdict v = REF_REFUSES;

    if (!buf) {
        buf = g_malloc(MAX_OUT + 1);
    }
    check(dctx != NULL, "a libzstd context");
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, IOH_ZSTD_WINDOW_LOG_MAX);
    while (off < size && ret->len <= MAX_OUT) {
        ZSTD_inBuffer in = { data + off, MIN(step, size - off), 0 };
        ZSTD_outBuffer ob = { buf, MAX_OUT + 1, 0 };

        hint = ZSTD_decompressStream(dctx, &ob, &in);
        if (ZSTD_isError(hint)) {
            break;
        }
        g_byte_array_append(ret, buf, (guint)ob.pos);
        if (hint == 0) {   /* a frame ended where this call stopped reading */
            zframes += is_zstd_frame(data, size, start);
            start = off + in.pos;
        }
        off += in.pos;
    }
    if (ret->len > MAX_OUT) {
        v = REF_TOO_BIG;
    } else if (off == size && hint == 0 && zframes > 0) {
        v = REF_ACCEPTS;
    }
    ZSTD_freeDCtx(dctx);
    return v;
}

/* The filter's verdict (@refused, else @out) is @v's, with the same bytes. */
static gboolean
same_verdict(gboolean refused, const GByteArray *out, RefVerdict v, const GByteArray *ref)
{
    if (v == REF_REFUSES || refused) {
        return v == REF_REFUSES && refused;
    }
    return ref->len == out->len &&
           (ref->len == 0 || memcmp(ref->data, out->data, ref->len) == 0);
}

/* The filter's error: one IOH_ERROR line naming the file, or its own output limit. */
static void
check_refusal(const GError *error)
{
    check(error != NULL && error->domain == IOH_ERROR, "an IOH_ERROR");
    check(strchr(error->message, '\n') == NULL, "one line");
    check(error->code == EFBIG ||
          (error->code == EBADMSG && strstr(error->message, "fuzz.img: corrupt zstd image")) ||
          (error->code == ENOTSUP && strstr(error->message, "fuzz.img: unsupported zstd image")),
          "a refused image names the file and the cause");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const filters[] = { "unzstd", NULL };
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(GByteArray) whole = g_byte_array_new();
    g_autoptr(GByteArray) bytewise = g_byte_array_new();
    g_autoptr(IohFilterChain) chain = NULL;
    IohCopyOptions opts;
    gboolean refused;
    RefVerdict vw, vb;

    if (size < 1) {
        return 0;
    }
    ioh_copy_options_init(&opts);
    opts.filters = filters;
    chain = ioh_filter_chain_new(&opts, &error);
    check(chain != NULL, "the chain opens");
    ioh_filter_chain_set_sink(chain, "fuzz.img", 1, collect, NULL, out);
    refused = !feed(chain, data + 1, size - 1, data[0], &error);
    g_clear_pointer(&chain, ioh_filter_chain_free);   /* its window, before the others' */
    if (refused) {
        check_refusal(error);
        if (error->code == EFBIG) {
            return 0;   /* the reference cannot tell more */
        }
    }
    vw = reference(data + 1, size - 1, size, whole);
    vb = reference(data + 1, size - 1, 1, bytewise);
    if (vw == REF_TOO_BIG || vb == REF_TOO_BIG) {
        return 0;
    }
    check(same_verdict(refused, out, vw, whole) || same_verdict(refused, out, vb, bytewise),
          refused ? "libzstd's streaming decoder refuses what the filter refused"
                  : "libzstd's streaming decoder accepts, with the same bytes, what the "
                    "filter accepted");
    return 0;
}
