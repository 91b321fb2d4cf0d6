/* qg-report.c - what qemu-iohelper prints: its errors, the progress line, the stats at
 * the end (qg-report.h)
 *
 * The tool's own file, linked into the binary only (qgcore and qgmigrate never print).
 */
#include "qg-report.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>

#include "ioh-nbd-uri.h"
#include "ioh-rbd-name.h"
#include "qg-image.h"
#include "qg-text.h"

void
qg_report_error(const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    g_autofree char *line = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    line = qg_text_one_line(msg);
    fprintf(stderr, "qemu-iohelper: %s\n", line);
}

/* Prints @builder's value as one line of JSON on stdout. */
static void
print_json(JsonBuilder *builder)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(builder);
    g_autofree char *text = NULL;

    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
}

/* A member holding @text, made valid UTF-8 (a file name may not be). */
static void
add_string(JsonBuilder *b, const char *name, const char *text)
{
    g_autofree char *valid = g_utf8_make_valid(text, -1);

    json_builder_set_member_name(b, name);
    json_builder_add_string_value(b, valid);
}

static void
add_double(JsonBuilder *b, const char *name, double value)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, value);
}

/* CPU seconds (user + system) of @who: RUSAGE_SELF, or RUSAGE_CHILDREN (the helper,
 * reaped by libwrap in this process). */
static double
cpu_seconds(int who)
{
    struct rusage ru;

    if (getrusage(who, &ru) < 0) {
        return -1;
    }
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The image's side: what the file holds after the header, and how it was stored. */
static void
add_compression_json(JsonBuilder *b, const QgMigrateStats *s)
{
    json_builder_set_member_name(b, "stored_bytes");
    json_builder_add_int_value(b, (gint64)s->stored_length);
    add_double(b, "ratio", s->stream_length ? (double)s->stored_length / s->stream_length
                                            : 1.0);
    add_string(b, "compression", s->compressed ? "zstd" : "none");
    if (s->compressed) {
        json_builder_set_member_name(b, "compression_level");
        json_builder_add_int_value(b, s->compress_level);
        json_builder_set_member_name(b, "compression_auto");
        json_builder_add_boolean_value(b, s->compress_auto);
    }
    json_builder_set_member_name(b, "channels");   /* multifd's, besides the main one */
    json_builder_add_int_value(b, s->channels);
    add_string(b, "encryption", s->encrypted ? "age" : "none");
}

/* The name of connection @k: the main channel, or channel k - 1. */
static char *
connection_name(guint k)
{
    return k ? g_strdup_printf("%u", k - 1) : g_strdup("main");
}

/* With channels: each connection's stream and stored bytes and its rate over the job. */
static void
add_connections_json(JsonBuilder *b, const QgMigrateStats *s)
{
    json_builder_set_member_name(b, "per_channel");
    json_builder_begin_array(b);
    for (guint k = 0; s->channels && k <= s->channels && k < QG_MIGRATE_CONNECTIONS_MAX; k++) {
        g_autofree char *name = connection_name(k);

        json_builder_begin_object(b);
        add_string(b, "channel", name);
        json_builder_set_member_name(b, "stream_bytes");
        json_builder_add_int_value(b, (gint64)s->connection_bytes[k]);
        json_builder_set_member_name(b, "stored_bytes");
        json_builder_add_int_value(b, (gint64)s->connection_stored[k]);
        add_double(b, "mib_per_second", s->seconds > 0 ?
                   (double)s->connection_bytes[k] / (1 << 20) / s->seconds : 0);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

/* The mode a job reports: an NBD export or an RBD image has no page cache
 * (--bypass-cache is moot). */
static const char *
job_mode(const QgReport *r, const char *file)
{
    return ioh_cache_mode_to_string(ioh_nbd_is_uri(file)    ? IOH_CACHE_NBD
                                    : ioh_rbd_is_name(file) ? IOH_CACHE_RBD
                                                            : r->cache);
}

static void
print_stats_json(const QgReport *r, const char *what, const char *file,
                 const QgMigrateStats *s)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autofree char *sum = qg_image_checksum_to_string(s->checksum);
    double mib = (double)s->stream_length / (1 << 20);

    json_builder_begin_object(b);
    add_string(b, "operation", what);
    add_string(b, "file", file);
    add_string(b, "mode", job_mode(r, file));
    json_builder_set_member_name(b, "live");
    json_builder_add_boolean_value(b, r->live);
    json_builder_set_member_name(b, "helper");
    json_builder_add_boolean_value(b, s->helper);
    json_builder_set_member_name(b, "stream_bytes");
    json_builder_add_int_value(b, (gint64)s->stream_length);
    add_double(b, "seconds", s->seconds);
    add_double(b, "qemu_seconds", s->qemu_seconds);
    add_double(b, "mib_per_second", s->seconds > 0 ? mib / s->seconds : 0);
    json_builder_set_member_name(b, "downtime_ms");
    json_builder_add_int_value(b, s->downtime_ms);
    json_builder_set_member_name(b, "running");
    json_builder_add_boolean_value(b, s->running);
    add_string(b, "checksum", sum);
    add_compression_json(b, s);
    add_connections_json(b, s);
    add_string(b, "helper_cpus", r->helper_cpus ? r->helper_cpus : "all");
    add_string(b, "helper_cpus_why", r->helper_cpus_why ? r->helper_cpus_why : "");
    /* this process moves no byte of the stream: its CPU stays near zero */
    add_double(b, "cpu_seconds", cpu_seconds(RUSAGE_SELF));
    add_double(b, "helper_cpu_seconds", cpu_seconds(RUSAGE_CHILDREN));
    json_builder_end_object(b);
    print_json(b);
}

/* The connections' figures, " [main 0.5, 0: 480.2, 1: 478.9 MiB]" (@bytes, @n of them),
 * with their rates over @seconds when > 0; "" for one stream. */
static char *
connections_text(const guint64 *bytes, guint n, double seconds)
{
    GString *t = g_string_new(NULL);

    for (guint k = 0; k < n && k < QG_MIGRATE_CONNECTIONS_MAX; k++) {
        g_autofree char *name = connection_name(k);

        g_string_append_printf(t, "%s%s%s %.1f", k ? ", " : " [", name, k ? ":" : "",
                               (double)bytes[k] / (1 << 20));
        if (seconds > 0) {
            g_string_append_printf(t, " MiB %.0f MiB/s", bytes[k] / (1 << 20) / seconds);
        }
    }
    if (n) {
        g_string_append(t, seconds > 0 ? "]" : " MiB]");
    }
    return g_string_free(t, FALSE);
}

static void
format_eta(double s, char *buf, gsize len)
{
    if (s < 0 || s > 99 * 3600) {
        g_strlcpy(buf, "--:--", len);
    } else {
        g_snprintf(buf, len, "%d:%02d", (int)s / 60, (int)s % 60);
    }
}

void
qg_report_progress(const char *what, const QgProgress *p, gpointer data)
{
    QgReport *r = data;
    double rate = p->seconds > 0 ? p->bytes / p->seconds : 0;
    double eta = -1;
    char etabuf[16];

    if (p->fraction > 0.001) {
        eta = p->seconds * (1 - p->fraction) / p->fraction;
    }
    g_autofree char *conns = connections_text(p->connection_bytes, p->connections, 0);

    format_eta(eta, etabuf, sizeof(etabuf));
    if (g_str_equal(what, "save")) {
        fprintf(stderr, "%ssave: %.1f MiB %s (%.1f MiB synced), %.0f MiB/s, %3.0f%%, "
                "ETA %s%s%s", r->tty ? "\r" : "", (double)p->written / (1 << 20),
                r->compress ? "of stream compressed" : "on disk",
                (double)p->synced / (1 << 20), rate / (1 << 20), p->fraction * 100, etabuf,
                conns, r->tty ? "   " : "\n");
    } else {
        fprintf(stderr, "%srestore: %.1f of %.1f MiB fed to QEMU, %.0f MiB/s, %3.0f%%, "
                "ETA %s%s%s", r->tty ? "\r" : "", (double)p->bytes / (1 << 20),
                (double)p->total / (1 << 20), rate / (1 << 20), p->fraction * 100, etabuf,
                conns, r->tty ? "   " : "\n");
    }
    fflush(stderr);
    r->drew = r->tty;
}

/* Text stats, a compressed image's second line: stored bytes and the ratio. */
static void
print_stats_stored(const QgMigrateStats *s)
{
    if (s->compressed || s->encrypted) {
        g_autofree char *how = s->compressed
                                   ? g_strdup_printf("zstd %slevel %d",
                                                     s->compress_auto ? "auto, raw or up to "
                                                                      : "",
                                                     s->compress_level)
                                   : NULL;

        printf("stored: %.1f MiB, ratio %.3f (%s%s%s)\n",
               (double)s->stored_length / (1 << 20),
               s->stream_length ? (double)s->stored_length / s->stream_length : 1.0,
               how ? how : "", how && s->encrypted ? ", " : "",
               s->encrypted ? "age-encrypted" : "");
    }
}

void
qg_report_stats(const QgReport *r, const char *what, const char *file,
                const QgMigrateStats *s, gboolean json)
{
    g_autofree char *sum = qg_image_checksum_to_string(s->checksum);
    /* an NBD URI without its secrets, an RBD image without its options, as in every
     * message */
    g_autofree char *name = ioh_rbd_is_name(file) ? ioh_rbd_safe_name(file)
                                                  : ioh_nbd_safe_name(file);
    g_autofree char *lfile = qg_text_one_line(name);
    double mib = (double)s->stream_length / (1 << 20);
    double rate = s->seconds > 0 ? mib / s->seconds : 0;

    if (json) {
        print_stats_json(r, what, name, s);
    } else {
        printf("%s: %s, %.1f MiB in %.2f s (QEMU done at %.2f s), %.0f MiB/s, %s%s, %s\n",
               what, lfile, mib, s->seconds, s->qemu_seconds, rate,
               job_mode(r, file),
               g_str_equal(what, "save") ? (s->running ? ", guest was running"
                                                       : ", guest was paused")
                                         : (s->running ? ", guest resumed" : ", guest paused"),
               sum);
        print_stats_stored(s);
        if (r->helper_cpus) {
            g_autofree char *why = qg_text_one_line(r->helper_cpus_why ? r->helper_cpus_why
                                                                       : "");
            printf("helper cpus: %s (%s)\n", r->helper_cpus, why);
        }
        if (s->channels) {
            g_autofree char *conns = connections_text(s->connection_bytes, s->channels + 1,
                                                      s->seconds);

            printf("channels:%s\n", conns);
        }
    }
    fflush(stdout);
}

void
qg_report_progress_end(QgReport *r)
{
    if (r->drew) {
        fputc('\n', stderr);
        r->drew = FALSE;
    }
}

void
qg_report_migration(const char *status, double seconds)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    add_string(b, "status", status);
    add_double(b, "seconds", seconds);
    json_builder_end_object(b);
    print_json(b);
}
