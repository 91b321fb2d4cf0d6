/* ioh-status.c - the protocol lines and the record the helper writes */
#include "ioh-status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "ioh-cache-mode.h"
#include "ioh-error.h"
#include "ioh-fd.h"

static void
fill_counters(IohProtocolMsg *msg, const IohStats *stats)
{
    msg->written = stats->bytes;
    msg->stored = stats->stored;
    msg->synced = stats->synced;
    msg->seconds = stats->start_us ? ioh_stats_seconds(stats) : 0.0;    /* 0: never started */
}

static void
fill_result(IohProtocolMsg *msg, const IohStats *stats)
{
    msg->kind = IOH_PROTOCOL_RESULT;
    /* The engine names them with the protocol's spellings; an unset one is the default. */
    if (!stats->direction || !ioh_direction_from_string(stats->direction, &msg->direction,
                                                        NULL)) {
        msg->direction = IOH_DIRECTION_COPY;
    }
    if (!stats->mode || !ioh_cache_mode_from_string(stats->mode, &msg->mode, NULL)) {
        msg->mode = IOH_CACHE_BUFFERED;
    }
    msg->reads = stats->reads;
    msg->writes = stats->writes;
    msg->sync_seconds = (double)stats->sync_us / G_USEC_PER_SEC;
    if (stats->checksum_algorithm) {
        msg->checksum_algorithm = g_strdup(stats->checksum_algorithm);
        msg->checksum = ioh_stats_checksum_hex(stats);
    }
    if (stats->compression) {
        msg->compression = g_strdup(stats->compression);
        msg->has_level = stats->has_level;
        msg->compression_level = stats->compression_level;
        msg->ratio = ioh_stats_ratio(stats);
        msg->compress_cpu_seconds = (double)stats->compress_cpu_us / G_USEC_PER_SEC;
        msg->cpu_seconds = (double)stats->cpu_us / G_USEC_PER_SEC;
    }
    if (stats->encryption) {
        msg->encryption = g_strdup(stats->encryption);
        msg->encryption_recipients = stats->encryption_recipients;
    }
}

void
ioh_status_write_progress(int fd, const IohStats *stats)
{
    g_auto(IohProtocolMsg) msg = { .kind = IOH_PROTOCOL_PROGRESS };

    fill_counters(&msg, stats);
    /* 0 ms: a full pipe drops the line; a reader that went away never fails the copy. */
    (void)ioh_protocol_write(fd, &msg, 0, NULL);
}

void
ioh_status_write_ready(int fd)
{
    g_auto(IohProtocolMsg) msg = { .kind = IOH_PROTOCOL_READY };

    /* Never dropped: it is the first line, and the caller waits for it. */
    (void)ioh_protocol_write(fd, &msg, IOH_PROTOCOL_FINAL_TIMEOUT_MS, NULL);
}

void
ioh_status_final(IohProtocolMsg *msg, const IohStats *stats, const GError *error)
{
    ioh_protocol_msg_clear(msg);
    fill_counters(msg, stats);
    if (error) {
        ioh_protocol_msg_set_error(msg, error);
    } else {
        fill_result(msg, stats);
    }
}

void
ioh_status_write_final(int fd, const IohProtocolMsg *msg)
{
    /* The exit status still tells success or failure when this cannot be written. */
    (void)ioh_protocol_write(fd, msg, IOH_PROTOCOL_FINAL_TIMEOUT_MS, NULL);
}

static void
set_default_string(JsonObject *o, const char *name, const char *value)
{
    if (!json_object_has_member(o, name)) {
        json_object_set_string_member(o, name, value);
    }
}

/* The image's path as the record's "path"; an error line's own path, when it names
 * something else, moves to "error_path". */
static void
set_record_path(JsonObject *o, const char *image)
{
    g_autofree char *valid = g_utf8_make_valid(image, -1);
    const char *own = json_object_has_member(o, "path")
                      ? json_object_get_string_member(o, "path") : NULL;

    if (own && !g_str_equal(own, valid)) {
        json_object_set_string_member(o, "error_path", own);
    }
    json_object_set_string_member(o, "path", valid);
}

/* The final line with the record's members added. */
static char *
record_line(const IohProtocolMsg *msg, const IohStats *stats, gboolean libvirt,
            const char *image)
{
    g_autofree char *line = ioh_protocol_encode(msg, NULL);
    g_autoptr(JsonNode) root = json_from_string(line, NULL);
    JsonObject *o = json_node_get_object(root);
    g_autofree char *text = NULL;

    json_object_set_int_member(o, "pid", getpid());
    json_object_set_string_member(o, "form", libvirt ? "libvirt" : "standalone");
    json_object_set_boolean_member(o, "ok", msg->kind == IOH_PROTOCOL_RESULT);
    json_object_set_int_member(o, "bytes", (gint64)MIN(msg->written, (guint64)G_MAXINT64));
    /* an error line has none: what the copy was doing when it failed */
    set_default_string(o, "direction", stats->direction ? stats->direction : "copy");
    set_default_string(o, "mode", stats->mode ? stats->mode : "buffered");
    set_record_path(o, image);
    text = json_to_string(root, FALSE);
    return g_strconcat(text, "\n", NULL);
}

void
ioh_status_append_record(const char *file, const IohProtocolMsg *msg, const IohStats *stats,
                         gboolean libvirt, const char *image)
{
    g_autofree char *line = record_line(msg, stats, libvirt, image);
    int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    if (fd >= 0) {
        /* The record is a diagnostic: the copy's result stands whatever happens here. */
        (void)ioh_fd_write_full(fd, line, strlen(line), NULL, file, NULL);
        ioh_fd_clear(&fd);
    }
}
