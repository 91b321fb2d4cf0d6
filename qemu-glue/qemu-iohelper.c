/* qemu-iohelper.c - save a running QEMU to a file through iohelper, and restore it
 *
 *   qemu-iohelper save|restore --qmp SOCK FILE [OPTION...]   (the options: qg-opts.h)
 *   qemu-iohelper qmp --qmp SOCK COMMAND [ARGS-JSON] [--wait-migration]
 *                         (runs one QMP command, prints its return value as JSON)
 *
 * main() and the glue: the command line (qg-opts.c), the signals (qg-signals.c), the job
 * (qg-migrate.h) and what it prints (qg-report.c, every message one line). Only the
 * binary's files print and exit. Exit status: 0 success, 1 failure, 2 usage.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "ioh-json.h"
#include "qg-args.h"
#include "qg-migrate.h"
#include "qg-placement.h"
#include "qg-qemu-pid.h"
#include "qg-qmp.h"
#include "qg-report.h"
#include "qg-signals.h"

static QgArgs opts = { .stall_timeout_s = G_MININT };
static QgReport report;

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
            qg_report_error("arguments must be a JSON object: %s", err ? err->message : args_json);
            return 2;
        }
        args = json_node_get_object(root);
    }
    start = g_get_monotonic_time();
    ret = qg_qmp_execute(qmp, command, args, &err);
    if (!ret) {
        qg_report_error("%s", err->message);
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
            qg_report_error("%s", err->message);
            return 1;
        }
        if (!ev || g_strcmp0(ioh_json_get_string(ev, "event"), "MIGRATION") != 0) {
            continue;
        }
        st = ioh_json_get_string(ioh_json_get_object(ev, "data"), "status") ?: "";
        if (g_str_equal(st, "completed") || g_str_equal(st, "failed") ||
            g_str_equal(st, "cancelled")) {
            qg_report_migration(st, (g_get_monotonic_time() - start) / 1e6);
            return g_str_equal(st, "completed") ? 0 : 1;
        }
    }
}

/* The job's options from the command line. */
static void
fill_options(QgMigrateOptions *mopts, GCancellable *cancellable)
{
    mopts->cache = opts.cache;
    mopts->live = opts.live;
    mopts->max_bandwidth = (guint64)opts.max_bandwidth_mib << 20;
    mopts->progress_interval_ms = 500;
    mopts->cancellable = cancellable;
    mopts->compress = opts.compress;
    mopts->threads = (guint)opts.threads;
    mopts->channels = (guint)opts.channels;
    mopts->qemu_compress = opts.qemu_compress;
    mopts->recipients = opts.recipients ? (const char *const *)opts.recipients->pdata : NULL;
    mopts->recipients_files = opts.recipients_files
                                  ? (const char *const *)opts.recipients_files->pdata : NULL;
    mopts->identity = opts.identity;
    mopts->stall_timeout_s = opts.stall_timeout_s == G_MININT ? QG_MIGRATE_STALL_TIMEOUT_S
                                                              : (guint)opts.stall_timeout_s;
    if (opts.progress) {
        mopts->progress = qg_report_progress;
        mopts->progress_data = &report;
    }
}

/* What the report says of the helpers' CPUs: auto's choice is not for an image that was
 * compressed or encrypted (qg_placement_applies()). */
static void
placed_as(QgPlacement *place, const QgMigrateStats *stats)
{
    if (place->cpus &&
        !qg_placement_applies(place->from_auto, stats->compressed, stats->encrypted)) {
        char *why = g_strdup_printf("%s, but the helper compressed or encrypted: it ran on "
                                    "every CPU", place->why);
        g_clear_pointer(&place->cpus, g_free);
        g_free(place->why);
        place->why = why;
    }
    report.helper_cpus = place->cpus;
    report.helper_cpus_why = place->why;
}

/* `save FILE` or `restore FILE`: the exit status. */
static int
run_job(QgQmp *qmp, const char *cmd, const char *file, GCancellable *cancellable)
{
    g_autoptr(GError) err = NULL;
    QgMigrateOptions mopts = { 0 };
    QgMigrateStats stats = { 0 };
    g_auto(QgPlacement) place = { 0 };
    g_autofree char *no_pid = NULL;
    GPid qemu_pid;
    gboolean ok;

    fill_options(&mopts, cancellable);
    qemu_pid = qg_placement_is_auto(opts.helper_cpus) ? qg_qemu_pid(qmp, &no_pid) : 0;
    /* checked by the parser: only QEMU's affinity is read here, and that never fails */
    qg_placement_choose(opts.helper_cpus, qemu_pid, no_pid, &place, NULL);
    g_debug("helper CPUs: %s (%s)", place.cpus ? place.cpus : "all", place.why);
    mopts.helper_cpus = place.cpus;
    mopts.helper_cpus_auto = place.from_auto;
    if (g_str_equal(cmd, "save")) {
        ok = qg_migrate_save(qmp, file, &mopts, &stats, &err);
    } else {
        ok = qg_migrate_restore(qmp, file, &mopts, &stats, &err);
    }
    qg_report_progress_end(&report);
    if (!ok) {
        qg_report_error("%s", err->message);
        return 1;
    }
    if (opts.stats) {
        placed_as(&place, &stats);
        qg_report_stats(&report, cmd, file, &stats, g_str_equal(opts.stats, "json"));
    }
    return 0;
}

int
main(int argc, char **argv)
{
    g_autoptr(QgSignalWatch) signals = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(QgQmp) qmp = NULL;
    g_autofree char **operands = NULL;
    char **argv0 = argv;
    int status;

    /* G_MESSAGES_DEBUG=iohelper: the debug lines go to stderr, never into stdout (which
     * may carry --stats=json or a QMP reply). */
    g_log_writer_default_set_use_stderr(TRUE);
    signal(SIGPIPE, SIG_IGN);
    signals = qg_signal_watch_new();
    status = qg_args_parse(&opts, &argc, &argv);
    if (argv != argv0) {
        operands = argv;    /* the parser's new vector of the operands (not their strings) */
    }
    if (status) {
        return status < 0 ? 0 : status;
    }
    report = (QgReport){ .cache = opts.cache, .live = opts.live,
                         .compress = opts.compress != NULL, .tty = isatty(STDERR_FILENO) };
    qmp = qg_qmp_connect(opts.qmp_path, (guint)opts.timeout_s * 1000, &err);
    if (!qmp) {
        qg_report_error("%s", err->message);
        return 1;
    }
    if (g_str_equal(argv[1], "qmp")) {
        return run_qmp(qmp, argv[2], argc == 4 ? argv[3] : NULL);
    }
    return run_job(qmp, argv[1], argv[2], qg_signal_watch_cancellable(signals));
}
