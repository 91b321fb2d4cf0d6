/* ioh-args.c - the iohelper command line */
#include "ioh-args.h"
#include "ioh-filter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "ioh-error.h"
#include "ioh-escape.h"
#include "ioh-limits.h"
#include "ioh-number.h"
#include "ioh-untrusted.h"
#include "ioh-nbd.h"

G_DEFINE_QUARK(ioh-args-error-quark, ioh_args_error)

static const char usage_text[] =
    "Usage: iohelper [OPTION...] IN OUT\n"
    "       iohelper [OPTION...] PATH FD      (libvirt's libvirt_iohelper form)\n"
    "Copy a VM save stream between a pipe and a file, fast and durably.\n"
    "IN and OUT are each a path, '-' (stdin/stdout) or 'fd:N'; one of them may be an NBD\n"
    "URI (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH, nbds://...), or\n"
    "'env:NAME' for the NBD URI in environment variable NAME (out of the command line,\n"
    "which every local user can read); reading an NBD export needs --length.\n"
    "\n"
    "  --direct               open the file side with O_DIRECT (bypass the page cache)\n"
    "  --fadvise              bypass the cache by write-back and POSIX_FADV_DONTNEED\n"
    "  --pipe-size=SIZE       size of every pipe touched (default 1M, capped by\n"
    "                         /proc/sys/fs/pipe-max-size)\n"
    "  --buffer-size=SIZE     bytes per read and write (default 1M)\n"
    "  --ring=N               buffers in flight (default 8)\n"
    "  --offset=SIZE          where the stream starts in the file side\n"
    "  --length=SIZE          copy exactly SIZE bytes; a shorter input is an error\n"
    "  --fadvise-window=SIZE  bytes written back and dropped at a time (default 8M)\n"
    "  --stats[=text|json]    print a summary on stderr at the end\n"
    "  --progress             show progress on stderr when it is a terminal\n"
    "  --status-fd=N          write JSON progress lines to fd N\n"
    "  --status-interval=MS   period of --progress and --status-fd (default 1000)\n"
    "  --record=FILE          append a JSON line describing the copy to FILE\n"
    "  --checksum=ALG         compute a checksum of the stream (xxh3: XXH3-64, as\n"
    "                         'xxhsum -H3' prints it), reported by --stats\n"
    "  --verify-checksum=HEX  compute the xxh3 checksum and fail (exit 1) when it is not\n"
    "                         HEX (16 hex digits); the stream is already delivered then\n"
    "  --compress=zstd[:LEVEL]  save: store the stream as zstd frames (LEVEL -7 to 19,\n"
    "                         default 1); the checksum stays that of the stream\n"
    "  --decompress           restore: the file holds zstd frames; a corrupt one fails\n"
    "  --threads=N            zstd's compression threads (default: the online CPUs)\n"
    "  --connections=N        NBD: connections to the server (default 4 when it\n"
    "                         advertises multi-conn, else 1; more than 1 is refused then)\n"
    "  --requests=N           NBD: commands in flight per connection (default 16)\n"
    "  --request-size=SIZE    NBD: bytes per command (default 256K)\n"
    "  --stall-timeout=SEC    NBD: fail when the server sends nothing for SEC seconds\n"
    "                         while commands are in flight (default: wait)\n"
    "  --memory-budget=SIZE   buffers of all helpers on the host beyond one each\n"
    "                         (default: memory-budget in /etc/iohelper.conf, else none)\n"
    "  -h, --help             show this help\n"
    "  -V, --version          show the version\n"
    "\n"
    "SIZE takes a K, M, G or T suffix, or KiB, MiB, GiB, TiB (powers of 1024 either way;\n"
    "KB, MB... are refused as ambiguous). An optional value follows '=' (--stats=json).\n"
    "Only a bare '-' is stdio, only 'fd:N' an fd and 'env:NAME' a URI: './-', './fd:1'\n"
    "and './env:X' are paths.\n"
    "Exit status: 0 when every byte was copied and made durable, 1 on failure, 2 on a\n"
    "usage error.\n";

const char *
ioh_args_usage(void)
{
    return usage_text;
}

static gboolean usage_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
usage_error(GError **error, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* The message quotes what the user typed: keep it one line, free of escapes. */
    ioh_escape_line_in_place(msg);
    g_set_error_literal(error, IOH_ARGS_ERROR, 0, msg);
    return FALSE;
}

gboolean
ioh_args_parse_size(const char *text, gboolean allow_zero, guint64 *ret_size, GError **error)
{
    guint64 v = 0, mult = 1;
    const char *p = text;

    if (!g_ascii_isdigit(*p)) {
        return usage_error(error, "invalid size '%s'", text);
    }
    while (g_ascii_isdigit(*p)) {
        guint d = (guint)(*p - '0');
        if (v > (G_MAXUINT64 - d) / 10) {
            return usage_error(error, "size '%s' is too large", text);
        }
        v = v * 10 + d;
        p++;
    }
    switch (g_ascii_toupper(*p)) {
    case '\0':
        break;
    case 'K':
        mult = 1ULL << 10;
        break;
    case 'M':
        mult = 1ULL << 20;
        break;
    case 'G':
        mult = 1ULL << 30;
        break;
    case 'T':
        mult = 1ULL << 40;
        break;
    default:
        return usage_error(error, "invalid size '%s'", text);
    }
    if (*p) {
        p++;
        if (g_str_equal(p, "B") || g_str_equal(p, "b")) {
            /* 1MB is 10^6 to some and 2^20 to others: make the user say which. */
            return usage_error(error, "size '%s' is ambiguous: write %.*s%c or %.*s%ciB "
                               "(powers of 1024), or the number of bytes", text,
                               (int)(p - text - 1), text, g_ascii_toupper(p[-1]),
                               (int)(p - text - 1), text, g_ascii_toupper(p[-1]));
        }
        if (g_str_equal(p, "iB")) {
            p += strlen(p);
        }
        if (*p) {
            return usage_error(error, "invalid size '%s'", text);
        }
    }
    if (v > G_MAXINT64 / mult) {
        return usage_error(error, "size '%s' is too large", text);
    }
    v *= mult;
    if (v == 0 && !allow_zero) {
        return usage_error(error, "size '%s' must not be zero", text);
    }
    *ret_size = v;
    return TRUE;
}

static gboolean
parse_bounded(const char *opt, const char *val, guint64 min, guint64 max, guint64 *ret,
              GError **error)
{
    g_autoptr(GError) err = NULL;

    if (!ioh_args_parse_size(val, TRUE, ret, &err)) {
        return usage_error(error, "%s: %s", opt, err->message);
    }
    if (*ret < min || *ret > max) {
        return usage_error(error, "%s: '%s' is out of range (%" G_GUINT64_FORMAT
                           " to %" G_GUINT64_FORMAT ")", opt, val, min, max);
    }
    return TRUE;
}

static gboolean
parse_count(const char *opt, const char *val, guint64 min, guint64 max, guint64 *ret,
            GError **error)
{
    guint64 v;

    if (!ioh_number_unsigned(val, 10, min, max, &v)) {
        return usage_error(error, "%s: '%s' is not a number from %" G_GUINT64_FORMAT
                           " to %" G_GUINT64_FORMAT, opt, val, min, max);
    }
    *ret = v;
    return TRUE;
}

/* Bare decimal: the libvirt form's FD operand (range-checked by the caller, so that a
 * huge number is refused like libvirt_iohelper does, not taken for a file name). */
static gboolean
is_fd_number(const char *s)
{
    if (!*s) {
        return FALSE;
    }
    for (; *s; s++) {
        if (!g_ascii_isdigit(*s)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* An NBD URI that libnbd would refuse for its form: a usage error, before connecting. */
static gboolean
check_nbd_uri(const char *spec, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GUri) uri = g_uri_parse(spec, G_URI_FLAGS_ENCODED_QUERY, &err);
    g_autofree char *name = ioh_nbd_safe_name(spec);

    if (!uri) {
        /* GLib's message may quote the URI whole: the secrets out of it */
        g_autofree char *cause = ioh_nbd_redact(spec, err->message);
        return usage_error(error, "'%s' is not a valid NBD URI: %s", name, cause);
    }
    /* libnbd's reading of the query, not GLib's: "?tls-psk-file=K;socket=S" has one */
    if (strstr(g_uri_get_scheme(uri), "+unix") && !ioh_nbd_has_socket(spec)) {
        return usage_error(error, "'%s' is not a valid NBD URI: +unix needs ?socket=PATH",
                           name);
    }
    return TRUE;
}

/* IN or OUT as given, or for "env:NAME" the NBD URI in that environment variable: a
 * command line is readable by every local user (/proc/PID/cmdline, ps), a process's
 * environment only by its owner, and a URI may hold secrets (a user name with a
 * password, tls-psk-file=...). libwrap passes its URIs so. The value is never quoted. */
static gboolean
operand_text(const char *spec, char **ret, GError **error)
{
    const char *value;

    if (!g_str_has_prefix(spec, "env:")) {
        *ret = g_strdup(spec);
        return TRUE;
    }
    value = g_getenv(spec + 4);
    if (!value) {
        return usage_error(error, "'%s': no environment variable %s (write './%s' for a file "
                           "of that name)", spec, spec + 4, spec);
    }
    if (!ioh_nbd_is_uri(value)) {
        return usage_error(error, "'%s': environment variable %s does not hold an NBD URI",
                           spec, spec + 4);
    }
    *ret = g_strdup(value);
    return TRUE;
}

/* IN or OUT: only the bare "-" is stdio, only "fd:" and a decimal number an fd. */
static gboolean
parse_operand(const char *spec, int stdio_fd, IohOperand *ret, GError **error)
{
    guint64 n;

    ret->kind = IOH_OPERAND_PATH;
    ret->fd = -1;
    if (g_str_equal(spec, "-")) {
        ret->kind = IOH_OPERAND_STDIO;
        ret->fd = stdio_fd;
    } else if (g_str_has_prefix(spec, "fd:")) {
        if (!is_fd_number(spec + 3) ||
            !ioh_number_unsigned(spec + 3, 10, 0, G_MAXINT, &n)) {
            return usage_error(error, "'%s': not a file descriptor number (write './%s' "
                               "for a file of that name)", spec, spec);
        }
        ret->kind = IOH_OPERAND_FD;
        ret->fd = (int)n;
    } else if (ioh_nbd_is_legacy(spec)) {
        /* libnbd does not take it, and a file of that name is rarely what was meant */
        return usage_error(error, "'%s' is QEMU's legacy NBD syntax: use an NBD URI "
                           "(nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH), or "
                           "'./%s' for a file of that name", spec, spec);
    } else if (ioh_nbd_is_uri(spec)) {
        ret->kind = IOH_OPERAND_NBD;
        return check_nbd_uri(spec, error);
    }
    return TRUE;
}

typedef enum { OPT_FLAG, OPT_VALUE, OPT_OPTIONAL } OptArg;

static const struct {
    const char *name;
    OptArg arg;
} long_opts[] = {
    { "direct", OPT_FLAG },          { "fadvise", OPT_FLAG },
    { "pipe-size", OPT_VALUE },      { "buffer-size", OPT_VALUE },
    { "ring", OPT_VALUE },           { "offset", OPT_VALUE },
    { "length", OPT_VALUE },         { "fadvise-window", OPT_VALUE },
    { "stats", OPT_OPTIONAL },       { "progress", OPT_FLAG },
    { "status-fd", OPT_VALUE },      { "status-interval", OPT_VALUE },
    { "record", OPT_VALUE },         { "help", OPT_FLAG },
    { "version", OPT_FLAG },         { "checksum", OPT_VALUE },
    { "verify-checksum", OPT_VALUE },
    { "compress", OPT_VALUE },       { "decompress", OPT_FLAG },
    { "threads", OPT_VALUE },
    { "connections", OPT_VALUE },    { "requests", OPT_VALUE },
    { "request-size", OPT_VALUE },   { "stall-timeout", OPT_VALUE },
    { "memory-budget", OPT_VALUE },
};

/* --compress=zstd[:LEVEL], LEVEL within ioh-limits.h's bounds (negative: zstd's fast
 * levels); --decompress; --threads=N. */
static gboolean
apply_compress(IohArgs *a, const char *name, const char *val, GError **error)
{
    const char *level = val && g_str_has_prefix(val, "zstd:") ? val + 5 : NULL;
    gint64 v = IOH_ZSTD_LEVEL_DEFAULT;
    guint64 n = 0;

    if (g_str_equal(name, "decompress")) {
        a->decompress = TRUE;
        return TRUE;
    }
    if (g_str_equal(name, "threads")) {
        if (!parse_count("--threads", val, IOH_THREADS_MIN, IOH_THREADS_MAX, &n, error)) {
            return FALSE;
        }
        a->copy.threads = (guint)n;
        return TRUE;
    }
    if (!level && !g_str_equal(val, "zstd")) {
        return usage_error(error, "--compress: '%s' is not zstd or zstd:LEVEL", val);
    }
    if (level && !ioh_number_signed(level, 10, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX, &v)) {
        return usage_error(error, "--compress: level '%s' is not a number from %d to %d",
                           level, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX);
    }
    a->compress = TRUE;
    a->copy.compress_level = (int)v;
    return TRUE;
}

/* The filters: the checksum is over the stream, so before zstd and after unzstd. */
static gboolean
apply_compression(IohArgs *a, GError **error)
{
    const char *sum = a->copy.filters ? a->copy.filters[0] : NULL;

    if (a->compress && a->decompress) {
        return usage_error(error, "--compress and --decompress cannot be combined");
    }
    if (a->compress) {
        a->filters[0] = sum ? sum : "zstd";
        a->filters[1] = sum ? "zstd" : NULL;
        a->copy.filters = a->filters;
    } else if (a->decompress) {
        a->filters[0] = "unzstd";
        a->filters[1] = sum;
        a->copy.filters = a->filters;
    }
    return TRUE;
}

/* --checksum=ALG and --verify-checksum=HEX (which implies --checksum=xxh3): the stream
 * passes through the checksum filter of that name. */
static gboolean
apply_checksum(IohArgs *a, const char *name, const char *val, GError **error)
{
    const IohFilterClass *f;
    guint64 v;
    gsize n = 0;

    if (g_str_equal(name, "checksum")) {
        f = ioh_filter_lookup(val);
        if (!f || !f->checksum) {
            return usage_error(error, "--checksum: '%s' is not a known algorithm (%s)", val,
                               ioh_filter_checksum_names());
        }
        a->checksum_filters[0] = f->name;
        a->copy.filters = a->checksum_filters;
        return TRUE;
    }
    while (g_ascii_isxdigit(val[n])) {
        n++;
    }
    if (n != 16 || val[n] || !ioh_number_unsigned(val, 16, 0, G_MAXUINT64, &v)) {
        return usage_error(error, "--verify-checksum: '%s' is not an xxh3 checksum (16 hex "
                           "digits)", val);
    }
    a->checksum_filters[0] = "xxh3";
    a->copy.filters = a->checksum_filters;
    a->copy.has_expected_checksum = TRUE;
    a->copy.expected_checksum = v;
    return TRUE;
}

/* --connections, --requests, --request-size, --stall-timeout: the NBD end's. */
static gboolean
apply_nbd_option(IohArgs *a, const char *name, const char *val, GError **error)
{
    guint64 v;

    if (g_str_equal(name, "connections")) {
        if (!parse_count("--connections", val, 1, 16, &v, error)) {
            return FALSE;
        }
        a->copy.nbd_connections = (guint)v;
    } else if (g_str_equal(name, "requests")) {
        if (!parse_count("--requests", val, 1, 256, &v, error)) {
            return FALSE;
        }
        a->copy.nbd_requests = (guint)v;
    } else if (g_str_equal(name, "stall-timeout")) {
        if (!parse_count("--stall-timeout", val, 1, 86400, &v, error)) {
            return FALSE;
        }
        a->copy.nbd_stall_timeout = (guint)v;
    } else {
        if (!parse_bounded("--request-size", val, 4096, 32ULL << 20, &v, error)) {
            return FALSE;
        }
        a->copy.nbd_request_size = (gsize)v;
    }
    a->nbd_option = TRUE;
    return TRUE;
}

/* The options that take a size or a count of the copy engine. */
static const char *const size_options[] = {
    "pipe-size", "buffer-size", "ring", "offset", "length", "fadvise-window", NULL,
};

static gboolean
apply_size(IohArgs *a, const char *name, const char *val, GError **error)
{
    guint64 v;

    if (g_str_equal(name, "pipe-size")) {
        if (!parse_bounded("--pipe-size", val, IOH_PIPE_SIZE_MIN, IOH_PIPE_SIZE_MAX, &v,
                           error)) {
            return FALSE;
        }
        a->copy.pipe_size = (guint)v;
    } else if (g_str_equal(name, "buffer-size")) {
        if (!parse_bounded("--buffer-size", val, IOH_BUFFER_SIZE_MIN, IOH_BUFFER_SIZE_MAX,
                           &v, error)) {
            return FALSE;
        }
        a->copy.buffer_size = (gsize)v;
    } else if (g_str_equal(name, "ring")) {
        if (!parse_count("--ring", val, IOH_RING_MIN, IOH_RING_MAX, &v, error)) {
            return FALSE;
        }
        a->copy.ring = (guint)v;
    } else if (g_str_equal(name, "offset")) {
        if (!parse_bounded("--offset", val, 0, IOH_OFFSET_MAX, &v, error)) {
            return FALSE;
        }
        a->copy.has_offset = TRUE;
        a->copy.offset = v;
    } else if (g_str_equal(name, "length")) {
        if (!parse_bounded("--length", val, 0, IOH_LENGTH_MAX, &v, error)) {
            return FALSE;
        }
        a->copy.has_length = TRUE;
        a->copy.length = v;
    } else if (g_str_equal(name, "fadvise-window")) {
        if (!parse_bounded("--fadvise-window", val, IOH_FADVISE_WINDOW_MIN,
                           IOH_FADVISE_WINDOW_MAX, &v, error)) {
            return FALSE;
        }
        a->copy.fadvise_window = (gsize)v;
    }
    return TRUE;
}

static gboolean
apply_option(IohArgs *a, const char *name, const char *val, GError **error)
{
    guint64 v;

    if (g_str_equal(name, "checksum") || g_str_equal(name, "verify-checksum")) {
        return apply_checksum(a, name, val, error);
    } else if (g_str_equal(name, "compress") || g_str_equal(name, "decompress") ||
               g_str_equal(name, "threads")) {
        return apply_compress(a, name, val, error);
    } else if (g_str_equal(name, "connections") || g_str_equal(name, "requests") ||
               g_str_equal(name, "request-size") || g_str_equal(name, "stall-timeout")) {
        return apply_nbd_option(a, name, val, error);
    } else if (g_str_equal(name, "direct")) {
        a->direct = TRUE;
    } else if (g_str_equal(name, "fadvise")) {
        a->fadvise = TRUE;
    } else if (g_str_equal(name, "progress")) {
        a->progress = TRUE;
    } else if (g_str_equal(name, "help")) {
        a->help = TRUE;
    } else if (g_str_equal(name, "version")) {
        a->version = TRUE;
    } else if (g_strv_contains(size_options, name)) {
        return apply_size(a, name, val, error);
    } else if (g_str_equal(name, "stats")) {
        if (!val || g_str_equal(val, "text")) {
            a->stats = IOH_STATS_TEXT;
        } else if (g_str_equal(val, "json")) {
            a->stats = IOH_STATS_JSON;
        } else {
            return usage_error(error, "--stats: '%s' is not 'text' or 'json'", val);
        }
    } else if (g_str_equal(name, "status-fd")) {
        if (!parse_count("--status-fd", val, 0, INT_MAX, &v, error)) {
            return FALSE;
        }
        a->status_fd = (int)v;
    } else if (g_str_equal(name, "status-interval")) {
        if (!parse_count("--status-interval", val, IOH_STATUS_INTERVAL_MIN_MS,
                         IOH_STATUS_INTERVAL_MAX_MS, &v, error)) {
            return FALSE;
        }
        a->copy.progress_interval_us = (gint64)v * 1000;
    } else if (g_str_equal(name, "memory-budget")) {
        if (!parse_bounded("--memory-budget", val, 0, IOH_LENGTH_MAX, &v, error)) {
            return FALSE;
        }
        a->has_memory_budget = TRUE;
        a->memory_budget = v;
    } else if (g_str_equal(name, "record")) {
        if (!*val) {
            return usage_error(error, "--record: empty file name");
        }
        g_free(a->record);
        a->record = g_strdup(val);
    }
    return TRUE;
}

/* "--stats json": an optional value must follow '=', and a word that looks like one is
 * not silently taken for an operand. */
static gboolean
check_optional_word(const char *name, const char *next, GError **error)
{
    if (next && (g_str_equal(next, "text") || g_str_equal(next, "json"))) {
        return usage_error(error, "option '--%s' takes its value after '=': write "
                           "'--%s=%s' (or './%s' for a file of that name)", name, name,
                           next, next);
    }
    return TRUE;
}

static gboolean
parse_long(IohArgs *a, int argc, char **argv, int *i, GError **error)
{
    const char *arg = argv[*i] + 2;
    const char *eq = strchr(arg, '=');
    g_autofree char *name = eq ? g_strndup(arg, (gsize)(eq - arg)) : g_strdup(arg);
    const char *val = eq ? eq + 1 : NULL;

    for (gsize k = 0; k < G_N_ELEMENTS(long_opts); k++) {
        if (!g_str_equal(name, long_opts[k].name)) {
            continue;
        }
        switch (long_opts[k].arg) {
        case OPT_FLAG:
            if (val) {
                return usage_error(error, "option '--%s' takes no value", name);
            }
            break;
        case OPT_VALUE:
            if (!val) {
                if (*i + 1 >= argc) {
                    return usage_error(error, "option '--%s' needs a value", name);
                }
                val = argv[++(*i)];
            }
            break;
        case OPT_OPTIONAL:
            if (!val && !check_optional_word(name, *i + 1 < argc ? argv[*i + 1] : NULL,
                                             error)) {
                return FALSE;
            }
            break;
        }
        return apply_option(a, name, val, error);
    }
    return usage_error(error, "unknown option '--%s'", name);
}

/* The cause in @cause's message, without its "WHAT PATH: " when PATH is @path or its
 * last part (the untrusted read names the file within its directory). */
static const char *
conf_cause(const GError *cause, const char *path)
{
    const char *op = ioh_error_get_operation(cause);
    const char *where = ioh_error_get_path(cause);
    g_autofree char *prefix = NULL;

    if (op && where && *where && g_str_has_suffix(path, where)) {
        prefix = g_strdup_printf("%s %s: ", op, where);
        if (g_str_has_prefix(cause->message, prefix)) {
            return cause->message + strlen(prefix);
        }
    }
    return cause->message;
}

/* A config file the helper cannot use: IOH_ERROR with the file as its path and operation
 * "config" (the helper sends both on its status fd), "config file PATH: CAUSE". */
static gboolean
conf_error(GError **error, const char *path, const GError *cause)
{
    int errsv = ioh_error_get_errno(cause);
    g_autofree char *msg = g_strdup_printf("config file %s: %s", path,
                                           conf_cause(cause, path));

    g_propagate_error(error, ioh_error_new_literal(errsv ? errsv : EINVAL, "config", path,
                                                   msg));
    return FALSE;
}

/* The most a config file may hold: a few lines are expected. */
#define CONF_MAX (64 * 1024)

/* The line number of the first line of @text the key-file parser refuses (neither
 * blank, a comment, a [group] nor key=value), 0 if none: what a parse error names in
 * place of the line itself, which GKeyFile quotes (the file may be one of root's
 * reached by mistake: its first line a password hash). */
static guint
conf_bad_line(const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i] + strspn(lines[i], " \t");

        if (*l && *l != '#' && *l != '[' && !strchr(l, '=')) {
            return i + 1;
        }
    }
    return 0;
}

/* @text of @path into @kf: a usage error without the file's words. */
static gboolean
conf_parse(const char *path, const char *text, gsize len, GKeyFile *kf, GError **error)
{
    g_autoptr(GError) err = NULL;
    guint line;

    if (g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, NULL)) {
        return TRUE;
    }
    line = conf_bad_line(text);
    if (line > 0) {
        err = g_error_new(G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                          "line %u is neither [group], key=value nor a comment", line);
    } else {
        err = g_error_new_literal(G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                                  "not a key file of [group] and key=value lines");
    }
    return conf_error(error, path, err);
}

/* Loads the key file @path into @kf, read as an untrusted file (ioh-untrusted.h): a
 * regular file (a FIFO would hang the helper, /dev/zero never end), at most CONF_MAX
 * bytes, owned by root or the caller and writable by no one else, as sudo and sshd
 * check theirs, reached through directories and symbolic links of root's or the
 * caller's only (ioh_untrusted_path_parent(): a user's directory could hold a link to a
 * file of root's). The path may be a symbolic link (an admin's link in /etc, to a file
 * that passes the same checks). *@ret_found FALSE when there is no such file. */
static gboolean
load_conf(const char *path, GKeyFile *kf, gboolean *ret_found, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    int dirfd = ioh_untrusted_path_parent(path, &name, &err);

    if (dirfd >= 0) {
        text = ioh_untrusted_read(dirfd, name, CONF_MAX, IOH_UNTRUSTED_TRUSTED_OWNER, &len,
                                  &err);
        close(dirfd);
    }
    *ret_found = text || !g_error_matches(err, IOH_ERROR, ENOENT);
    if (!text) {
        return !*ret_found || conf_error(error, path, err);
    }
    return conf_parse(path, text, len, kf, error);
}

/* Without --memory-budget: memory-budget in [iohelper] of the config file, if any (libvirt
 * passes no options, so its form reads it too). A missing file or key: no budget. */
static gboolean
read_conf(IohArgs *a, GError **error)
{
    const char *env = g_getenv("IOHELPER_CONF");
    const char *path = env && *env ? env : IOH_ARGS_CONF;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *val = NULL;
    gboolean found;
    guint64 v;

    if (a->has_memory_budget) {
        return TRUE;
    }
    if (!load_conf(path, kf, &found, error)) {
        return FALSE;
    }
    if (!found) {
        return TRUE;
    }
    val = g_key_file_get_string(kf, "iohelper", "memory-budget", NULL);
    if (!val) {
        return TRUE;
    }
    g_strstrip(val);
    if (!parse_bounded("memory-budget", val, 0, IOH_LENGTH_MAX, &v, &err)) {
        return conf_error(error, path, err);
    }
    a->has_memory_budget = TRUE;
    a->memory_budget = v;
    return TRUE;
}

/* An NBD URI on one side: the other is the stream; an export has no end of stream. */
static gboolean
check_nbd(const IohArgs *a, GError **error)
{
    gboolean in = !a->libvirt && a->in_op.kind == IOH_OPERAND_NBD;
    gboolean out = !a->libvirt && a->out_op.kind == IOH_OPERAND_NBD;

    if (!in && !out) {
        return !a->nbd_option ||
               usage_error(error, "--connections, --requests, --request-size and "
                           "--stall-timeout need an NBD URI as IN or OUT");
    }
    if (in && out) {
        return usage_error(error, "IN and OUT are both NBD URIs: one side must be the stream");
    }
    if (a->direct || a->fadvise) {
        return usage_error(error, "--direct and --fadvise apply to a file, not to an NBD "
                           "export");
    }
    if (in && !a->copy.has_length) {
        return usage_error(error, "reading an NBD export needs --length (an export has a "
                           "fixed size, the stream has no end mark)");
    }
    return TRUE;
}

static gboolean
parse_args(int argc, char **argv, IohArgs *a, GError **error)
{
    g_autoptr(GPtrArray) operands = g_ptr_array_new();
    gboolean options_done = FALSE;

    memset(a, 0, sizeof(*a));
    ioh_copy_options_init(&a->copy);
    a->status_fd = -1;
    a->fd = -1;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];

        if (options_done || arg[0] != '-' || g_str_equal(arg, "-")) {
            g_ptr_array_add(operands, (gpointer)arg);
        } else if (g_str_equal(arg, "--")) {
            options_done = TRUE;
        } else if (g_str_has_prefix(arg, "--")) {
            if (!parse_long(a, argc, argv, &i, error)) {
                return FALSE;
            }
        } else if (g_str_equal(arg, "-h")) {
            a->help = TRUE;
        } else if (g_str_equal(arg, "-V")) {
            a->version = TRUE;
        } else {
            return usage_error(error, "unknown option '%s'", arg);
        }
    }
    if (a->help || a->version) {
        return TRUE;
    }
    if (a->direct && a->fadvise) {
        return usage_error(error, "--direct and --fadvise cannot be combined");
    }
    a->copy.mode = a->direct ? IOH_CACHE_DIRECT
                             : a->fadvise ? IOH_CACHE_FADVISE : IOH_CACHE_BUFFERED;
    if (!apply_compression(a, error)) {
        return FALSE;
    }
    if (operands->len != 2) {
        return usage_error(error, "expected IN and OUT (or PATH FD), got %u operand%s",
                           operands->len, operands->len == 1 ? "" : "s");
    }
    if (is_fd_number(g_ptr_array_index(operands, 1))) {
        const char *fd_text = g_ptr_array_index(operands, 1);
        guint64 fd;

        if (!ioh_number_unsigned(fd_text, 10, 0, G_MAXINT, &fd)) {
            return usage_error(error, "malformed fd '%s'", fd_text);
        }
        a->libvirt = TRUE;
        a->path = g_strdup(g_ptr_array_index(operands, 0));
        a->fd = (int)fd;
        if (!*a->path) {
            return usage_error(error, "empty PATH");
        }
    } else {
        if (!operand_text(g_ptr_array_index(operands, 0), &a->in, error) ||
            !operand_text(g_ptr_array_index(operands, 1), &a->out, error)) {
            return FALSE;
        }
        if (!*a->in || !*a->out) {
            return usage_error(error, "empty file name");
        }
        if (!parse_operand(a->in, 0, &a->in_op, error) ||
            !parse_operand(a->out, 1, &a->out_op, error)) {
            return FALSE;
        }
    }
    return check_nbd(a, error);
}

gboolean
ioh_args_read_config(IohArgs *args, GError **error)
{
    return read_conf(args, error);
}

gboolean
ioh_args_parse(int argc, char **argv, IohArgs *ret_args, GError **error)
{
    if (!parse_args(argc, argv, ret_args, error)) {
        ioh_args_clear(ret_args);
        return FALSE;
    }
    return TRUE;
}

void
ioh_args_clear(IohArgs *a)
{
    g_clear_pointer(&a->in, g_free);
    g_clear_pointer(&a->out, g_free);
    g_clear_pointer(&a->path, g_free);
    g_clear_pointer(&a->record, g_free);
}
