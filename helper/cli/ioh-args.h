/* ioh-args.h - the iohelper command line
 *
 *   iohelper [OPTION...] IN OUT   standalone: IN and OUT are a path, "-" or "fd:N"
 *   iohelper PATH FD              libvirt's form: FD is the open image; its access mode
 *                                 gives the direction and its O_DIRECT flag the mode
 *
 * Two operands whose second is a bare decimal number are the libvirt form (write a file
 * named "1" as ./1). Options are accepted in both forms. Only the bare operand "-" means
 * stdin/stdout and only "fd:" followed by a decimal number an inherited fd: "./-" and
 * "./fd:1" are paths, and a malformed "fd:..." is a usage error.
 */
#pragma once

#include <glib.h>

#include "ioh-copy.h"

G_BEGIN_DECLS

#define IOH_ARGS_ERROR (ioh_args_error_quark())
GQuark ioh_args_error_quark(void);

typedef enum {
    IOH_STATS_NONE,
    IOH_STATS_TEXT,
    IOH_STATS_JSON,
} IohStatsFormat;

typedef enum {
    IOH_OPERAND_PATH,        /* a file name */
    IOH_OPERAND_STDIO,       /* "-": stdin for IN, stdout for OUT */
    IOH_OPERAND_FD,          /* "fd:N" */
    IOH_OPERAND_NBD,         /* an NBD URI: nbd://, nbds://, nbd+unix://... (ioh-nbd.h) */
} IohOperandKind;

typedef struct {
    IohOperandKind kind;
    int fd;                  /* STDIO: 0 or 1; FD: N; PATH: -1 */
} IohOperand;

typedef struct {
    gboolean help;
    gboolean version;
    gboolean libvirt;        /* PATH FD form */
    char *in;                /* standalone operands */
    char *out;
    IohOperand in_op;        /* what IN and OUT are (standalone form) */
    IohOperand out_op;
    char *path;              /* libvirt form */
    int fd;
    gboolean direct;
    gboolean fadvise;
    IohCopyOptions copy;
    IohStatsFormat stats;
    gboolean progress;
    int status_fd;           /* -1: none */
    char *record;            /* append a JSON line per copy to this file */
    const char *checksum_filters[2];  /* --checksum: { name, NULL }, copy.filters */
    gboolean compress;       /* --compress=zstd[:LEVEL] (a save) */
    gboolean decompress;     /* --decompress (a restore) */
    const char *filters[3];  /* with either: the checksum on the stream side of (un)zstd */
    gboolean nbd_option;     /* --connections, --requests or --request-size given */
    gboolean has_memory_budget;  /* --memory-budget, or memory-budget in the config file */
    guint64 memory_budget;
} IohArgs;

/* The host's config file: $IOHELPER_CONF, else this. A key file; its group [iohelper]
 * may set memory-budget=SIZE, the default of --memory-budget (read in both forms). */
#define IOH_ARGS_CONF "/etc/iohelper.conf"

/* Parses @argv (not modified). On a usage error returns FALSE with a one-line message.
 * Reads no file: the config file is ioh_args_read_config()'s. */
gboolean ioh_args_parse(int argc, char **argv, IohArgs *ret_args, GError **error);

/* Without --memory-budget, takes memory-budget from the config file (a missing file or
 * key: no budget). A file that cannot be read or holds a bad value is IOH_ERROR (errno,
 * EINVAL for a bad value) with operation "config" and the file as its path: "config file
 * PATH: CAUSE". Separate from parsing so that the helper reads it once its status fd is
 * known not to collide with the data, and can report it there (a usage error, exit 2). */
gboolean ioh_args_read_config(IohArgs *args, GError **error);

/* Parses a size: digits with an optional K, M, G or T suffix, or KiB, MiB, GiB, TiB: powers
 * of 1024 either way (lower-case k, m, g, t too). "KB", "MB", "GB", "TB" are refused as
 * ambiguous (decimal or binary?). Rejects signs, junk, zero when !@allow_zero, and
 * overflow. */
gboolean ioh_args_parse_size(const char *text, gboolean allow_zero, guint64 *ret_size,
                             GError **error);

/* Releases the strings held by @args (the struct itself is the caller's). */
void ioh_args_clear(IohArgs *args);

/* The --help text. */
const char *ioh_args_usage(void);

G_END_DECLS
