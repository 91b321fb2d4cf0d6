/* ioh-opt.h - the one command-line grammar of iohelper and qemu-iohelper, on getopt_long
 *
 * Both programs parse their options here (getopt_long(3) in its in-order mode), to the
 * same rules:
 * - a long option is matched by its whole name only ("--dir" is not "--direct");
 * - a short option stands alone ("-hV" is unknown, not "-h -V");
 * - an option without a value refuses one ("--direct=1" is an error, never a silent
 *   "--direct");
 * - a required value follows '=' or is the next argument, whatever it looks like;
 * - an optional value follows '=' only ("--stats json" is not "--stats=json"), and a
 *   next argument that is one of the option's words is refused with the fix, so that a
 *   word meant as the value is never taken for an operand;
 * - "--" ends the options; "-" is an operand.
 * Why not GOptionContext: it takes the next argument as an optional value ("--stats IN
 * OUT" reads IN as the format) and drops the value of a flag ("--direct=no" is --direct),
 * and neither can be turned off.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    IOH_OPT_NONE,          /* a flag: no value */
    IOH_OPT_REQUIRED,      /* --name=VALUE or --name VALUE */
    IOH_OPT_OPTIONAL,      /* --name or --name=VALUE */
} IohOptArg;

typedef struct {
    const char *name;               /* the long name, without "--" */
    int id;                         /* the caller's, for its own tables */
    char short_name;                /* or 0 */
    IohOptArg arg;
    const char *const *words;       /* IOH_OPT_OPTIONAL: the values refused as a next word */
} IohOptEntry;

/* Called for each option in order: @entry's name, its value (NULL when none was given). */
typedef gboolean (*IohOptFunc)(const IohOptEntry *entry, const char *value, gpointer data,
                               GError **error);

/* Parses @argv[1..@argc-1] (not modified) by @entries (ended by a NULL name): calls @func
 * for each option and appends each operand (a pointer into @argv) to @operands, in order.
 * A grammar error is G_OPTION_ERROR with one line naming the option: "unknown option
 * '--x'", "option '--x' takes no value", "option '--x' needs a value", "option '--x'
 * takes its value after '=': ...". Not thread-safe (getopt's state is global). */
gboolean ioh_opt_parse(const IohOptEntry *entries, int argc, char **argv, IohOptFunc func,
                       gpointer data, GPtrArray *operands, GError **error);

G_END_DECLS
