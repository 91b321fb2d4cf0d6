/* qg-image.c - the saved-VM image format */
#include "qg-image.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-glib/json-glib.h>
#include "ioh-json.h"
#include <xxhash.h>

#include "ioh-error.h"
#include "ioh-limits.h"
#include "ioh-number.h"

#define QG_IMAGE_MAGIC "IOHQEMU\n"
#define QG_IMAGE_MAGIC_PART "IOHQPART"
#define QG_IMAGE_FIXED 32
#define QG_IMAGE_CHECKSUM_PREFIX "xxh3-64:"

G_DEFINE_QUARK(qg-image-error-quark, qg_image_error)

QgImageInfo *
qg_image_info_new(void)
{
    QgImageInfo *info = g_new0(QgImageInfo, 1);

    info->stream_offset = QG_IMAGE_HEADER_SIZE;
    return info;
}

void
qg_image_info_free(QgImageInfo *info)
{
    if (!info) {
        return;
    }
    g_free(info->qemu_version);
    g_free(info->machine);
    g_free(info->compression);
    g_free(info->regions);
    g_free(info->multifd_compression);
    g_free(info->uuid);
    g_free(info->encryption);
    g_free(info);
}

char *
qg_image_checksum_to_string(guint64 checksum)
{
    return g_strdup_printf(QG_IMAGE_CHECKSUM_PREFIX "%016" G_GINT64_MODIFIER "x", checksum);
}

static void
put_le32(guint8 *p, guint32 v)
{
    v = GUINT32_TO_LE(v);
    memcpy(p, &v, 4);
}

static void
put_le64(guint8 *p, guint64 v)
{
    v = GUINT64_TO_LE(v);
    memcpy(p, &v, 8);
}

static guint32
get_le32(const guint8 *p)
{
    guint32 v;

    memcpy(&v, p, 4);
    return GUINT32_FROM_LE(v);
}

static guint64
get_le64(const guint8 *p)
{
    guint64 v;

    memcpy(&v, p, 8);
    return GUINT64_FROM_LE(v);
}

/* The format version @info needs: the oldest that can describe it, so that raw and
 * compressed images stay readable by the releases that made them. */
static guint32
qg_image_version(const QgImageInfo *info)
{
    return info->channels      ? QG_IMAGE_FORMAT_VERSION_CHANNELS
           : info->encryption  ? QG_IMAGE_FORMAT_VERSION_ENCRYPTED
           : info->compression ? QG_IMAGE_FORMAT_VERSION_COMPRESSED
                               : QG_IMAGE_FORMAT_VERSION;
}

/* Versions 2 and 3: the stored length, the compression, the encryption (its format
 * only: never a key), inside "stream". */
static void
qg_image_add_compression(JsonBuilder *b, const QgImageInfo *info)
{
    if (!info->compression && !info->encryption) {
        return;   /* version 1, as before compression existed */
    }
    json_builder_set_member_name(b, "stored-length");
    json_builder_add_int_value(b, (gint64)info->stored_length);
    if (info->compression) {
        json_builder_set_member_name(b, "compression");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "method");
        json_builder_add_string_value(b, info->compression);
        json_builder_set_member_name(b, "level");
        json_builder_add_int_value(b, info->compress_level);
        if (info->compress_auto) {
            json_builder_set_member_name(b, "adaptive");
            json_builder_add_boolean_value(b, TRUE);
        }
        json_builder_end_object(b);
    }
    if (info->encryption) {
        json_builder_set_member_name(b, "encryption");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "format");
        json_builder_add_string_value(b, info->encryption);
        json_builder_end_object(b);
    }
}

gboolean
qg_image_header_encode(const QgImageInfo *info, guint8 *buf, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new_immutable();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(info->time);
    g_autofree char *when = dt ? g_date_time_format_iso8601(dt) : g_strdup("");
    g_autofree char *sum = qg_image_checksum_to_string(info->checksum);
    g_autofree char *json = NULL;
    gsize len;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "qemu-version");
    json_builder_add_string_value(b, info->qemu_version ? info->qemu_version : "");
    json_builder_set_member_name(b, "machine");
    json_builder_add_string_value(b, info->machine ? info->machine : "");
    json_builder_set_member_name(b, "ram-size");
    json_builder_add_int_value(b, (gint64)info->ram_size);
    json_builder_set_member_name(b, "time");
    json_builder_add_string_value(b, when);
    json_builder_set_member_name(b, "running");
    json_builder_add_boolean_value(b, info->running);
    json_builder_set_member_name(b, "stream");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "offset");
    json_builder_add_int_value(b, QG_IMAGE_HEADER_SIZE);
    json_builder_set_member_name(b, "length");
    json_builder_add_int_value(b, (gint64)info->stream_length);
    json_builder_set_member_name(b, "checksum");
    json_builder_add_string_value(b, sum);
    qg_image_add_compression(b, info);
    json_builder_end_object(b);
    qg_image_channels_encode(b, info);
    json_builder_end_object(b);
    root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json = json_generator_to_data(gen, &len);

    if (len > QG_IMAGE_HEADER_SIZE - QG_IMAGE_FIXED) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "image metadata too long (%zu bytes)", len);
        return FALSE;
    }
    memset(buf, 0, QG_IMAGE_HEADER_SIZE);
    memcpy(buf, QG_IMAGE_MAGIC, 8);
    put_le32(buf + 8, qg_image_version(info));
    put_le32(buf + 12, QG_IMAGE_HEADER_SIZE);
    put_le32(buf + 16, (guint32)len);
    put_le32(buf + 20, 0);
    put_le64(buf + 24, XXH3_64bits(json, len));
    memcpy(buf + QG_IMAGE_FIXED, json, len);
    return TRUE;
}

gboolean
qg_image_checksum_parse(const char *s, guint64 *ret)
{
    char *end = NULL;

    if (!s || !g_str_has_prefix(s, QG_IMAGE_CHECKSUM_PREFIX)) {
        return FALSE;
    }
    s += strlen(QG_IMAGE_CHECKSUM_PREFIX);
    if (strlen(s) != 16) {
        return FALSE;
    }
    *ret = g_ascii_strtoull(s, &end, 16);
    return end && *end == '\0';
}

/* Version 2's compression: a known method and level, a stored length. */
static gboolean
qg_image_decode_compression(JsonObject *stream, QgImageInfo *info)
{
    JsonObject *c = ioh_json_get_object(stream, "compression");
    gint64 level = c ? ioh_json_get_int(c, "level", G_MININT64) : G_MININT64;
    gint64 stored = ioh_json_get_int(stream, "stored-length", -1);

    if (!c || g_strcmp0(ioh_json_get_string(c, "method"), "zstd") != 0 ||
        level < IOH_ZSTD_LEVEL_MIN || level > IOH_ZSTD_LEVEL_MAX || stored < 0) {
        return FALSE;
    }
    info->compression = g_strdup("zstd");
    info->compress_level = (int)level;
    info->compress_auto = json_object_has_member(c, "adaptive") &&
                          json_object_get_boolean_member(c, "adaptive");
    info->stored_length = (guint64)stored;
    return TRUE;
}

/* Version 3's encryption: format "age", a stored length; the compression when present. */
static gboolean
qg_image_decode_encryption(JsonObject *stream, QgImageInfo *info)
{
    JsonObject *e = ioh_json_get_object(stream, "encryption");
    gint64 stored = ioh_json_get_int(stream, "stored-length", -1);

    if (!e || g_strcmp0(ioh_json_get_string(e, "format"), "age") != 0 || stored < 0 ||
        (json_object_has_member(stream, "compression") &&
         !qg_image_decode_compression(stream, info))) {
        return FALSE;
    }
    info->encryption = g_strdup("age");
    info->stored_length = (guint64)stored;
    return TRUE;
}

/* The "stream" member: offset, length, checksum; in version 2 the compression, in
 * version 3 the encryption, in version 4 (channels) the compression if any. */
static gboolean
qg_image_decode_stream(JsonObject *stream, guint32 hsize, guint32 version,
                       QgImageInfo *info, const char *path, GError **error)
{
    if (!stream ||
        !qg_image_checksum_parse(ioh_json_get_string(stream, "checksum"), &info->checksum) ||
        ioh_json_get_int(stream, "length", -1) < 0 ||
        ioh_json_get_int(stream, "offset", -1) != hsize) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: stream description missing or invalid", path);
        return FALSE;
    }
    info->stream_offset = hsize;
    info->stream_length = (guint64)ioh_json_get_int(stream, "length", 0);
    info->stored_length = info->stream_length;
    /* a damaged version byte must not make zstd frames pass for QEMU's stream */
    if (version == QG_IMAGE_FORMAT_VERSION && (json_object_has_member(stream, "compression") ||
                                               json_object_has_member(stream, "stored-length"))) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: format version 1 (raw) but the stream is "
                    "recorded compressed", path);
        return FALSE;
    }
    if (version < QG_IMAGE_FORMAT_VERSION_ENCRYPTED &&
        json_object_has_member(stream, "encryption")) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: format version %u but the stream is "
                    "recorded encrypted", path, version);
        return FALSE;
    }
    /* version 4: "encryption" in "stream" says every region (main and channels) is an
     * age file of its own */
    if (version == QG_IMAGE_FORMAT_VERSION_ENCRYPTED ||
        json_object_has_member(stream, "encryption")) {
        if (!qg_image_decode_encryption(stream, info)) {
            g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                        "corrupt image header %s: encryption (format age, stored-length, "
                        "a valid compression if any) missing or invalid", path);
            return FALSE;
        }
        return TRUE;
    }
    if ((version == QG_IMAGE_FORMAT_VERSION_COMPRESSED ||
         (version == QG_IMAGE_FORMAT_VERSION_CHANNELS &&
          json_object_has_member(stream, "compression"))) &&
        !qg_image_decode_compression(stream, info)) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: compression (zstd, level -7 to 19, "
                    "stored-length) missing or invalid", path);
        return FALSE;
    }
    return TRUE;
}

QgImageInfo *
qg_image_header_decode(const guint8 *buf, gsize len, const char *path, GError **error)
{
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) local = NULL;
    g_autoptr(GDateTime) dt = NULL;
    JsonObject *root;
    guint32 version, hsize, jlen;
    JsonNode *node;

    if (len >= 8 && memcmp(buf, QG_IMAGE_MAGIC_PART, 8) == 0) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_INCOMPLETE,
                    "incomplete image %s: its save never finished", path);
        return NULL;
    }
    if (len < 8 || memcmp(buf, QG_IMAGE_MAGIC, 8) != 0) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_BAD_MAGIC,
                    "not a saved QEMU image %s: wrong magic", path);
        return NULL;
    }
    if (len < QG_IMAGE_FIXED) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "image truncated %s: header cut short", path);
        return NULL;
    }
    version = get_le32(buf + 8);
    hsize = get_le32(buf + 12);
    jlen = get_le32(buf + 16);
    if (version < QG_IMAGE_FORMAT_VERSION || version > QG_IMAGE_FORMAT_VERSION_CHANNELS) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_VERSION,
                    "unsupported image %s: format version %u (this tool reads %u to %u)",
                    path, version, QG_IMAGE_FORMAT_VERSION,
                    QG_IMAGE_FORMAT_VERSION_CHANNELS);
        return NULL;
    }
    if (hsize != QG_IMAGE_HEADER_SIZE || jlen > hsize - QG_IMAGE_FIXED) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: bad sizes", path);
        return NULL;
    }
    if (len < QG_IMAGE_FIXED + jlen) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "image truncated %s: header cut short", path);
        return NULL;
    }
    if (XXH3_64bits(buf + QG_IMAGE_FIXED, jlen) != get_le64(buf + 24)) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: metadata checksum mismatch", path);
        return NULL;
    }
    if (!json_parser_load_from_data(parser, (const char *)buf + QG_IMAGE_FIXED, jlen,
                                    &local) ||
        !(node = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: metadata is not a JSON object", path);
        return NULL;
    }
    root = json_node_get_object(node);
    if (!qg_image_decode_stream(ioh_json_get_object(root, "stream"), hsize, version, info,
                                path, error) ||
        ((version == QG_IMAGE_FORMAT_VERSION_CHANNELS ||
          json_object_has_member(root, "multifd")) &&
         !qg_image_channels_decode(root, info, path, error))) {
        return NULL;
    }
    info->qemu_version = g_strdup(ioh_json_get_string(root, "qemu-version") ?: "");
    info->machine = g_strdup(ioh_json_get_string(root, "machine") ?: "");
    info->ram_size = (guint64)ioh_json_get_int(root, "ram-size", 0);
    info->running = ioh_json_get_boolean(root, "running", FALSE);
    dt = g_date_time_new_from_iso8601(ioh_json_get_string(root, "time") ?: "", NULL);
    info->time = dt ? g_date_time_to_unix(dt) : 0;
    return g_steal_pointer(&info);
}

static gboolean
qg_image_pwrite_all(int fd, const char *path, const guint8 *buf, gsize len, GError **error)
{
    gsize done = 0;

    while (done < len) {
        ssize_t n = pwrite(fd, buf + done, len - done, done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_IO,
                        "cannot write the image header %s: %s", path, g_strerror(e));
            return FALSE;
        }
        done += n;
    }
    return TRUE;
}

void
qg_image_placeholder_encode(guint8 *buf)
{
    memset(buf, 0, QG_IMAGE_HEADER_SIZE);
    memcpy(buf, QG_IMAGE_MAGIC_PART, 8);
    put_le32(buf + 8, QG_IMAGE_FORMAT_VERSION);
    put_le32(buf + 12, QG_IMAGE_HEADER_SIZE);
}

gboolean
qg_image_write_placeholder(int fd, const char *path, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);

    qg_image_placeholder_encode(buf);
    return qg_image_pwrite_all(fd, path, buf, QG_IMAGE_HEADER_SIZE, error);
}

gboolean
qg_image_write_header(int fd, const char *path, const QgImageInfo *info, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);

    if (!qg_image_header_encode(info, buf, error) ||
        !qg_image_pwrite_all(fd, path, buf, QG_IMAGE_HEADER_SIZE, error)) {
        return FALSE;
    }
    if (fdatasync(fd) < 0) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_IO,
                    "cannot sync the image header %s: %s", path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

QgImageInfo *
qg_image_read_header(int fd, const char *path, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);
    g_autoptr(QgImageInfo) info = NULL;
    gsize got = 0;
    struct stat st;

    while (got < QG_IMAGE_HEADER_SIZE) {
        ssize_t n = pread(fd, buf + got, QG_IMAGE_HEADER_SIZE - got, got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_IO,
                        "cannot read the image %s: %s", path, g_strerror(errno));
            return NULL;
        }
        if (n == 0) {
            break;
        }
        got += n;
    }
    info = qg_image_header_decode(buf, got, path, error);
    if (!info) {
        return NULL;
    }
    if (fstat(fd, &st) < 0) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_IO,
                    "cannot stat the image %s: %s", path, g_strerror(errno));
        return NULL;
    }
    if ((guint64)st.st_size < info->stream_offset + info->stored_length) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "image truncated %s: %" G_GUINT64_FORMAT " bytes of %s, "
                    "the header says %" G_GUINT64_FORMAT, path,
                    (guint64)MAX(st.st_size - (gint64)info->stream_offset, 0),
                    info->encryption    ? "encrypted stream"
                    : info->compression ? "compressed stream"
                                        : "stream",
                    info->stored_length);
        return NULL;
    }
    if (!qg_image_channels_check_size(info, (guint64)st.st_size, path, error)) {
        return NULL;
    }
    return g_steal_pointer(&info);
}

gboolean
qg_image_set_compression(QgImageInfo *info, const char *spec, GError **error)
{
    gint64 level = IOH_ZSTD_AUTO_LEVEL_MAX;
    gboolean autolevel = g_str_equal(spec, "zstd") || g_str_equal(spec, "zstd:auto") ||
                         g_str_equal(spec, "auto");

    if (!autolevel &&
        !(g_str_has_prefix(spec, "zstd:") &&
          ioh_number_signed(spec + 5, 10, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX, &level))) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--compress takes zstd or zstd:LEVEL (LEVEL %d to %d) or auto, not '%s'",
                    IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX, spec);
        return FALSE;
    }
    g_free(info->compression);
    info->compression = g_strdup("zstd");
    info->compress_level = (int)level;
    info->compress_auto = autolevel;
    return TRUE;
}

gboolean
qg_image_too_small(GError **error, const char *kind, const char *name, guint64 size,
                   guint64 bound)
{
    g_autofree char *msg = g_strdup_printf(
        "%s %s is %" G_GUINT64_FORMAT " bytes, the image may need up to %" G_GUINT64_FORMAT
        " (a %d-byte header and a stream of up to %" G_GUINT64_FORMAT " bytes: the guest's "
        "RAM, video RAM and ROMs, page headers, device state)", kind, name, size,
        QG_IMAGE_HEADER_SIZE + bound, QG_IMAGE_HEADER_SIZE, bound);

    g_propagate_error(error, ioh_error_new_literal(ENOSPC, "save", name, msg));
    return FALSE;
}

gboolean
qg_image_check_holds(const QgImageInfo *info, guint64 size, const char *kind,
                     const char *name, GError **error)
{
    if (size >= info->stream_offset + info->stored_length) {
        return qg_image_channels_check_size(info, size, name, error);
    }
    g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                "image truncated %s: the %s is %" G_GUINT64_FORMAT " bytes, the header says %"
                G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT, name, kind, size, info->stream_offset,
                info->stored_length);
    return FALSE;
}
