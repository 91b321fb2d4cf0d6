/* ioh-opt.c - the one command-line grammar of iohelper and qemu-iohelper, on getopt_long */
#include "ioh-opt.h"

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include "ioh-escape.h"

/* getopt_long's return value for the entry at index i given by its long name: past every
 * character, so that it never meets a short option's. */
#define LONG_BASE 256

static gboolean opt_error(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
opt_error(GError **error, int code, const char *fmt, ...)
{
    va_list ap;

    /* The message quotes what the user typed: keep it one line, free of escapes. */
    va_start(ap, fmt);
    ioh_escape_set_error_valist(error, G_OPTION_ERROR, code, fmt, ap);
    va_end(ap);
    return FALSE;
}

static struct option *
long_table(const IohOptEntry *entries)
{
    gsize n = 0;
    struct option *t;

    while (entries[n].name) {
        n++;
    }
    t = g_new0(struct option, n + 1);
    for (gsize i = 0; i < n; i++) {
        t[i].name = entries[i].name;
        t[i].has_arg = entries[i].arg == IOH_OPT_NONE       ? no_argument
                       : entries[i].arg == IOH_OPT_REQUIRED ? required_argument
                                                            : optional_argument;
        t[i].val = LONG_BASE + (int)i;
    }
    return t;
}

/* '-': operands come back in order, as option 1, whatever POSIXLY_CORRECT says; ':': a
 * missing value is told apart (':') from an unknown option ('?'). Short options are
 * flags. */
static char *
short_string(const IohOptEntry *entries)
{
    GString *s = g_string_new("-:");

    for (const IohOptEntry *e = entries; e->name; e++) {
        if (e->short_name) {
            g_string_append_c(s, e->short_name);
        }
    }
    return g_string_free(s, FALSE);
}

/* The length of the name typed in "--NAME[=VALUE]". */
static int
typed_len(const char *elem)
{
    const char *eq = strchr(elem + 2, '=');

    return eq ? (int)(eq - (elem + 2)) : (int)strlen(elem + 2);
}

/* getopt_long takes a unique prefix for the whole name: not this grammar. */
static gboolean
is_whole_name(const char *elem, const char *name)
{
    int n = typed_len(elem);

    return (int)strlen(name) == n && strncmp(elem + 2, name, (gsize)n) == 0;
}

static gboolean
unknown(const char *elem, GError **error)
{
    if (g_str_has_prefix(elem, "--")) {
        return opt_error(error, G_OPTION_ERROR_UNKNOWN_OPTION, "unknown option '--%.*s'",
                         typed_len(elem), elem + 2);
    }
    return opt_error(error, G_OPTION_ERROR_UNKNOWN_OPTION, "unknown option '%s'", elem);
}

/* The entry getopt_long returned @c for, as typed in @elem, or NULL (a prefix of a long
 * name, a short option in a cluster, one that is not there at all). */
static const IohOptEntry *
typed_entry(const IohOptEntry *entries, int c, const char *elem)
{
    if (c >= LONG_BASE) {
        return is_whole_name(elem, entries[c - LONG_BASE].name) ? &entries[c - LONG_BASE]
                                                                 : NULL;
    }
    for (const IohOptEntry *e = entries; e->name; e++) {
        if (e->short_name && e->short_name == c && strlen(elem) == 2) {
            return e;
        }
    }
    return NULL;
}

/* '?' or ':' from getopt_long on @elem: which error it is. */
static gboolean
grammar_error(const IohOptEntry *entries, int c, const char *elem, GError **error)
{
    const IohOptEntry *e = NULL;

    if (g_str_has_prefix(elem, "--") && optopt >= LONG_BASE) {
        e = typed_entry(entries, optopt, elem);
    }
    if (!e) {
        return unknown(elem, error);
    }
    if (c == ':') {
        return opt_error(error, G_OPTION_ERROR_BAD_VALUE, "option '--%s' needs a value",
                         e->name);
    }
    return opt_error(error, G_OPTION_ERROR_BAD_VALUE, "option '--%s' takes no value",
                     e->name);
}

/* "--stats json": an optional value must follow '=', and a word that looks like one is
 * not silently taken for an operand. */
static gboolean
check_next_word(const IohOptEntry *e, const char *next, GError **error)
{
    if (e->words && next && g_strv_contains(e->words, next)) {
        return opt_error(error, G_OPTION_ERROR_BAD_VALUE, "option '--%s' takes its value "
                         "after '=': write '--%s=%s' (or './%s' for a file of that name)",
                         e->name, e->name, next, next);
    }
    return TRUE;
}

/* One step: what getopt_long returned as @c for @elem. */
static gboolean
take(const IohOptEntry *entries, int c, const char *elem, int argc, char **argv,
     IohOptFunc func, gpointer data, GPtrArray *operands, GError **error)
{
    const IohOptEntry *e;

    if (c == 1) {
        g_ptr_array_add(operands, optarg);
        return TRUE;
    }
    if (c == '?' || c == ':') {
        return grammar_error(entries, c, elem, error);
    }
    e = typed_entry(entries, c, elem);
    if (!e) {
        return unknown(elem, error);
    }
    if (e->arg == IOH_OPT_OPTIONAL && !optarg &&
        !check_next_word(e, optind < argc ? argv[optind] : NULL, error)) {
        return FALSE;
    }
    return func(e, optarg, data, error);
}

gboolean
ioh_opt_parse(const IohOptEntry *entries, int argc, char **argv, IohOptFunc func,
              gpointer data, GPtrArray *operands, GError **error)
{
    g_autofree struct option *longs = long_table(entries);
    g_autofree char *shorts = short_string(entries);

    /* 0, not 1: glibc then starts afresh (a second parse in one process, the tests') */
    optind = 0;
    opterr = 0;
    for (;;) {
        /* the element this step reads: a short option never continues into the next
         * character (a cluster is refused at its first) */
        int at = optind == 0 ? 1 : optind;
        int c = getopt_long(argc, argv, shorts, longs, NULL);

        if (c == -1) {
            break;
        }
        if (!take(entries, c, argv[at], argc, argv, func, data, operands, error)) {
            return FALSE;
        }
    }
    for (int i = optind; i < argc; i++) {
        g_ptr_array_add(operands, argv[i]);    /* after "--" */
    }
    return TRUE;
}
