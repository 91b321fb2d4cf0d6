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
#include <sched.h>

#include "ioh-age-keys.h"
#include "ioh-args-value.h"
#include "ioh-engine.h"

G_BEGIN_DECLS

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
    IOH_OPERAND_RBD,         /* an RBD image: rbd:POOL/IMAGE... (ioh-rbd-name.h) */
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
    const char *filters[6];  /* the checksum on the stream side of (un)zstd and (un)age */
    IohAgeKeys *age;         /* --recipient (parsed); the files' keys once ioh_age_cli_load()
                              * read them (ioh-args-age.h); copy.age points here */
    GPtrArray *recipients_files;  /* --recipients-file, as given */
    char *identity_file;     /* --identity */
    int identity_fd;         /* --identity-fd; -1: none */
    gboolean encrypt;        /* --recipient or --recipients-file (a save) */
    gboolean decrypt;        /* --identity or --identity-fd (a restore) */
    gboolean nbd_option;     /* --connections, --requests, --request-size or --stall-timeout */
    gboolean has_memory_budget;  /* --memory-budget, or memory-budget in the config file */
    guint64 memory_budget;
    gboolean has_cpus;       /* --cpus=LIST */
    cpu_set_t cpus;
} IohArgs;

/* Parses @argv (not modified) with the grammar of ioh-opt.h, and checks the options
 * against each other (ioh_clash_check_options()). On a usage error returns FALSE with a
 * one-line message. Reads no file: the config file is ioh-conf.h's. */
gboolean ioh_args_parse(int argc, char **argv, IohArgs *ret_args, GError **error);

/* Builds @args->copy.filters again after a setting changed (the config file's
 * recipients: ioh-conf-age.h). */
void ioh_args_update_filters(IohArgs *args);

/* Releases the strings held by @args (the struct itself is the caller's). */
void ioh_args_clear(IohArgs *args);

/* The --help text. */
const char *ioh_args_usage(void);

G_END_DECLS
