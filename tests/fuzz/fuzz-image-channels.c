/* fuzz-image-channels.c - libFuzzer target: the channel index of a multi-channel image
 * (qemu-glue/qg-image-channels.c, format version 4)
 *
 * The input is the header's JSON metadata itself: the target seals it into a version 4
 * header (the fixed part, its length and checksum made right), so every execution reaches
 * the index checks (fuzz-image-header mostly stops at the envelope). The index is what a
 * hostile image author writes: each helper of a restore is given one region to read, so
 * an accepted index must hold regions that cannot make one helper read the header,
 * another channel's bytes or past what the file's size allows. Invariants of what is
 * accepted: 1 to QG_IMAGE_CHANNELS_MAX channels, a 32-hex-digit uuid, regions 4096-aligned,
 * each after the main stream and the region before, ends representable, a raw region's
 * two lengths equal (a compressed or age-encrypted one's may differ), each channel at least
 * its 64-byte init packet long; the file-size check refuses one byte short of the last end and takes
 * the last end; what is accepted encodes to a header that decodes to the same index. */
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
        fprintf(stderr, "fuzz-image-channels: invariant broken: %s\n", what);
        abort();
    }
}

/* A version 4 header whose metadata is @json (@len bytes), sealed. */
static gboolean
seal(const uint8_t *json, size_t len, guint8 *buf)
{
    g_autoptr(QgImageInfo) base = qg_image_info_new();
    guint64 h;

    if (len > QG_IMAGE_HEADER_SIZE - 32) {
        return FALSE;
    }
    base->stream_offset = QG_IMAGE_HEADER_SIZE;
    check(qg_image_header_encode(base, buf, NULL), "the base header encodes");
    memset(buf + 32, 0, QG_IMAGE_HEADER_SIZE - 32);
    memcpy(buf + 32, json, len);
    buf[8] = 4, buf[9] = buf[10] = buf[11] = 0;
    for (int i = 0; i < 4; i++) {
        buf[16 + i] = (guint8)(len >> (8 * i));
    }
    h = XXH3_64bits(buf + 32, len);
    for (int i = 0; i < 8; i++) {
        buf[24 + i] = (guint8)(h >> (8 * i));
    }
    return TRUE;
}

static void
check_regions(const QgImageInfo *info)
{
    guint64 end = info->stream_offset + info->stored_length;
    g_autoptr(GError) error = NULL;

    check(info->channels >= 1 && info->channels <= QG_IMAGE_CHANNELS_MAX, "channel count");
    check(info->uuid && strlen(info->uuid) == 32 &&
          strspn(info->uuid, "0123456789abcdef") == 32, "uuid of 32 hex digits");
    check(end >= QG_IMAGE_HEADER_SIZE, "the main stream after the header");
    for (guint i = 0; i < info->channels; i++) {
        const QgImageRegion *r = &info->regions[i];

        check(r->offset % 4096 == 0, "a region aligned");
        check(r->offset >= end, "a region after what comes before it");
        check(r->stored_length <= (guint64)G_MAXINT64 - r->offset, "a region's end fits");
        /* compressed or encrypted (age's tags: issue 31), a region's stored bytes differ */
        check(info->compression || info->encryption || r->length == r->stored_length,
              "a raw region's lengths");
        /* shorter than its init packet, QEMU would wait on the channel for the rest */
        check(r->length >= 64, "a region holds at least a channel's init packet");
        /* a stored length of 0 would let its helper read to the file's end */
        check(r->stored_length > 0, "a region has stored bytes");
        end = r->offset + r->stored_length;
    }
    check(qg_image_channels_check_size(info, end, "f", NULL), "the file ending at the end");
    check(end == 0 || !qg_image_channels_check_size(info, end - 1, "f", &error),
          "one byte short refused");
}

static void
check_again(const QgImageInfo *info)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) again = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    if (!qg_image_header_encode(info, buf, &error)) {
        check(strstr(error->message, "too long") != NULL, "re-encode");
        return;
    }
    again = qg_image_header_decode(buf, sizeof(buf), "again.img", &error);
    check(again != NULL, "decode what we encoded");
    check(again->channels == info->channels, "same channels");
    check(g_strcmp0(again->uuid, info->uuid) == 0, "same uuid");
    check(g_strcmp0(again->multifd_compression, info->multifd_compression) == 0,
          "same multifd compression");
    /* a record of encryption lost on the way would have a restore feed QEMU ciphertext */
    check(g_strcmp0(again->encryption, info->encryption) == 0, "same encryption");
    check(g_strcmp0(again->compression, info->compression) == 0, "same compression");
    check(memcmp(again->regions, info->regions,
                 sizeof(QgImageRegion) * info->channels) == 0, "same regions");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    if (!seal(data, size, buf)) {
        return 0;
    }
    info = qg_image_header_decode(buf, sizeof(buf), "fuzz.img", &error);
    if (!info) {
        check(error != NULL && error->domain == QG_IMAGE_ERROR, "an image error");
        check(strchr(error->message, '\n') == NULL, "one line");
        return 0;
    }
    check(info->channels > 0, "version 4 accepted only with channels");
    check_regions(info);
    check_again(info);
    return 0;
}
