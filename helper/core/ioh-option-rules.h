/* ioh-option-rules.h - the rules between the helper's options, one table for three parts
 *
 * The helper (cli/ioh-clash.c), libwrap (iohwrap-options.c) and qemu-iohelper refuse the
 * same combinations. Each words a refusal in its own terms (an option, a setter, a
 * subcommand), so this says which rule a combination breaks, not how to say it; the
 * rules are checked in the order of IohOptionRule.
 */
#pragma once

#include <glib.h>

#include "ioh-protocol.h"

G_BEGIN_DECLS

typedef struct {
    gboolean direct;         /* O_DIRECT asked for */
    gboolean fadvise;        /* write-back and POSIX_FADV_DONTNEED asked for */
    gboolean compress;
    gboolean decompress;
    gboolean encrypt;        /* age recipients given (a save) */
    gboolean decrypt;        /* an age identity given (a restore) */
    guint threads;           /* compression or encryption threads asked for; 0: none */
    gboolean nbd_options;    /* options of an NBD end given (connections, ...) */
    gboolean nbd;            /* an NBD export is one side */
    gboolean direction_known;  /* FALSE: the rules that need the direction wait */
    IohDirection direction;  /* the copy's (ioh-protocol.h): save, restore or copy */
} IohOptionSet;

typedef enum {
    IOH_OPTION_RULE_OK,
    IOH_OPTION_RULE_DIRECT_AND_FADVISE,       /* two ways to bypass the cache: pick one */
    IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS,  /* one direction or the other */
    IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD,     /* an NBD end's options, and no NBD end */
    IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE,      /* a save compresses (direction known) */
    IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE, /* a restore decompresses (direction known) */
    IOH_OPTION_RULE_THREADS_NEED_COMPRESS,    /* they are zstd's (or age's) threads */
    IOH_OPTION_RULE_ENCRYPT_AND_DECRYPT,      /* recipients and an identity: one or other */
    IOH_OPTION_RULE_ENCRYPT_NEEDS_SAVE,       /* a save encrypts (direction known) */
    IOH_OPTION_RULE_DECRYPT_NEEDS_RESTORE,    /* a restore decrypts (direction known) */
} IohOptionRule;

/* The first rule @set breaks, or IOH_OPTION_RULE_OK. */
IohOptionRule ioh_option_rules_check(const IohOptionSet *set);

G_END_DECLS
