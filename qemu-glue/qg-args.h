/* qg-args.h - qemu-iohelper's command line (qg-args.c)
 *
 *   qemu-iohelper save    --qmp SOCK FILE [--bypass-cache[=direct|fadvise]] [--live]
 *                         [--max-bandwidth=MIB] [--stall-timeout=S] [--progress]
 *                         [--stats[=text|json]] [--compress[=zstd[:LEVEL]]] [--threads=N]
 *                         [--recipient=age1...]... [--recipients-file=FILE]...
 *   qemu-iohelper restore --qmp SOCK FILE [--bypass-cache[=direct|fadvise]]
 *                         [--stall-timeout=S] [--progress] [--stats[=text|json]]
 *                         [--identity=FILE]
 *   qemu-iohelper qmp     --qmp SOCK COMMAND [ARGS-JSON] [--wait-migration]
 *
 * The grammar is the helper's (ioh-opt.h); the checks across options are the helper's
 * rules (ioh-option-rules.h), in this tool's words.
 */
#pragma once

#include <glib.h>

#include "ioh-cache-mode.h"

G_BEGIN_DECLS

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
    char *compress;        /* save: "zstd" or "zstd:LEVEL"; NULL: raw */
    gint threads;          /* save --compress: zstd's workers; 0: the online CPUs */
    GPtrArray *recipients; /* save --recipient: age1... (checked), NULL-terminated; NULL */
    GPtrArray *recipients_files;  /* save --recipients-file, NULL-terminated; NULL */
    char *identity;        /* restore --identity=FILE (read by the helper, on an fd) */
    gboolean help;         /* --help */
    gint channels;         /* save --channels=N: QEMU's multifd channels; 0: one stream */
    char *qemu_compress;   /* save --qemu-compress: "zstd", "zlib"; NULL: none */
    char *helper_cpus;     /* --helper-cpus: "auto", "all" or a CPU list; NULL: auto */
} QgArgs;

/* qg-args-channels.c: --channels and --qemu-compress, and their checks (usage errors
 * printed there). */
gboolean qg_args_parse_channels(QgArgs *a, const char *value, GError **error);
gboolean qg_args_parse_qemu_compress(QgArgs *a, const char *value, GError **error);
gboolean qg_args_check_channels(const QgArgs *a, const char *cmd, const char *file);

/* Parses and checks the command line into @a (set .stall_timeout_s to G_MININT first):
 * 0, with the operands left in *@argc and *@argv (after the program's name); -1 when
 * the help was asked for (and printed); or the exit status of a usage error (printed). */
int qg_args_parse(QgArgs *a, int *argc, char ***argv);

G_END_DECLS
