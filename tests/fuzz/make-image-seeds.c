/* make-image-seeds.c - writes the seed corpus of fuzz-image-header into a folder:
 * a valid header and the damaged kinds the parser must refuse (truncated, wrong magic,
 * the placeholder, wrong version, oversized metadata length, bad JSON, wrong checksum);
 * a valid compressed header (format version 2) and its damaged kinds (a version 1
 * header carrying compression, an unknown method, a level out of range); a valid
 * encrypted header (format version 3) and its forged kinds.
 * Built and run by run-fuzzers only to refresh tests/fuzz/corpus-image-header. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "qg-image.h"

static void
put(const char *dir, const char *name, const guint8 *buf, gsize len)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    if (!g_file_set_contents(path, (const char *)buf, (gssize)len, NULL)) {
        g_printerr("cannot write %s\n", path);
        exit(1);
    }
}

static void
reseal(guint8 *buf, guint32 jlen)
{
    guint64 h = XXH3_64bits(buf + 32, jlen);

    for (int i = 0; i < 8; i++) {
        buf[24 + i] = (guint8)(h >> (8 * i));
    }
}

/* Writes @json as the metadata of header @b (version @version), resealed, as @name. */
static void
put_json(const char *dir, const char *name, guint8 *b, guint32 version, const char *json)
{
    guint32 jlen = (guint32)strlen(json);

    memset(b + 32, 0, QG_IMAGE_HEADER_SIZE - 32);
    memcpy(b + 32, json, jlen);
    b[8] = (guint8)version, b[9] = b[10] = b[11] = 0;
    b[16] = (guint8)jlen, b[17] = (guint8)(jlen >> 8), b[18] = b[19] = 0;
    reseal(b, jlen);
    put(dir, name, b, QG_IMAGE_HEADER_SIZE);
}

/* The compressed kinds (issue 12): format version 2 with "stored-length" and
 * "compression" in "stream". */
static void
compressed_seeds(const char *dir, QgImageInfo *info)
{
    g_autoptr(GError) error = NULL;
    guint8 b[QG_IMAGE_HEADER_SIZE];
    g_autofree char *json = NULL;
    guint32 jlen;

    info->compression = g_strdup("zstd");
    info->compress_level = -3;
    info->stored_length = 45678901;
    if (!qg_image_header_encode(info, b, &error)) {
        g_printerr("%s\n", error->message);
        exit(1);
    }
    jlen = b[16] | b[17] << 8 | b[18] << 16 | (guint32)b[19] << 24;
    put(dir, "valid-compressed", b, sizeof(b));
    put(dir, "valid-compressed-json-only", b, 32 + jlen);
    json = g_strndup((const char *)b + 32, jlen);
    /* the same metadata under version 1: the previous release's format */
    put_json(dir, "compressed-as-version-1", b, 1, json);
    /* an unknown method, a level out of range, a stored length missing */
    put_json(dir, "compressed-unknown-method", b, 2,
             "{\"qemu-version\": \"7.2.0\", \"machine\": \"pc\", \"ram-size\": 1,"
             " \"time\": \"2025-12-02T00:00:00Z\", \"running\": true, \"stream\":"
             " {\"offset\": 4096, \"length\": 10, \"checksum\": \"xxh3-64:0123456789abcdef\","
             " \"stored-length\": 5, \"compression\": {\"method\": \"lz4\", \"level\": 1}}}");
    put_json(dir, "compressed-level-out-of-range", b, 2,
             "{\"qemu-version\": \"7.2.0\", \"machine\": \"pc\", \"ram-size\": 1,"
             " \"time\": \"2025-12-02T00:00:00Z\", \"running\": true, \"stream\":"
             " {\"offset\": 4096, \"length\": 10, \"checksum\": \"xxh3-64:0123456789abcdef\","
             " \"stored-length\": 5, \"compression\": {\"method\": \"zstd\", \"level\": 99}}}");
    put_json(dir, "compressed-no-stored-length", b, 2,
             "{\"qemu-version\": \"7.2.0\", \"machine\": \"pc\", \"ram-size\": 1,"
             " \"time\": \"2025-12-02T00:00:00Z\", \"running\": true, \"stream\":"
             " {\"offset\": 4096, \"length\": 10, \"checksum\": \"xxh3-64:0123456789abcdef\","
             " \"compression\": {\"method\": \"zstd\", \"level\": 1}}}");
}

/* The encrypted kinds (issue 28): format version 3 with "stored-length" and
 * "encryption" in "stream"; the member forged into other versions must be refused (a
 * version 2 or 4 header claiming age, or a version 3 without it, would have the restore
 * feed QEMU ciphertext or skip the identity). */
static void
encrypted_seeds(const char *dir, QgImageInfo *info)
{
    static const char *const enc[] = {
        "\"encryption\": {\"format\": \"age\"}", "\"encryption\": {\"format\": \"gpg\"}",
        "\"encryption\": \"age\"",
    };
    g_autoptr(GError) error = NULL;
    guint8 b[QG_IMAGE_HEADER_SIZE];
    char json[512];

    info->encryption = g_strdup("age");
    info->stored_length = 123486765;
    if (!qg_image_header_encode(info, b, &error)) {
        g_printerr("%s\n", error->message);
        exit(1);
    }
    put(dir, "valid-encrypted", b, sizeof(b));
#define ENC_JSON(stored, e) \
    g_snprintf(json, sizeof(json), "{\"qemu-version\": \"7.2.0\", \"machine\": \"pc\", " \
               "\"ram-size\": 536870912, \"time\": \"2025-12-02T00:00:00Z\", \"running\": " \
               "true, \"stream\": {\"offset\": 4096, \"length\": 5, \"checksum\": " \
               "\"xxh3-64:0123456789abcdef\"%s%s}}", stored, e)
    ENC_JSON(", \"stored-length\": 5, ", enc[0]);
    put_json(dir, "encrypted-as-version-2", b, 2, json);
    put_json(dir, "encrypted-as-version-4", b, 4, json);
    put_json(dir, "encrypted-as-version-1", b, 1, json);
    ENC_JSON(", ", enc[0]);
    put_json(dir, "encrypted-no-stored-length", b, 3, json);
    ENC_JSON(", \"stored-length\": 5, ", enc[1]);
    put_json(dir, "encrypted-unknown-format", b, 3, json);
    ENC_JSON(", \"stored-length\": 5, ", enc[2]);
    put_json(dir, "encrypted-not-an-object", b, 3, json);
    ENC_JSON(", \"stored-length\": -1, ", enc[0]);
    put_json(dir, "encrypted-negative-stored-length", b, 3, json);
    ENC_JSON("", "");
    put_json(dir, "version-3-without-encryption", b, 3, json);
#undef ENC_JSON
}

int
main(int argc, char **argv)
{
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(GError) error = NULL;
    guint8 good[QG_IMAGE_HEADER_SIZE], b[QG_IMAGE_HEADER_SIZE];
    static const char bad_json[] = "{\"stream\": {\"offset\": 4096, \"length\": ";
    static const char wrong_types[] =
        "{\"qemu-version\": 7, \"machine\": [], \"ram-size\": \"x\", \"time\": {},"
        " \"running\": \"yes\", \"stream\": {\"offset\": 4096, \"length\": {},"
        " \"checksum\": []}}";
    guint32 jlen;

    if (argc != 2) {
        g_printerr("usage: %s DIR\n", argv[0]);
        return 2;
    }
    info->qemu_version = g_strdup("7.2.0");
    info->machine = g_strdup("pc-i440fx-7.2");
    info->ram_size = 512ULL << 20;
    info->time = 1764633600;
    info->running = TRUE;
    info->stream_offset = QG_IMAGE_HEADER_SIZE;
    info->stream_length = 123456789;
    info->checksum = 0x0123456789abcdefULL;
    if (!qg_image_header_encode(info, good, &error)) {
        g_printerr("%s\n", error->message);
        return 1;
    }
    jlen = good[16] | good[17] << 8 | good[18] << 16 | (guint32)good[19] << 24;
    put(argv[1], "valid", good, sizeof(good));
    put(argv[1], "valid-json-only", good, 32 + jlen);
    put(argv[1], "truncated-fixed", good, 20);
    put(argv[1], "truncated-json", good, 32 + jlen / 2);
    memcpy(b, good, sizeof(b));
    memcpy(b, "IOHQEMU?", 8);
    put(argv[1], "wrong-magic", b, sizeof(b));
    memcpy(b, "IOHQPART", 8);
    put(argv[1], "placeholder", b, sizeof(b));
    memcpy(b, good, sizeof(b));
    b[8] = 5;   /* 1 raw, 2 compressed, 3 encrypted, 4 channels: 5 is from the future */
    put(argv[1], "wrong-version", b, sizeof(b));
    memcpy(b, good, sizeof(b));
    b[16] = 0xff, b[17] = 0xff, b[18] = 0xff, b[19] = 0xff;
    put(argv[1], "oversized-metadata", b, sizeof(b));
    memcpy(b, good, sizeof(b));
    b[12] = 0, b[13] = 0x20;   /* header size 8192 */
    put(argv[1], "wrong-header-size", b, sizeof(b));
    memcpy(b, good, sizeof(b));
    b[24] ^= 1;
    put(argv[1], "wrong-checksum", b, sizeof(b));
    memset(b + 32, 0, sizeof(b) - 32);
    memcpy(b + 32, bad_json, sizeof(bad_json) - 1);
    b[16] = (guint8)(sizeof(bad_json) - 1), b[17] = b[18] = b[19] = 0;
    reseal(b, sizeof(bad_json) - 1);
    put(argv[1], "bad-json", b, sizeof(b));
    memset(b + 32, 0, sizeof(b) - 32);
    memcpy(b + 32, wrong_types, sizeof(wrong_types) - 1);
    b[16] = (guint8)(sizeof(wrong_types) - 1), b[17] = b[18] = b[19] = 0;
    reseal(b, sizeof(wrong_types) - 1);
    put(argv[1], "wrong-types", b, sizeof(b));
    compressed_seeds(argv[1], info);
    encrypted_seeds(argv[1], info);
    return 0;
}
