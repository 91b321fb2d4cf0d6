/* ioh-stats.c - what a copy did, and its summaries */
#include "ioh-stats.h"

#include <json-glib/json-glib.h>

double
ioh_stats_seconds(const IohStats *stats)
{
    gint64 end = stats->end_us ? stats->end_us : g_get_monotonic_time();

    return (double)(end - stats->start_us) / G_USEC_PER_SEC;
}

static double
mib_per_s(const IohStats *stats)
{
    double s = ioh_stats_seconds(stats);

    return s > 0 ? (double)stats->bytes / (1024.0 * 1024.0) / s : 0.0;
}

char *
ioh_stats_checksum_hex(const IohStats *stats)
{
    if (!stats->checksum_algorithm)
        return NULL;
    return g_strdup_printf("%016" G_GINT64_MODIFIER "x", stats->checksum);
}

double
ioh_stats_ratio(const IohStats *stats)
{
    return stats->bytes > 0 ? (double)stats->stored / (double)stats->bytes : 1.0;
}

guint64
ioh_stats_syscalls(const IohStats *stats)
{
    return stats->reads + stats->writes - stats->splices + stats->cache_calls;
}

/* ", zstd level 1: 123 bytes stored, ratio 0.330, compression CPU 1.234 s" (a save), or
 * ", zstd: ..." (a restore: the level is not known), or "". */
static char *
compression_text(const IohStats *stats)
{
    g_autofree char *level = NULL;
    g_autofree char *choices = NULL;

    if (!stats->compression) {
        return g_strdup("");
    }
    level = stats->has_level ? g_strdup_printf("%s level %d", stats->adapt.on ? " auto, up to"
                                                                             : "",
                                               stats->compression_level)
                             : g_strdup("");
    choices = ioh_adapt_stats_text(&stats->adapt);
    return g_strdup_printf(", %s%s: %" G_GUINT64_FORMAT " bytes stored, ratio %.3f, "
                           "compression CPU %.3f s, CPU %.3f s%s", stats->compression,
                           level, stats->stored, ioh_stats_ratio(stats),
                           (double)stats->compress_cpu_us / G_USEC_PER_SEC,
                           (double)stats->cpu_us / G_USEC_PER_SEC, choices);
}

/* ", age: 2 recipients" (and, without compression, the bytes stored), or "". Never a
 * key: only how many recipients the image has. */
static char *
encryption_text(const IohStats *stats)
{
    g_autofree char *stored = NULL;

    if (!stats->encryption) {
        return g_strdup("");
    }
    stored = stats->compression ? g_strdup("")
                                : g_strdup_printf(", %" G_GUINT64_FORMAT " bytes stored",
                                                  stats->stored);
    return g_strdup_printf(", %s: %u recipient%s%s", stats->encryption,
                           stats->encryption_recipients,
                           stats->encryption_recipients == 1 ? "" : "s", stored);
}

static double
mib(guint64 bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* ", memory: ring 2.0/8.0 MiB, zstd 2.6/905.0 MiB scaled down (budget 8.0 MiB)": the most
 * each layer held of what it wanted, or "". */
static char *
memory_text(const IohStats *stats)
{
    GString *t = g_string_new(NULL);

    for (guint i = 0; i < stats->n_memory; i++) {
        const IohMemLayer *l = &stats->memory[i];

        g_string_append_printf(t, "%s %s %.1f/%.1f MiB%s", i ? "," : ", memory:", l->layer,
                               mib(l->peak), mib(l->want), l->scaled ? " scaled down" : "");
    }
    if (stats->has_budget) {
        g_string_append_printf(t, " (budget %.1f MiB)", mib(stats->budget));
    }
    return g_string_free(t, FALSE);
}

char *
ioh_stats_format_text(const IohStats *stats)
{
    g_autofree char *hex = ioh_stats_checksum_hex(stats);
    g_autofree char *mem = memory_text(stats);
    g_autofree char *zc = compression_text(stats);
    g_autofree char *ec = encryption_text(stats);
    g_autofree char *ur = stats->io_uring[0] ? g_strdup_printf(", io_uring %s", stats->io_uring)
                                             : g_strdup("");
    g_autofree char *nbd = stats->nbd[0] ? g_strdup_printf(", nbd: %s", stats->nbd)
                                         : g_strdup("");
    /* "direct" alone would be false once O_DIRECT was cleared: say how much was not */
    g_autofree char *bc = stats->buffered ? g_strdup_printf(
        " (its last %" G_GUINT64_FORMAT " bytes through the page cache: O_DIRECT cleared for "
        "an unaligned rest)", stats->buffered) : g_strdup("");
    g_autofree char *z = g_strconcat(bc, zc, ec, nbd, mem, ur,
                                     stats->writes_behind ? ", writes behind the filters" : "",
                                     NULL);
    g_autofree char *sum = hex ? g_strdup_printf(", %s %s%s", stats->checksum_algorithm, hex,
                                                 z)
                               : g_strdup(z);

    return g_strdup_printf("total: %" G_GUINT64_FORMAT " bytes (%.2f GiB), %.3f s, %.1f MiB/s, "
                           "%" G_GUINT64_FORMAT " reads, %" G_GUINT64_FORMAT " writes, "
                           "%" G_GUINT64_FORMAT " splices, %" G_GUINT64_FORMAT " syscalls, "
                           "sync %.3f s, %s %s%s",
                           stats->bytes, (double)stats->bytes / (1024.0 * 1024.0 * 1024.0),
                           ioh_stats_seconds(stats), mib_per_s(stats), stats->reads,
                           stats->writes, stats->splices, ioh_stats_syscalls(stats), (double)stats->sync_us / G_USEC_PER_SEC,
                           stats->mode ? stats->mode : "buffered",
                           stats->direction ? stats->direction : "copy", sum);
}

static void
add_compression(JsonBuilder *b, const IohStats *stats)
{
    json_builder_set_member_name(b, "compression");
    json_builder_add_string_value(b, stats->compression);
    if (stats->has_level) {
        json_builder_set_member_name(b, "compression_level");
        json_builder_add_int_value(b, stats->compression_level);
    }
    if (stats->adapt.on) {
        ioh_adapt_stats_json(b, &stats->adapt);
    }
    json_builder_set_member_name(b, "stored");
    json_builder_add_int_value(b, (gint64)stats->stored);
    json_builder_set_member_name(b, "ratio");
    json_builder_add_double_value(b, ioh_stats_ratio(stats));
    json_builder_set_member_name(b, "compress_cpu_seconds");
    json_builder_add_double_value(b, (double)stats->compress_cpu_us / G_USEC_PER_SEC);
    json_builder_set_member_name(b, "cpu_seconds");
    json_builder_add_double_value(b, (double)stats->cpu_us / G_USEC_PER_SEC);
}

static void
add_encryption(JsonBuilder *b, const IohStats *stats)
{
    json_builder_set_member_name(b, "encryption");
    json_builder_add_string_value(b, stats->encryption);
    json_builder_set_member_name(b, "encryption_recipients");
    json_builder_add_int_value(b, stats->encryption_recipients);
    if (!stats->compression) {
        json_builder_set_member_name(b, "stored");
        json_builder_add_int_value(b, (gint64)stats->stored);
    }
}

static void
add_uint(JsonBuilder *b, const char *name, guint64 v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, (gint64)MIN(v, (guint64)G_MAXINT64));
}

/* "memory": {"budget": N, "layers": {"ring": {"floor": N, "want": N, "got": N,
 * "scaled": false}, ...}}: budget only with one; got is the most the layer held. */
static void
add_memory(JsonBuilder *b, const IohStats *stats)
{
    json_builder_set_member_name(b, "memory");
    json_builder_begin_object(b);
    if (stats->has_budget) {
        add_uint(b, "budget", stats->budget);
    }
    json_builder_set_member_name(b, "layers");
    json_builder_begin_object(b);
    for (guint i = 0; i < stats->n_memory; i++) {
        const IohMemLayer *l = &stats->memory[i];

        json_builder_set_member_name(b, l->layer);
        json_builder_begin_object(b);
        add_uint(b, "floor", l->floor);
        add_uint(b, "want", l->want);
        add_uint(b, "got", l->peak);
        json_builder_set_member_name(b, "scaled");
        json_builder_add_boolean_value(b, l->scaled);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
}

/* "nbd": {"connections": N, "requests": N, "adaptive": B, "windows": N,
 * "most_connections": N, "why": "..."} */
static void
add_nbd(JsonBuilder *b, const IohStats *stats)
{
    json_builder_set_member_name(b, "nbd");
    json_builder_begin_object(b);
    add_uint(b, "connections", stats->nbd_connections);
    add_uint(b, "requests", stats->nbd_requests);
    json_builder_set_member_name(b, "adaptive");
    json_builder_add_boolean_value(b, stats->nbd_adaptive);
    add_uint(b, "windows", stats->nbd_windows);
    add_uint(b, "most_connections", stats->nbd_most_connections);
    json_builder_set_member_name(b, "why");
    json_builder_add_string_value(b, stats->nbd);
    json_builder_end_object(b);
}

char *
ioh_stats_format_json(const IohStats *stats)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "bytes");
    json_builder_add_int_value(b, (gint64)stats->bytes);
    json_builder_set_member_name(b, "synced");
    json_builder_add_int_value(b, (gint64)stats->synced);
    json_builder_set_member_name(b, "seconds");
    json_builder_add_double_value(b, ioh_stats_seconds(stats));
    json_builder_set_member_name(b, "mib_per_s");
    json_builder_add_double_value(b, mib_per_s(stats));
    json_builder_set_member_name(b, "reads");
    json_builder_add_int_value(b, (gint64)stats->reads);
    json_builder_set_member_name(b, "writes");
    json_builder_add_int_value(b, (gint64)stats->writes);
    json_builder_set_member_name(b, "splices");
    json_builder_add_int_value(b, (gint64)stats->splices);
    json_builder_set_member_name(b, "syscalls");
    json_builder_add_int_value(b, (gint64)ioh_stats_syscalls(stats));
    json_builder_set_member_name(b, "sync_seconds");
    json_builder_add_double_value(b, (double)stats->sync_us / G_USEC_PER_SEC);
    json_builder_set_member_name(b, "mode");
    json_builder_add_string_value(b, stats->mode ? stats->mode : "buffered");
    json_builder_set_member_name(b, "direction");
    json_builder_add_string_value(b, stats->direction ? stats->direction : "copy");
    if (stats->buffered) {
        json_builder_set_member_name(b, "buffered_bytes");
        json_builder_add_int_value(b, (gint64)stats->buffered);
    }
    if (stats->io_uring[0]) {
        json_builder_set_member_name(b, "io_uring");
        json_builder_add_string_value(b, stats->io_uring);
    }
    json_builder_set_member_name(b, "writes_behind");
    json_builder_add_boolean_value(b, stats->writes_behind);
    if (stats->checksum_algorithm) {
        g_autofree char *hex = ioh_stats_checksum_hex(stats);

        json_builder_set_member_name(b, "checksum_algorithm");
        json_builder_add_string_value(b, stats->checksum_algorithm);
        json_builder_set_member_name(b, "checksum");
        json_builder_add_string_value(b, hex);
    }
    if (stats->compression) {
        add_compression(b, stats);
    }
    if (stats->encryption) {
        add_encryption(b, stats);
    }
    if (stats->n_memory > 0) {
        add_memory(b, stats);
    }
    if (stats->nbd[0]) {
        add_nbd(b, stats);
    }
    json_builder_end_object(b);

    root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, NULL);
}
