/* qemu-iohelper.c - save a running QEMU to a file through iohelper, and restore it
 *
 *   qemu-iohelper save    --qmp SOCK FILE [--bypass-cache[=direct|fadvise]] [--live]
 *                         [--max-bandwidth=MIB] [--stall-timeout=S] [--progress]
 *                         [--stats[=text|json]]
 *   qemu-iohelper restore --qmp SOCK FILE [--bypass-cache[=direct|fadvise]]
 *                         [--stall-timeout=S] [--progress] [--stats[=text|json]]
 *   qemu-iohelper qmp     --qmp SOCK COMMAND [ARGS-JSON] [--wait-migration]
 *                         (runs one QMP command, prints its return value as JSON)
 *
 * Only this file prints and exits, every message one line (print_error()). Exit status:
 * 0 success, 1 failure, 2 usage.
 */
#include "config.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "qg-image.h"
#include "qg-migrate.h"
#include "qg-qmp.h"
#include "qg-text.h"

typedef struct {
    char *qmp_path;
    QgCacheMode cache;
    gboolean live;
    gboolean progress;
    char *stats;           /* NULL, "text" or "json" */
    gint64 max_bandwidth_mib;
    gint timeout_s;
    gint stall_timeout_s;  /* G_MININT: not given */
    gboolean wait_migration;
    gboolean tty;
    gboolean drew;
} Opts;

static Opts opts = { .stall_timeout_s = G_MININT };
static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
    (void)sig;
    interrupted = 1;   /* the job cancels itself; a second signal kills (SA_RESETHAND) */
}

static gboolean
parse_cache(const char *name, const char *value, gpointer data, GError **error)
{
    (void)name;
    (void)data;
    if (!value || g_str_equal(value, "direct")) {
        opts.cache = QG_CACHE_DIRECT;
    } else if (g_str_equal(value, "fadvise")) {
        opts.cache = QG_CACHE_FADVISE;
    } else if (g_str_equal(value, "none") || g_str_equal(value, "buffered")) {
        opts.cache = QG_CACHE_KEEP;
    } else {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--bypass-cache takes direct or fadvise, not '%s'", value);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parse_stats(const char *name, const char *value, gpointer data, GError **error)
{
    (void)name;
    (void)data;
    if (!value || g_str_equal(value, "text")) {
        opts.stats = g_strdup("text");
    } else if (g_str_equal(value, "json")) {
        opts.stats = g_strdup("json");
    } else {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--stats takes text or json, not '%s'", value);
        return FALSE;
    }
    return TRUE;
}

static const GOptionEntry entries[] = {
    { "qmp", 0, 0, G_OPTION_ARG_FILENAME, &opts.qmp_path,
      "QEMU's QMP unix socket (required)", "SOCK" },
    { "bypass-cache", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, parse_cache,
      "bypass the page cache: direct (O_DIRECT, the default) or fadvise", "MODE" },
    { "live", 0, 0, G_OPTION_ARG_NONE, &opts.live,
      "save: do not pause the guest before the migration", NULL },
    { "max-bandwidth", 0, 0, G_OPTION_ARG_INT64, &opts.max_bandwidth_mib,
      "save: cap QEMU's send rate at MIB MiB/s (default: unlimited)", "MIB" },
    { "progress", 0, 0, G_OPTION_ARG_NONE, &opts.progress,
      "show bytes on disk, MiB/s and ETA on stderr", NULL },
    { "stats", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, parse_stats,
      "print a summary at the end on stdout (text or json)", "FORMAT" },
    { "wait-migration", 0, 0, G_OPTION_ARG_NONE, &opts.wait_migration,
      "qmp: then wait for the migration to end; print its status and seconds", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opts.timeout_s,
      "seconds to wait for any one QMP reply (default 120)", "S" },
    { "stall-timeout", 0, 0, G_OPTION_ARG_INT, &opts.stall_timeout_s,
      "fail when no byte of the stream moved for S seconds (default 120; 0: never)", "S" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};

/* The only way a message reaches stderr: "qemu-iohelper: " and one line, control
 * characters (from paths, commands, QEMU's own words) shown as '?'. */
static void G_GNUC_PRINTF(1, 2)
print_error(const char *fmt, ...)
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

/* @text as a JSON string, quotes included (invalid UTF-8 replaced). */
static char *
json_quote(const char *text)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
    g_autofree char *valid = g_utf8_make_valid(text, -1);

    json_node_set_string(node, valid);
    json_generator_set_root(gen, node);
    return json_generator_to_data(gen, NULL);
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

static void
show_progress(const char *what, const QgProgress *p, gpointer data)
{
    double rate = p->seconds > 0 ? p->bytes / p->seconds : 0;
    double eta = -1;
    char etabuf[16];

    (void)data;
    if (p->fraction > 0.001) {
        eta = p->seconds * (1 - p->fraction) / p->fraction;
    }
    format_eta(eta, etabuf, sizeof(etabuf));
    if (g_str_equal(what, "save")) {
        fprintf(stderr, "%ssave: %.1f MiB on disk (%.1f MiB synced), %.0f MiB/s, %3.0f%%, "
                "ETA %s%s", opts.tty ? "\r" : "", (double)p->written / (1 << 20),
                (double)p->synced / (1 << 20), rate / (1 << 20), p->fraction * 100, etabuf,
                opts.tty ? "   " : "\n");
    } else {
        fprintf(stderr, "%srestore: %.1f of %.1f MiB fed to QEMU, %.0f MiB/s, %3.0f%%, "
                "ETA %s%s", opts.tty ? "\r" : "", (double)p->bytes / (1 << 20),
                (double)p->total / (1 << 20), rate / (1 << 20), p->fraction * 100, etabuf,
                opts.tty ? "   " : "\n");
    }
    fflush(stderr);
    opts.drew = opts.tty;
}

static void
print_stats(const char *what, const char *file, const QgMigrateStats *s)
{
    g_autofree char *sum = qg_image_checksum_to_string(s->checksum);
    double mib = (double)s->stream_length / (1 << 20);
    double rate = s->seconds > 0 ? mib / s->seconds : 0;

    if (g_str_equal(opts.stats, "json")) {
        g_autofree char *qfile = json_quote(file);
        printf("{\"operation\":\"%s\",\"file\":%s,\"mode\":\"%s\",\"live\":%s,"
               "\"helper\":%s,\"stream_bytes\":%" G_GUINT64_FORMAT ",\"seconds\":%.3f,"
               "\"qemu_seconds\":%.3f,\"mib_per_second\":%.1f,\"downtime_ms\":%" G_GINT64_FORMAT
               ",\"running\":%s,\"checksum\":\"%s\"}\n",
               what, qfile, qg_cache_mode_to_string(opts.cache), opts.live ? "true" : "false",
               s->helper ? "true" : "false", s->stream_length, s->seconds, s->qemu_seconds,
               rate, s->downtime_ms, s->running ? "true" : "false", sum);
    } else {
        g_autofree char *lfile = qg_text_one_line(file);
        printf("%s: %s, %.1f MiB in %.2f s (QEMU done at %.2f s), %.0f MiB/s, %s%s, %s\n",
               what, lfile, mib, s->seconds, s->qemu_seconds, rate,
               qg_cache_mode_to_string(opts.cache),
               g_str_equal(what, "save") ? (s->running ? ", guest was running"
                                                       : ", guest was paused")
                                         : (s->running ? ", guest resumed" : ", guest paused"),
               sum);
    }
    fflush(stdout);
}

static char *
node_to_json(JsonNode *node)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();

    json_generator_set_root(gen, node);
    return json_generator_to_data(gen, NULL);
}

/* `qmp COMMAND [ARGS]`: a QMP shell for scripts (the demo and its benchmark). */
static int
run_qmp(QgQmp *qmp, const char *command, const char *args_json)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) ret = NULL;
    g_autofree char *text = NULL;
    JsonObject *args = NULL;
    gint64 start;

    if (args_json) {
        JsonNode *root;
        if (!json_parser_load_from_data(parser, args_json, -1, &err) ||
            !(root = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_OBJECT(root)) {
            print_error("arguments must be a JSON object: %s", err ? err->message : args_json);
            return 2;
        }
        args = json_node_get_object(root);
    }
    start = g_get_monotonic_time();
    ret = qg_qmp_execute(qmp, command, args, &err);
    if (!ret) {
        print_error("%s", err->message);
        return 1;
    }
    text = node_to_json(ret);
    if (!opts.wait_migration) {
        printf("%s\n", text);
        return 0;
    }
    for (;;) {
        g_autoptr(JsonObject) ev = qg_qmp_next_event(qmp, 1000, &err);
        const char *st;

        if (err) {
            print_error("%s", err->message);
            return 1;
        }
        if (!ev || g_strcmp0(qg_json_get_string(ev, "event"), "MIGRATION") != 0) {
            continue;
        }
        st = qg_json_get_string(qg_json_get_object(ev, "data"), "status") ?: "";
        if (g_str_equal(st, "completed") || g_str_equal(st, "failed") ||
            g_str_equal(st, "cancelled")) {
            g_autofree char *qst = json_quote(st);
            printf("{\"status\":%s,\"seconds\":%.3f}\n", qst,
                   (g_get_monotonic_time() - start) / 1e6);
            return g_str_equal(st, "completed") ? 0 : 1;
        }
    }
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new("save|restore FILE | qmp COMMAND [ARGS]");
    g_autoptr(GError) err = NULL;
    g_autoptr(QgQmp) qmp = NULL;
    QgMigrateOptions mopts = { 0 };
    QgMigrateStats stats = { 0 };
    const char *cmd, *file;
    gboolean ok;

    struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESETHAND };

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_summary(ctx,
        "Save a QEMU guest to FILE through iohelper, or restore it into a QEMU started\n"
        "with -incoming defer. The image is a 4 KiB header of ours (checked on restore)\n"
        "followed by QEMU's migration stream.");
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        print_error("%s", err->message);
        return 2;
    }
    if (argc >= 3 && argc <= 4 && g_str_equal(argv[1], "qmp")) {
        /* checked below */
    } else if (argc != 3 ||
               (!g_str_equal(argv[1], "save") && !g_str_equal(argv[1], "restore"))) {
        print_error("usage: qemu-iohelper save|restore --qmp SOCK FILE (see --help)");
        return 2;
    }
    if (!opts.qmp_path || !*opts.qmp_path) {
        print_error("--qmp SOCK is required");
        return 2;
    }
    if (!*argv[2]) {
        print_error("%s: FILE is empty (see --help)", argv[1]);
        return 2;
    }
    if (opts.max_bandwidth_mib < 0 || opts.timeout_s < 0 || (opts.stall_timeout_s < 0 && opts.stall_timeout_s != G_MININT)) {
        print_error("--max-bandwidth, --timeout and --stall-timeout take positive numbers");
        return 2;
    }
    cmd = argv[1];
    file = argv[2];
    opts.tty = isatty(STDERR_FILENO);

    qmp = qg_qmp_connect(opts.qmp_path, (guint)opts.timeout_s * 1000, &err);
    if (!qmp) {
        print_error("%s", err->message);
        return 1;
    }
    if (g_str_equal(cmd, "qmp")) {
        return run_qmp(qmp, argv[2], argc == 4 ? argv[3] : NULL);
    }
    mopts.cache = opts.cache;
    mopts.live = opts.live;
    mopts.max_bandwidth = (guint64)opts.max_bandwidth_mib << 20;
    mopts.progress_interval_ms = 500;
    mopts.interrupted = &interrupted;
    mopts.stall_timeout_s = opts.stall_timeout_s == G_MININT ? QG_MIGRATE_STALL_TIMEOUT_S
                                                     : (guint)opts.stall_timeout_s;
    if (opts.progress) {
        mopts.progress = show_progress;
    }
    if (g_str_equal(cmd, "save")) {
        ok = qg_migrate_save(qmp, file, &mopts, &stats, &err);
    } else {
        ok = qg_migrate_restore(qmp, file, &mopts, &stats, &err);
    }
    if (opts.drew) {
        fputc('\n', stderr);
    }
    if (!ok) {
        print_error("%s", err->message);
        return 1;
    }
    if (opts.stats) {
        print_stats(cmd, file, &stats);
    }
    return 0;
}
