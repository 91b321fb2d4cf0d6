/* qemu-iohelper.c - save a running QEMU to a file through iohelper, and restore it
 *
 *   qemu-iohelper save    --qmp SOCK FILE [--bypass-cache[=direct|fadvise]] [--live]
 *                         [--max-bandwidth=MIB] [--stall-timeout=S] [--progress]
 *                         [--stats[=text|json]] [--compress[=zstd[:LEVEL]]] [--threads=N]
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
#include <sys/resource.h>
#include <unistd.h>
#include <glib-unix.h>

#include "ioh-nbd-uri.h"
#include "ioh-number.h"
#include "ioh-opt.h"
#include "ioh-option-rules.h"
#include "qg-image.h"
#include "qg-migrate.h"
#include "qg-qmp.h"
#include "qg-text.h"

typedef struct {
    char *qmp_path;
    IohCacheMode cache;
    gboolean live;
    gboolean progress;
    char *stats;           /* NULL, "text" or "json" */
    gint64 max_bandwidth_mib;
    gint timeout_s;
    gint stall_timeout_s;  /* G_MININT: not given */
    gboolean wait_migration;
    gboolean tty;
    gboolean drew;
    char *compress;        /* save: "zstd" or "zstd:LEVEL"; NULL: raw */
    gint threads;          /* save --compress: zstd's workers; 0: the online CPUs */
} Opts;

static Opts opts = { .stall_timeout_s = G_MININT };

/* SIGINT and SIGTERM cancel the job (it then undoes itself and we exit 1); a second one
 * kills: the source is removed on the first, and GLib puts back the default action. The
 * sources live in a context of their own, run by a thread of their own, since the job
 * blocks the main thread. */
typedef struct {
    GCancellable *cancellable;
    GMainContext *ctx;
    GMainLoop *loop;
    GThread *thread;
} SignalWatch;

static gboolean
on_signal(gpointer data)
{
    g_debug("signal: cancelling the job");
    g_cancellable_cancel(data);
    return G_SOURCE_REMOVE;
}

static gpointer
signal_thread(gpointer data)
{
    SignalWatch *sw = data;

    g_main_context_push_thread_default(sw->ctx);
    g_main_loop_run(sw->loop);
    g_main_context_pop_thread_default(sw->ctx);
    return NULL;
}

static void
signal_watch_add(SignalWatch *sw, int signum)
{
    g_autoptr(GSource) src = g_unix_signal_source_new(signum);

    g_source_set_callback(src, on_signal, sw->cancellable, NULL);
    g_source_attach(src, sw->ctx);
}

static SignalWatch *
signal_watch_new(void)
{
    SignalWatch *sw = g_new0(SignalWatch, 1);

    sw->cancellable = g_cancellable_new();
    sw->ctx = g_main_context_new();
    sw->loop = g_main_loop_new(sw->ctx, FALSE);
    signal_watch_add(sw, SIGINT);
    signal_watch_add(sw, SIGTERM);
    sw->thread = g_thread_new("signals", signal_thread, sw);
    return sw;
}

static gboolean
quit_loop(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_REMOVE;
}

static void
signal_watch_free(SignalWatch *sw)
{
    if (!sw) {
        return;
    }
    g_main_context_invoke(sw->ctx, quit_loop, sw->loop);
    g_thread_join(sw->thread);
    g_main_loop_unref(sw->loop);
    g_main_context_unref(sw->ctx);
    g_object_unref(sw->cancellable);
    g_free(sw);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SignalWatch, signal_watch_free)

static gboolean
parse_cache(const char *value, GError **error)
{
    if (!value) {
        opts.cache = IOH_CACHE_DIRECT;
    } else if (g_str_equal(value, "none")) {
        opts.cache = IOH_CACHE_BUFFERED;
    } else if (!ioh_cache_mode_from_string(value, &opts.cache, NULL) ||
               opts.cache == IOH_CACHE_NBD) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--bypass-cache takes direct or fadvise, not '%s'", value);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parse_stats(const char *value, GError **error)
{
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

/* --compress alone is zstd at the helper's default level; the value is checked here, so
 * that a bad one is a usage error before QEMU is asked anything. */
static gboolean
parse_compress(const char *value, GError **error)
{
    g_autoptr(QgImageInfo) probe = qg_image_info_new();

    if (!qg_image_set_compression(probe, value ? value : "zstd", error)) {
        return FALSE;
    }
    g_free(opts.compress);
    opts.compress = g_strdup(value ? value : "zstd");
    return TRUE;
}

/* A whole decimal number of option @name; the ranges are checked with the command. */
static gboolean
parse_int(const char *name, const char *value, gint64 min, gint64 max, gint64 *ret,
          GError **error)
{
    if (!ioh_number_signed(value, 10, min, max, ret)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--%s: '%s' is not a whole number", name, value);
        return FALSE;
    }
    return TRUE;
}

typedef enum {
    OPT_QMP, OPT_BYPASS_CACHE, OPT_LIVE, OPT_MAX_BANDWIDTH, OPT_PROGRESS, OPT_STATS,
    OPT_WAIT_MIGRATION, OPT_TIMEOUT, OPT_STALL_TIMEOUT, OPT_COMPRESS, OPT_THREADS, OPT_HELP,
} OptId;

static const char *const cache_words[] = { "direct", "fadvise", "none", NULL };
static const char *const stats_words[] = { "text", "json", NULL };
static const char *const compress_words[] = { "zstd", NULL };

/* The grammar is the helper's (ioh-opt.h): an optional value follows '='. */
static const IohOptEntry entries[] = {
    { "qmp", OPT_QMP, 0, IOH_OPT_REQUIRED, NULL },
    { "bypass-cache", OPT_BYPASS_CACHE, 0, IOH_OPT_OPTIONAL, cache_words },
    { "live", OPT_LIVE, 0, IOH_OPT_NONE, NULL },
    { "max-bandwidth", OPT_MAX_BANDWIDTH, 0, IOH_OPT_REQUIRED, NULL },
    { "progress", OPT_PROGRESS, 0, IOH_OPT_NONE, NULL },
    { "stats", OPT_STATS, 0, IOH_OPT_OPTIONAL, stats_words },
    { "wait-migration", OPT_WAIT_MIGRATION, 0, IOH_OPT_NONE, NULL },
    { "timeout", OPT_TIMEOUT, 0, IOH_OPT_REQUIRED, NULL },
    { "stall-timeout", OPT_STALL_TIMEOUT, 0, IOH_OPT_REQUIRED, NULL },
    { "compress", OPT_COMPRESS, 0, IOH_OPT_OPTIONAL, compress_words },
    { "threads", OPT_THREADS, 0, IOH_OPT_REQUIRED, NULL },
    { "help", OPT_HELP, 'h', IOH_OPT_NONE, NULL },
    { NULL, 0, 0, 0, NULL },
};

static const char usage_text[] =
    "Usage: qemu-iohelper [OPTION...] save|restore FILE | qmp COMMAND [ARGS]\n"
    "Save a QEMU guest to FILE through iohelper, or restore it into a QEMU started\n"
    "with -incoming defer. The image is a 4 KiB header of ours (checked on restore)\n"
    "followed by QEMU's migration stream.\n"
    "\n"
    "  --qmp=SOCK               QEMU's QMP unix socket (required)\n"
    "  --bypass-cache[=MODE]    bypass the page cache: direct (O_DIRECT, the default) or\n"
    "                           fadvise\n"
    "  --live                   save: do not pause the guest before the migration\n"
    "  --max-bandwidth=MIB      save: cap QEMU's send rate at MIB MiB/s (default:\n"
    "                           unlimited)\n"
    "  --progress               show bytes on disk, MiB/s and ETA on stderr\n"
    "  --stats[=FORMAT]         print a summary at the end on stdout (text or json)\n"
    "  --wait-migration         qmp: then wait for the migration to end; print its status\n"
    "                           and seconds\n"
    "  --timeout=S              seconds to wait for any one QMP reply (default 120)\n"
    "  --stall-timeout=S        fail when no byte of the stream moved for S seconds\n"
    "                           (default 120; 0: never)\n"
    "  --compress[=zstd[:LEVEL]]  save: store the stream as zstd frames (LEVEL -7 to 19,\n"
    "                           default 1); a restore reads it from the header\n"
    "  --threads=N              save --compress: zstd's compression threads (1 to 64;\n"
    "                           default: the online CPUs)\n"
    "  -h, --help               show this help\n"
    "\n"
    "An optional value follows '=' (--stats=json).\n";

static gboolean help;

static gboolean
apply_number(const IohOptEntry *e, const char *value, GError **error)
{
    gint64 v;

    if (e->id == OPT_MAX_BANDWIDTH) {
        return parse_int(e->name, value, G_MININT64, G_MAXINT64, &opts.max_bandwidth_mib,
                         error);
    }
    if (!parse_int(e->name, value, G_MININT, G_MAXINT, &v, error)) {
        return FALSE;
    }
    if (e->id == OPT_TIMEOUT) {
        opts.timeout_s = (gint)v;
    } else if (e->id == OPT_STALL_TIMEOUT) {
        opts.stall_timeout_s = (gint)v;
    } else {
        opts.threads = (gint)v;
    }
    return TRUE;
}

/* ioh_opt_parse()'s callback: one option of @entries. */
static gboolean
apply_option(const IohOptEntry *e, const char *value, gpointer data, GError **error)
{
    (void)data;
    switch ((OptId)e->id) {
    case OPT_QMP:
        g_free(opts.qmp_path);
        opts.qmp_path = g_strdup(value);
        return TRUE;
    case OPT_BYPASS_CACHE:
        return parse_cache(value, error);
    case OPT_STATS:
        return parse_stats(value, error);
    case OPT_COMPRESS:
        return parse_compress(value, error);
    case OPT_LIVE:
        opts.live = TRUE;
        return TRUE;
    case OPT_PROGRESS:
        opts.progress = TRUE;
        return TRUE;
    case OPT_WAIT_MIGRATION:
        opts.wait_migration = TRUE;
        return TRUE;
    case OPT_HELP:
        help = TRUE;
        return TRUE;
    default:
        return apply_number(e, value, error);
    }
}

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
    }
}

/* The mode a job reports: an NBD export has no page cache (--bypass-cache is moot). */
static const char *
job_mode(const char *file)
{
    return ioh_cache_mode_to_string(ioh_nbd_is_uri(file) ? IOH_CACHE_NBD : opts.cache);
}

static void
print_stats_json(const char *what, const char *file, const QgMigrateStats *s)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autofree char *sum = qg_image_checksum_to_string(s->checksum);
    double mib = (double)s->stream_length / (1 << 20);

    json_builder_begin_object(b);
    add_string(b, "operation", what);
    add_string(b, "file", file);
    add_string(b, "mode", job_mode(file));
    json_builder_set_member_name(b, "live");
    json_builder_add_boolean_value(b, opts.live);
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
    /* this process moves no byte of the stream: its CPU stays near zero */
    add_double(b, "cpu_seconds", cpu_seconds(RUSAGE_SELF));
    add_double(b, "helper_cpu_seconds", cpu_seconds(RUSAGE_CHILDREN));
    json_builder_end_object(b);
    print_json(b);
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
        fprintf(stderr, "%ssave: %.1f MiB %s (%.1f MiB synced), %.0f MiB/s, %3.0f%%, "
                "ETA %s%s", opts.tty ? "\r" : "", (double)p->written / (1 << 20),
                opts.compress ? "of stream compressed" : "on disk",
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

/* Text stats, a compressed image's second line: stored bytes and the ratio. */
static void
print_stats_stored(const QgMigrateStats *s)
{
    if (s->compressed) {
        printf("stored: %.1f MiB, ratio %.3f (zstd level %d)\n",
               (double)s->stored_length / (1 << 20),
               s->stream_length ? (double)s->stored_length / s->stream_length : 1.0,
               s->compress_level);
    }
}

static void
print_stats(const char *what, const char *file, const QgMigrateStats *s)
{
    g_autofree char *sum = qg_image_checksum_to_string(s->checksum);
    /* an NBD URI without its secrets, as in every message */
    g_autofree char *name = ioh_nbd_safe_name(file);
    g_autofree char *lfile = qg_text_one_line(name);
    double mib = (double)s->stream_length / (1 << 20);
    double rate = s->seconds > 0 ? mib / s->seconds : 0;

    if (g_str_equal(opts.stats, "json")) {
        print_stats_json(what, name, s);
    } else {
        printf("%s: %s, %.1f MiB in %.2f s (QEMU done at %.2f s), %.0f MiB/s, %s%s, %s\n",
               what, lfile, mib, s->seconds, s->qemu_seconds, rate,
               job_mode(file),
               g_str_equal(what, "save") ? (s->running ? ", guest was running"
                                                       : ", guest was paused")
                                         : (s->running ? ", guest resumed" : ", guest paused"),
               sum);
        print_stats_stored(s);
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
        if (!ev || g_strcmp0(ioh_json_get_string(ev, "event"), "MIGRATION") != 0) {
            continue;
        }
        st = ioh_json_get_string(ioh_json_get_object(ev, "data"), "status") ?: "";
        if (g_str_equal(st, "completed") || g_str_equal(st, "failed") ||
            g_str_equal(st, "cancelled")) {
            g_autoptr(JsonBuilder) b = json_builder_new();

            json_builder_begin_object(b);
            add_string(b, "status", st);
            add_double(b, "seconds", (g_get_monotonic_time() - start) / 1e6);
            json_builder_end_object(b);
            print_json(b);
            return g_str_equal(st, "completed") ? 0 : 1;
        }
    }
}

/* --compress and --threads belong to a save; --threads to --compress: the helper's rules
 * (ioh-option-rules.h), in this tool's words. */
static gboolean
check_compress_args(const char *cmd)
{
    gboolean save = g_str_equal(cmd, "save");
    IohOptionSet set = {
        .compress = opts.compress != NULL,
        .threads = opts.threads != 0,
        .direction_known = TRUE,
        .direction = save                          ? IOH_DIRECTION_SAVE
                     : g_str_equal(cmd, "restore") ? IOH_DIRECTION_RESTORE
                                                   : IOH_DIRECTION_COPY,
    };
    IohOptionRule rule = ioh_option_rules_check(&set);

    if (rule == IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE ||
        (rule == IOH_OPTION_RULE_THREADS_NEED_COMPRESS && !save)) {
        print_error("--compress and --threads are for save (a restore reads the "
                    "compression from the image's header)");
        return FALSE;
    }
    if (rule == IOH_OPTION_RULE_THREADS_NEED_COMPRESS) {
        print_error("--threads needs --compress (they are zstd's compression threads)");
        return FALSE;
    }
    if (opts.threads < 0 || opts.threads > 64) {
        print_error("--threads takes 1 to 64, not %d", opts.threads);
        return FALSE;
    }
    return TRUE;
}

/* Parses and checks the command line: 0, -1 when the help was asked for (and printed),
 * or the exit status of a usage error. */
static int
parse_args(int *argc, char ***argv)
{
    g_autoptr(GPtrArray) operands = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    char **av;

    g_ptr_array_add(operands, (*argv)[0]);
    if (!ioh_opt_parse(entries, *argc, *argv, apply_option, NULL, operands, &err)) {
        print_error("%s (see --help)", err->message);
        return 2;
    }
    if (help) {
        fputs(usage_text, stdout);
        return -1;
    }
    g_ptr_array_add(operands, NULL);
    /* the operands, in order, after the program's name (they live as long as argv) */
    *argc = (int)operands->len - 1;
    *argv = av = (char **)g_ptr_array_steal(operands, NULL);
    if (*argc >= 3 && *argc <= 4 && g_str_equal(av[1], "qmp")) {
        /* checked below */
    } else if (*argc != 3 || (!g_str_equal(av[1], "save") && !g_str_equal(av[1], "restore"))) {
        print_error("usage: qemu-iohelper save|restore --qmp SOCK FILE (see --help)");
        return 2;
    }
    if (!opts.qmp_path || !*opts.qmp_path) {
        print_error("--qmp SOCK is required");
        return 2;
    }
    if (!*av[2]) {
        print_error("%s: FILE is empty (see --help)", av[1]);
        return 2;
    }
    if (!g_str_equal(av[1], "qmp") && ioh_nbd_is_legacy(av[2])) {
        /* never a file named "nbd:HOST" made by mistake */
        print_error("%s: '%s' is QEMU's legacy NBD syntax: use an NBD URI "
                    "(nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH), or './%s' "
                    "for a file of that name", av[1], av[2], av[2]);
        return 2;
    }
    if (!check_compress_args(av[1])) {
        return 2;
    }
    if (opts.max_bandwidth_mib < 0 || opts.timeout_s < 0 ||
        (opts.stall_timeout_s < 0 && opts.stall_timeout_s != G_MININT)) {
        print_error("--max-bandwidth, --timeout and --stall-timeout take positive numbers");
        return 2;
    }
    return 0;
}

/* `save FILE` or `restore FILE`: the exit status. */
static int
run_job(QgQmp *qmp, const char *cmd, const char *file, GCancellable *cancellable)
{
    g_autoptr(GError) err = NULL;
    QgMigrateOptions mopts = { 0 };
    QgMigrateStats stats = { 0 };
    gboolean ok;

    mopts.cache = opts.cache;
    mopts.live = opts.live;
    mopts.max_bandwidth = (guint64)opts.max_bandwidth_mib << 20;
    mopts.progress_interval_ms = 500;
    mopts.cancellable = cancellable;
    mopts.compress = opts.compress;
    mopts.threads = (guint)opts.threads;
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

int
main(int argc, char **argv)
{
    g_autoptr(SignalWatch) signals = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(QgQmp) qmp = NULL;
    int status;

    /* G_MESSAGES_DEBUG=iohelper: the debug lines go to stderr, never into stdout (which
     * may carry --stats=json or a QMP reply). */
    g_log_writer_default_set_use_stderr(TRUE);
    signal(SIGPIPE, SIG_IGN);
    signals = signal_watch_new();
    status = parse_args(&argc, &argv);
    if (status) {
        return status < 0 ? 0 : status;
    }
    opts.tty = isatty(STDERR_FILENO);
    qmp = qg_qmp_connect(opts.qmp_path, (guint)opts.timeout_s * 1000, &err);
    if (!qmp) {
        print_error("%s", err->message);
        return 1;
    }
    if (g_str_equal(argv[1], "qmp")) {
        return run_qmp(qmp, argv[2], argc == 4 ? argv[3] : NULL);
    }
    return run_job(qmp, argv[1], argv[2], signals->cancellable);
}
