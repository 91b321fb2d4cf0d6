/* fuzz-unzstd.c - libFuzzer target: the engine's zstd frame reader (the unzstd filter of
 * --decompress)
 *
 * The input is fed to the filter chain { "unzstd" } in pieces whose sizes come from its
 * first byte, as a restore would feed it. A damaged image must be refused with one
 * IOH_ERROR/EBADMSG line naming the file; an accepted one must decode to what libzstd's
 * one-shot ZSTD_decompress() makes of the same bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "ioh-error.h"
#include "ioh-filter.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const filters[] = { "unzstd", NULL };
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(IohFilterChain) chain = NULL;
    IohCopyOptions opts;
    g_autofree guint8 *ref = NULL;
    size_t ref_len;

    if (size < 1) {
        return 0;
    }
    ioh_copy_options_init(&opts);
    opts.filters = filters;
    chain = ioh_filter_chain_new(&opts, &error);
    check(chain != NULL, "the chain opens");
    ioh_filter_chain_set_sink(chain, "fuzz.img", 1, collect, NULL, out);
    if (!feed(chain, data + 1, size - 1, data[0], &error)) {
        check(error != NULL && error->domain == IOH_ERROR, "an IOH_ERROR");
        check(strchr(error->message, '\n') == NULL, "one line");
        check(error->code == EFBIG || (error->code == EBADMSG &&
                                       strstr(error->message, "fuzz.img: corrupt zstd image")),
              "a corrupt image names the file");
        return 0;
    }
    ref = g_malloc(MAX_OUT + 1);
    ref_len = ZSTD_decompress(ref, MAX_OUT + 1, data + 1, size - 1);
    check(!ZSTD_isError(ref_len), "libzstd accepts what the filter accepted");
    check(ref_len == out->len && (ref_len == 0 || memcmp(ref, out->data, ref_len) == 0),
          "the same bytes as ZSTD_decompress");
    return 0;
}
