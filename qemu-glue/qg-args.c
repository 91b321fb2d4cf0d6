/* qg-args.c - qemu-iohelper's command line: its options and their checks (qg-args.h) */
#include "qg-args.h"
#include "qg-placement.h"

#include <stdio.h>

#include "ioh-age-keys.h"
#include "ioh-nbd-uri.h"
#include "ioh-number.h"
#include "ioh-opt.h"
#include "ioh-option-rules.h"
#include "qg-image.h"
#include "qg-report.h"

static gboolean
parse_cache(QgArgs *a, const char *value, GError **error)
{
    if (!value) {
        a->cache = IOH_CACHE_DIRECT;
    } else if (g_str_equal(value, "none")) {
        a->cache = IOH_CACHE_BUFFERED;
    } else if (!ioh_cache_mode_from_string(value, &a->cache, NULL) ||
               a->cache == IOH_CACHE_NBD) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--bypass-cache takes direct or fadvise, not '%s'", value);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parse_stats(QgArgs *a, const char *value, GError **error)
{
    if (!value || g_str_equal(value, "text")) {
        a->stats = g_strdup("text");
    } else if (g_str_equal(value, "json")) {
        a->stats = g_strdup("json");
    } else {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--stats takes text or json, not '%s'", value);
        return FALSE;
    }
    return TRUE;
}

/* --compress alone (or =zstd, no level) is the helper's --compress=auto; the value is
 * checked here, so that a bad one is a usage error before QEMU is asked anything. */
static gboolean
parse_compress(QgArgs *a, const char *value, GError **error)
{
    g_autoptr(QgImageInfo) probe = qg_image_info_new();

    if (!qg_image_set_compression(probe, value ? value : "zstd", error)) {
        return FALSE;
    }
    g_free(a->compress);
    a->compress = g_strdup(value ? value : "zstd");
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
    OPT_CHANNELS, OPT_QEMU_COMPRESS, OPT_HELPER_CPUS,
    OPT_RECIPIENT, OPT_RECIPIENTS_FILE, OPT_IDENTITY,
} OptId;

/* --recipient (checked now: a typo is a usage error before QEMU is asked anything; the
 * message never quotes the key), --recipients-file (read by the helper), --identity
 * (opened by libwrap, read by the helper). */
static gboolean
parse_age(QgArgs *a, OptId id, const char *value, GError **error)
{
    g_autoptr(IohAgeKeys) probe = ioh_age_keys_new();
    GPtrArray **list = id == OPT_RECIPIENT ? &a->recipients : &a->recipients_files;

    if (!*value) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--%s: empty value",
                    id == OPT_IDENTITY ? "identity" : id == OPT_RECIPIENT ? "recipient"
                                                                          : "recipients-file");
        return FALSE;
    }
    if (id == OPT_IDENTITY) {
        g_free(a->identity);
        a->identity = g_strdup(value);
        return TRUE;
    }
    if (id == OPT_RECIPIENT &&
        !ioh_age_keys_add_recipient(probe, value, "--recipient", error)) {
        return FALSE;
    }
    if (!*list) {
        *list = g_ptr_array_new_with_free_func(g_free);
    } else {
        g_ptr_array_remove_index(*list, (*list)->len - 1);   /* the NULL at its end */
    }
    g_ptr_array_add(*list, g_strdup(value));
    g_ptr_array_add(*list, NULL);
    return TRUE;
}

static const char *const cache_words[] = { "direct", "fadvise", "none", NULL };
static const char *const stats_words[] = { "text", "json", NULL };
static const char *const compress_words[] = { "zstd", "auto", NULL };

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
    { "recipient", OPT_RECIPIENT, 0, IOH_OPT_REQUIRED, NULL },
    { "recipients-file", OPT_RECIPIENTS_FILE, 0, IOH_OPT_REQUIRED, NULL },
    { "identity", OPT_IDENTITY, 0, IOH_OPT_REQUIRED, NULL },
    { "help", OPT_HELP, 'h', IOH_OPT_NONE, NULL },
    { "channels", OPT_CHANNELS, 0, IOH_OPT_REQUIRED, NULL },
    { "qemu-compress", OPT_QEMU_COMPRESS, 0, IOH_OPT_REQUIRED, NULL },
    { "helper-cpus", OPT_HELPER_CPUS, 0, IOH_OPT_REQUIRED, NULL },
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
    "  --compress[=zstd[:LEVEL]]  save: store the stream as zstd frames (LEVEL -7 to 19;\n"
    "                           no LEVEL, or auto: raw or a level per window, from the\n"
    "                           disk's and the compressor's speeds); a restore reads it\n"
    "                           from the header\n"
    "  --threads=N              save --compress: zstd's compression threads (1 to 64;\n"
    "                           default: the helper's CPUs); with encryption, age's too\n"
    "  --channels=N             save: N parallel channels (QEMU's multifd, 1 to 16),\n"
    "                           each through its own helper into its own region of FILE;\n"
    "                           a restore reads N from the header (docs/channels.md)\n"
    "  --qemu-compress=zstd     save --channels: QEMU's own multifd compression (zstd,\n"
    "                           zlib or none)\n"
    "  --recipient=RECIPIENT    save: encrypt the image to this age recipient (age1...;\n"
    "                           repeatable); the header records it is encrypted\n"
    "  --recipients-file=FILE   save: encrypt to every recipient in FILE (age's format)\n"
    "  --identity=FILE          restore an encrypted image with the age identities in\n"
    "                           FILE (age-keygen's format, mode 0600 or stricter)\n"
    "  --helper-cpus=auto|all|LIST  where the helper runs: auto (the default) on QEMU's\n"
    "                           CPUs when QEMU is pinned (its pipe then costs the\n"
    "                           helper half the CPU), all: anywhere, or a CPU list\n"
    "                           (0-3,6)\n"
    "  -h, --help               show this help\n"
    "\n"
    "An optional value follows '=' (--stats=json).\n";

static gboolean
apply_number(QgArgs *a, const IohOptEntry *e, const char *value, GError **error)
{
    gint64 v;

    if (e->id == OPT_MAX_BANDWIDTH) {
        return parse_int(e->name, value, G_MININT64, G_MAXINT64, &a->max_bandwidth_mib,
                         error);
    }
    if (!parse_int(e->name, value, G_MININT, G_MAXINT, &v, error)) {
        return FALSE;
    }
    if (e->id == OPT_TIMEOUT) {
        a->timeout_s = (gint)v;
    } else if (e->id == OPT_STALL_TIMEOUT) {
        a->stall_timeout_s = (gint)v;
    } else {
        a->threads = (gint)v;
    }
    return TRUE;
}

/* --helper-cpus=auto|all|LIST (qg-placement.h). */
static gboolean
parse_helper_cpus(QgArgs *a, const char *value, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!qg_placement_check(value, &local)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--helper-cpus takes auto, all or a CPU list: %s", local->message);
        return FALSE;
    }
    g_free(a->helper_cpus);
    a->helper_cpus = g_strdup(value);
    return TRUE;
}

/* ioh_opt_parse()'s callback: one option of @entries. */
static gboolean
apply_option(const IohOptEntry *e, const char *value, gpointer data, GError **error)
{
    QgArgs *a = data;

    switch ((OptId)e->id) {
    case OPT_QMP:
        g_free(a->qmp_path);
        a->qmp_path = g_strdup(value);
        return TRUE;
    case OPT_BYPASS_CACHE:
        return parse_cache(a, value, error);
    case OPT_STATS:
        return parse_stats(a, value, error);
    case OPT_COMPRESS:
        return parse_compress(a, value, error);
    case OPT_RECIPIENT:
    case OPT_RECIPIENTS_FILE:
    case OPT_IDENTITY:
        return parse_age(a, (OptId)e->id, value, error);
    case OPT_LIVE:
        a->live = TRUE;
        return TRUE;
    case OPT_PROGRESS:
        a->progress = TRUE;
        return TRUE;
    case OPT_WAIT_MIGRATION:
        a->wait_migration = TRUE;
        return TRUE;
    case OPT_HELP:
        a->help = TRUE;
        return TRUE;
    case OPT_QEMU_COMPRESS:
        return qg_args_parse_qemu_compress(a, value, error);
    case OPT_CHANNELS:
        return qg_args_parse_channels(a, value, error);
    case OPT_HELPER_CPUS:
        return parse_helper_cpus(a, value, error);
    default:
        return apply_number(a, e, value, error);
    }
}

/* --compress and --threads belong to a save; --threads to --compress: the helper's rules
 * (ioh-option-rules.h), in this tool's words. */
static gboolean
check_compress_args(const QgArgs *a, const char *cmd)
{
    gboolean save = g_str_equal(cmd, "save");
    IohOptionSet set = {
        .compress = a->compress != NULL,
        .encrypt = a->recipients || a->recipients_files,
        .decrypt = a->identity != NULL,
        .threads = a->threads != 0,
        .direction_known = TRUE,
        .direction = save                          ? IOH_DIRECTION_SAVE
                     : g_str_equal(cmd, "restore") ? IOH_DIRECTION_RESTORE
                                                   : IOH_DIRECTION_COPY,
    };
    IohOptionRule rule = ioh_option_rules_check(&set);

    if (rule == IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE ||
        (rule == IOH_OPTION_RULE_THREADS_NEED_COMPRESS && !save)) {
        qg_report_error("--compress and --threads are for save (a restore reads the "
                    "compression from the image's header)");
        return FALSE;
    }
    if (rule == IOH_OPTION_RULE_THREADS_NEED_COMPRESS) {
        qg_report_error("--threads needs --compress or --recipient (they are zstd's and "
                        "age's threads)");
        return FALSE;
    }
    if (rule == IOH_OPTION_RULE_ENCRYPT_AND_DECRYPT ||
        rule == IOH_OPTION_RULE_ENCRYPT_NEEDS_SAVE ||
        rule == IOH_OPTION_RULE_DECRYPT_NEEDS_RESTORE) {
        qg_report_error("--recipient and --recipients-file are for save, --identity for "
                        "restore (a restore reads from the image's header that it is "
                        "encrypted)");
        return FALSE;
    }
    if (a->threads < 0 || a->threads > 64) {
        qg_report_error("--threads takes 1 to 64, not %d", a->threads);
        return FALSE;
    }
    return TRUE;
}

int
qg_args_parse(QgArgs *a, int *argc, char ***argv)
{
    g_autoptr(GPtrArray) operands = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    char **av;

    g_ptr_array_add(operands, (*argv)[0]);
    if (!ioh_opt_parse(entries, *argc, *argv, apply_option, a, operands, &err)) {
        qg_report_error("%s (see --help)", err->message);
        return 2;
    }
    if (a->help) {
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
        qg_report_error("usage: qemu-iohelper save|restore --qmp SOCK FILE (see --help)");
        return 2;
    }
    if (!a->qmp_path || !*a->qmp_path) {
        qg_report_error("--qmp SOCK is required");
        return 2;
    }
    if (!*av[2]) {
        qg_report_error("%s: FILE is empty (see --help)", av[1]);
        return 2;
    }
    if (!g_str_equal(av[1], "qmp") && ioh_nbd_is_legacy(av[2])) {
        /* never a file named "nbd:HOST" made by mistake */
        qg_report_error("%s: '%s' is QEMU's legacy NBD syntax: use an NBD URI "
                    "(nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH), or './%s' "
                    "for a file of that name", av[1], av[2], av[2]);
        return 2;
    }
    if (!check_compress_args(a, av[1]) || !qg_args_check_channels(a, av[1], av[2])) {
        return 2;
    }
    if (a->max_bandwidth_mib < 0 || a->timeout_s < 0 ||
        (a->stall_timeout_s < 0 && a->stall_timeout_s != G_MININT)) {
        qg_report_error("--max-bandwidth, --timeout and --stall-timeout take positive numbers");
        return 2;
    }
    return 0;
}

