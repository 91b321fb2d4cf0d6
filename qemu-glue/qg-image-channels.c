/* qg-image-channels.c - the index of a multi-channel image (format version 4)
 *
 * The header's "multifd" member: QEMU's multifd channels besides the main stream (which
 * stays "stream", at offset 4096), each in a region of its own:
 *   "multifd": {"channels": N, "compression": "none"|"zstd"|"zlib", "uuid": HEX32,
 *               "regions": [{"offset", "length", "stored-length", "checksum"}, ...]}
 * Region i holds channel i (the id of its init packet). Regions follow the main stream
 * and each other in the file, 4096-aligned, without overlap (docs/channels.md). When
 * "stream" holds "encryption" (format age), each region, the main stream's too, is one
 * age file of its own (compressed first when "compression" is there too): the header
 * says so once, for all, and never holds a key.
 */
#include "qg-image.h"
#include "qg-channels.h"

#include <string.h>
#include <json-glib/json-glib.h>

#include "ioh-json.h"

#define QG_REGION_ALIGN 4096

/* @o's member @key when it is an array, else NULL (json-glib's getter logs on a type
 * mismatch). */
static JsonArray *
qg_image_get_array(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;

    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

static void
qg_image_region_encode(JsonBuilder *b, const QgImageRegion *r)
{
    g_autofree char *sum = qg_image_checksum_to_string(r->checksum);

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "offset");
    json_builder_add_int_value(b, (gint64)r->offset);
    json_builder_set_member_name(b, "length");
    json_builder_add_int_value(b, (gint64)r->length);
    json_builder_set_member_name(b, "stored-length");
    json_builder_add_int_value(b, (gint64)r->stored_length);
    json_builder_set_member_name(b, "checksum");
    json_builder_add_string_value(b, sum);
    json_builder_end_object(b);
}

void
qg_image_channels_encode(JsonBuilder *b, const QgImageInfo *info)
{
    if (!info->channels) {
        return;   /* a single stream: the header of versions 1 and 2, byte for byte */
    }
    json_builder_set_member_name(b, "multifd");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "channels");
    json_builder_add_int_value(b, info->channels);
    json_builder_set_member_name(b, "compression");
    json_builder_add_string_value(b, info->multifd_compression ?: "none");
    json_builder_set_member_name(b, "uuid");
    json_builder_add_string_value(b, info->uuid ?: "");
    json_builder_set_member_name(b, "regions");
    json_builder_begin_array(b);
    for (guint i = 0; i < info->channels; i++) {
        qg_image_region_encode(b, &info->regions[i]);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}

static gboolean
qg_image_channels_corrupt(const char *path, GError **error, const char *what, guint i)
{
    g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                "corrupt image header %s: the channel index does not match its regions "
                "(%s, channel %u)", path, what, i);
    return FALSE;
}

/* Region @i: its numbers, aligned, after @prev_end (the end of what comes before). */
static gboolean
qg_image_region_decode(JsonNode *node, guint i, guint64 prev_end, const QgImageInfo *info,
                       QgImageRegion *r, const char *path, GError **error)
{
    JsonObject *o = node && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    gint64 off = o ? ioh_json_get_int(o, "offset", -1) : -1;
    gint64 len = o ? ioh_json_get_int(o, "length", -1) : -1;
    gint64 stored = o ? ioh_json_get_int(o, "stored-length", -1) : -1;

    if (off < 0 || len < 0 || stored < 0 ||
        !qg_image_checksum_parse(o ? ioh_json_get_string(o, "checksum") : NULL,
                                 &r->checksum)) {
        return qg_image_channels_corrupt(path, error, "a region without its numbers", i);
    }
    if (off % QG_REGION_ALIGN != 0 || (guint64)off < prev_end ||
        (guint64)stored > G_MAXINT64 - (guint64)off) {
        return qg_image_channels_corrupt(path, error, "a region overlapping another", i);
    }
    if (stored == 0) {
        /* a helper given no stored length reads to the file's end: the next regions */
        return qg_image_channels_corrupt(path, error, "a region without stored bytes", i);
    }
    if (!info->compression && !info->encryption && len != stored) {
        return qg_image_channels_corrupt(path, error, "a raw region's two lengths differ", i);
    }
    if (len < QG_CHANNELS_INIT_SIZE) {
        /* every channel starts with its init packet: QEMU would wait for the rest */
        return qg_image_channels_corrupt(path, error, "a region shorter than a channel's "
                                         "64-byte init packet", i);
    }
    r->offset = (guint64)off;
    r->length = (guint64)len;
    r->stored_length = (guint64)stored;
    return TRUE;
}

static gboolean
qg_image_uuid_valid(const char *uuid)
{
    return uuid && strlen(uuid) == 32 && strspn(uuid, "0123456789abcdef") == 32;
}

gboolean
qg_image_channels_decode(JsonObject *root, QgImageInfo *info, const char *path,
                         GError **error)
{
    JsonObject *m = ioh_json_get_object(root, "multifd");
    JsonArray *regions = m ? qg_image_get_array(m, "regions") : NULL;
    gint64 n = m ? ioh_json_get_int(m, "channels", -1) : -1;
    const char *comp = m ? ioh_json_get_string(m, "compression") : NULL;
    guint64 end = info->stream_offset + info->stored_length;

    if (n < 1 || n > QG_IMAGE_CHANNELS_MAX || !regions ||
        json_array_get_length(regions) != (guint)n || !qg_image_uuid_valid(
            ioh_json_get_string(m, "uuid")) ||
        (g_strcmp0(comp, "none") && g_strcmp0(comp, "zstd") && g_strcmp0(comp, "zlib"))) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image header %s: the channel index (multifd: channels 1 to %d, "
                    "one region each, uuid, compression) is missing or invalid", path,
                    QG_IMAGE_CHANNELS_MAX);
        return FALSE;
    }
    if (info->stream_length > 0 && info->stored_length == 0) {
        /* its helper, given no stored length, would read every region after it too */
        return qg_image_channels_corrupt(path, error, "a main stream without stored bytes",
                                         0);
    }
    info->channels = (guint)n;
    info->regions = g_new0(QgImageRegion, n);
    info->multifd_compression = g_strdup(comp);
    info->uuid = g_strdup(ioh_json_get_string(m, "uuid"));
    for (guint i = 0; i < info->channels; i++) {
        if (!qg_image_region_decode(json_array_get_element(regions, i), i, end, info,
                                    &info->regions[i], path, error)) {
            return FALSE;
        }
        end = info->regions[i].offset + info->regions[i].stored_length;
    }
    return TRUE;
}

gboolean
qg_image_channels_check_size(const QgImageInfo *info, guint64 size, const char *path,
                             GError **error)
{
    for (guint i = 0; i < info->channels; i++) {
        const QgImageRegion *r = &info->regions[i];

        if (r->offset + r->stored_length > size) {
            g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                        "image truncated %s: channel %u's region ends at %" G_GUINT64_FORMAT
                        ", the file at %" G_GUINT64_FORMAT, path, i,
                        r->offset + r->stored_length, size);
            return FALSE;
        }
    }
    return TRUE;
}
