/* fuzz-image-header.c - libFuzzer target: qemu-glue's image header parser
 *
 * qg_image_header_decode() must refuse any damaged header with one error (and no GLib
 * critical or warning, which abort here), and what it accepts must encode again into a
 * header that decodes to the same information. Each input is tried as it is, and again
 * with its metadata checksum made right, so the fuzzer gets past the checksum to the JSON
 * parser and the member checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "qg-image.h"

static void
check(gboolean ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-image-header: invariant broken: %s\n", what);
        abort();
    }
}

static guint32
get_version(const uint8_t *data)
{
    return data[8] | data[9] << 8 | data[10] << 16 | (guint32)data[11] << 24;
}

static void
decode(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    g_autoptr(QgImageInfo) again = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    info = qg_image_header_decode(data, size, "fuzz.img", &error);
    if (!info) {
        check(error != NULL && error->domain == QG_IMAGE_ERROR, "an image error");
        check(strchr(error->message, '\n') == NULL, "one line");
        return;
    }
    check(error == NULL, "no error on success");
    check(size >= 32, "accepted only with the fixed part");
    check(info->stream_offset == QG_IMAGE_HEADER_SIZE, "stream at the header size");
    /* What we accept, we can write back (unless escaping made the metadata too long). */
    if (!qg_image_header_encode(info, buf, &error)) {
        check(strstr(error->message, "too long") != NULL, "re-encode");
        return;
    }
    again = qg_image_header_decode(buf, sizeof(buf), "again.img", &error);
    check(again != NULL, "decode what we encoded");
    check(again->stream_length == info->stream_length, "same length");
    check(again->checksum == info->checksum, "same checksum");
    check(again->ram_size == info->ram_size, "same RAM size");
    check(again->running == info->running, "same state");
    check(g_strcmp0(again->machine, info->machine) == 0, "same machine");
    check(g_strcmp0(again->qemu_version, info->qemu_version) == 0, "same version");
    /* format version 2: the compression survives, and a raw image stores the stream */
    check(g_strcmp0(again->compression, info->compression) == 0, "same compression");
    check(!info->compression || again->compress_level == info->compress_level,
          "same level");
    check(again->stored_length == info->stored_length, "same stored length");
    /* format version 3: an encrypted image says so, whatever else it holds */
    check(g_strcmp0(again->encryption, info->encryption) == 0, "same encryption");
    check(!info->encryption || g_str_equal(info->encryption, "age"), "age only");
    check(info->encryption || get_version(data) != QG_IMAGE_FORMAT_VERSION_ENCRYPTED,
          "a version 3 header is encrypted");
    check(info->compression || info->encryption || info->stored_length == info->stream_length,
          "a raw image stores the stream as it is");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    decode(data, size);
    if (size >= 32) {
        g_autofree guint8 *fixed = g_memdup2(data, size);
        guint32 jlen = fixed[16] | fixed[17] << 8 | fixed[18] << 16 | (guint32)fixed[19] << 24;
        if (jlen <= size - 32) {
            guint64 h = XXH3_64bits(fixed + 32, jlen);
            for (int i = 0; i < 8; i++) {
                fixed[24 + i] = (guint8)(h >> (8 * i));
            }
            decode(fixed, size);
        }
    }
    return 0;
}
