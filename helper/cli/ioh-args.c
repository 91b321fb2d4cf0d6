/* ioh-args.c - the iohelper command line: its options (ioh-opt.h's grammar), operands
 * and help text */
#include "ioh-args.h"

#include <limits.h>
#include <string.h>

#include "ioh-args-age.h"
#include "ioh-clash.h"
#include "ioh-cpus.h"
#include "ioh-engine.h"
#include "ioh-limits.h"
#include "ioh-nbd-uri.h"
#include "ioh-number.h"
#include "ioh-opt.h"
#include "ioh-rbd-name.h"

static const char usage_text[] =
    "Usage: iohelper [OPTION...] IN OUT\n"
    "       iohelper [OPTION...] PATH FD      (libvirt's libvirt_iohelper form)\n"
    "Copy a VM save stream between a pipe and a file, fast and durably.\n"
    "IN and OUT are each a path, '-' (stdin/stdout) or 'fd:N'; one of them may be an NBD\n"
    "URI (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH, nbds://...), or\n"
    "'env:NAME' for the NBD URI in environment variable NAME (out of the command line,\n"
    "which every local user can read); reading an NBD export needs --length. Or one may\n"
    "be an RBD image, rbd:POOL/IMAGE[@SNAP][:conf=PATH][:id=USER][:keyring=PATH] (a\n"
    "snapshot only to read), also through 'env:NAME'.\n"
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
    "  --compress=auto        save: zstd frames, raw or at a level chosen per window\n"
    "                         from the disk's and the compressor's measured speeds\n"
    "  --decompress           restore: the file holds zstd frames; a corrupt one fails\n"
    "  --threads=N            zstd's compression threads, age's encryption threads\n"
    "                         (default: the CPUs it may use, see --cpus)\n"
    "  --recipient=RECIPIENT  save: encrypt to this age X25519 recipient (age1...);\n"
    "                         repeatable. The image is age v1 (age -d reads it)\n"
    "  --recipients-file=FILE save: encrypt to every recipient in FILE (age's format)\n"
    "  --identity=FILE        restore: decrypt with the age identities in FILE\n"
    "                         (age-keygen's format; mode 0600 or stricter)\n"
    "  --identity-fd=N        restore: the same, read from inherited fd N\n"
    "  --connections=N        NBD: connections to the server (default: as many as pay,\n"
    "                         from 1, several only with multi-conn; more than 1 is refused\n"
    "                         without it)\n"
    "  --requests=N           NBD: commands in flight per connection (default: as many\n"
    "                         as pay, 8 or 16); RBD: requests in flight (default 8)\n"
    "  --request-size=SIZE    NBD: bytes per command (default 256K); RBD: at most the\n"
    "                         image's object size (the default)\n"
    "  --stall-timeout=SEC    NBD: fail when the server sends nothing for SEC seconds\n"
    "                         while commands are in flight (default: wait); RBD: the\n"
    "                         bound of every cluster operation (default 60)\n"
    "  --grow                 RBD: grow an existing image smaller than the stream\n"
    "  --no-truncate          save: leave the file's bytes past the stream as they are\n"
    "                         (a region of a multi-channel image, docs/channels.md)\n"
    "  --region=SIZE          save into an NBD export or RBD image: the stored stream\n"
    "                         takes at most SIZE bytes from --offset (a write past it\n"
    "                         fails before any byte of it is sent); implies --no-truncate\n"
    "  --memory-budget=SIZE   buffers of all helpers on the host beyond one each\n"
    "                         (default: memory-budget in /etc/iohelper.conf, else none)\n"
    "  --cpus=LIST            run the helper and all its threads on these CPUs only\n"
    "                         (taskset -c's form: 0-3,6), e.g. where the writer of its\n"
    "                         pipe is pinned: the pipe then costs half the CPU\n"
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

typedef enum {
    OPT_DIRECT, OPT_FADVISE, OPT_PIPE_SIZE, OPT_BUFFER_SIZE, OPT_RING, OPT_OFFSET,
    OPT_LENGTH, OPT_FADVISE_WINDOW, OPT_STATS, OPT_PROGRESS, OPT_STATUS_FD,
    OPT_STATUS_INTERVAL, OPT_RECORD, OPT_HELP, OPT_VERSION, OPT_CHECKSUM,
    OPT_VERIFY_CHECKSUM, OPT_COMPRESS, OPT_DECOMPRESS, OPT_THREADS, OPT_CONNECTIONS,
    OPT_REQUESTS, OPT_REQUEST_SIZE, OPT_STALL_TIMEOUT, OPT_MEMORY_BUDGET, OPT_GROW,
    OPT_NO_TRUNCATE, OPT_REGION,
    OPT_RECIPIENT, OPT_RECIPIENTS_FILE, OPT_IDENTITY, OPT_IDENTITY_FD,
    OPT_CPUS,
} OptId;

static const char *const stats_words[] = { "text", "json", NULL };

#define FLAG(n, id, s) { n, id, s, IOH_OPT_NONE, NULL }
#define VALUE(n, id) { n, id, 0, IOH_OPT_REQUIRED, NULL }

static const IohOptEntry entries[] = {
    FLAG("direct", OPT_DIRECT, 0),
    FLAG("fadvise", OPT_FADVISE, 0),
    VALUE("pipe-size", OPT_PIPE_SIZE),
    VALUE("buffer-size", OPT_BUFFER_SIZE),
    VALUE("ring", OPT_RING),
    VALUE("offset", OPT_OFFSET),
    VALUE("length", OPT_LENGTH),
    VALUE("fadvise-window", OPT_FADVISE_WINDOW),
    { "stats", OPT_STATS, 0, IOH_OPT_OPTIONAL, stats_words },
    FLAG("progress", OPT_PROGRESS, 0),
    VALUE("status-fd", OPT_STATUS_FD),
    VALUE("status-interval", OPT_STATUS_INTERVAL),
    VALUE("record", OPT_RECORD),
    FLAG("help", OPT_HELP, 'h'),
    FLAG("version", OPT_VERSION, 'V'),
    VALUE("checksum", OPT_CHECKSUM),
    VALUE("verify-checksum", OPT_VERIFY_CHECKSUM),
    VALUE("compress", OPT_COMPRESS),
    FLAG("decompress", OPT_DECOMPRESS, 0),
    VALUE("threads", OPT_THREADS),
    VALUE("connections", OPT_CONNECTIONS),
    VALUE("requests", OPT_REQUESTS),
    VALUE("request-size", OPT_REQUEST_SIZE),
    VALUE("stall-timeout", OPT_STALL_TIMEOUT),
    VALUE("memory-budget", OPT_MEMORY_BUDGET),
    FLAG("grow", OPT_GROW, 0),
    FLAG("no-truncate", OPT_NO_TRUNCATE, 0),
    VALUE("region", OPT_REGION),
    VALUE("recipient", OPT_RECIPIENT),
    VALUE("recipients-file", OPT_RECIPIENTS_FILE),
    VALUE("identity", OPT_IDENTITY),
    VALUE("identity-fd", OPT_IDENTITY_FD),
    VALUE("cpus", OPT_CPUS),
    { NULL, 0, 0, 0, NULL },
};

/* The options that take a number: a size (suffixes allowed) or a decimal count. */
typedef struct {
    gboolean size;
    guint64 min;
    guint64 max;
} Bound;

static const Bound bounds[] = {
    [OPT_PIPE_SIZE] = { TRUE, IOH_PIPE_SIZE_MIN, IOH_PIPE_SIZE_MAX },
    [OPT_BUFFER_SIZE] = { TRUE, IOH_BUFFER_SIZE_MIN, IOH_BUFFER_SIZE_MAX },
    [OPT_RING] = { FALSE, IOH_RING_MIN, IOH_RING_MAX },
    [OPT_OFFSET] = { TRUE, 0, IOH_OFFSET_MAX },
    [OPT_LENGTH] = { TRUE, 0, IOH_LENGTH_MAX },
    [OPT_FADVISE_WINDOW] = { TRUE, IOH_FADVISE_WINDOW_MIN, IOH_FADVISE_WINDOW_MAX },
    [OPT_STATUS_FD] = { FALSE, 0, INT_MAX },
    [OPT_STATUS_INTERVAL] = { FALSE, IOH_STATUS_INTERVAL_MIN_MS, IOH_STATUS_INTERVAL_MAX_MS },
    [OPT_THREADS] = { FALSE, IOH_THREADS_MIN, IOH_THREADS_MAX },
    [OPT_CONNECTIONS] = { FALSE, 1, 16 },
    [OPT_REQUESTS] = { FALSE, 1, 256 },
    [OPT_REQUEST_SIZE] = { TRUE, 4096, 32ULL << 20 },
    [OPT_STALL_TIMEOUT] = { FALSE, 1, 86400 },
    [OPT_MEMORY_BUDGET] = { TRUE, 0, IOH_LENGTH_MAX },
    [OPT_IDENTITY_FD] = { FALSE, 0, INT_MAX },
    [OPT_REGION] = { TRUE, 1, IOH_LENGTH_MAX },
};

/* --connections, --requests, --request-size, --stall-timeout: the NBD end's. */
static void
store_nbd_number(IohArgs *a, OptId id, guint64 v)
{
    switch (id) {
    case OPT_CONNECTIONS:
        a->copy.nbd_connections = (guint)v;
        break;
    case OPT_REQUESTS:
        a->copy.nbd_requests = (guint)v;
        break;
    case OPT_REQUEST_SIZE:
        a->copy.nbd_request_size = (gsize)v;
        break;
    case OPT_STALL_TIMEOUT:
        a->copy.nbd_stall_timeout = (guint)v;
        break;
    default:
        return;
    }
    a->nbd_option = TRUE;
}

/* A number within the bounds of option @e. */
static gboolean
parse_number(const IohOptEntry *e, const char *val, guint64 *ret, GError **error)
{
    const Bound *b = &bounds[e->id];
    g_autofree char *opt = g_strdup_printf("--%s", e->name);

    return b->size ? ioh_args_parse_bounded(opt, val, b->min, b->max, ret, error)
                   : ioh_args_parse_count(opt, val, b->min, b->max, ret, error);
}

/* Where the number of option @id goes. */
static void
store_number(IohArgs *a, OptId id, guint64 v)
{
    switch (id) {
    case OPT_PIPE_SIZE:
        a->copy.pipe_size = (guint)v;
        break;
    case OPT_BUFFER_SIZE:
        a->copy.buffer_size = (gsize)v;
        break;
    case OPT_RING:
        a->copy.ring = (guint)v;
        break;
    case OPT_OFFSET:
        a->copy.has_offset = TRUE;
        a->copy.offset = v;
        break;
    case OPT_LENGTH:
        a->copy.has_length = TRUE;
        a->copy.length = v;
        break;
    case OPT_FADVISE_WINDOW:
        a->copy.fadvise_window = (gsize)v;
        break;
    case OPT_STATUS_FD:
        a->status_fd = (int)v;
        break;
    case OPT_STATUS_INTERVAL:
        a->copy.progress_interval_us = (gint64)v * 1000;
        break;
    case OPT_THREADS:
        a->copy.threads = (guint)v;
        break;
    case OPT_MEMORY_BUDGET:
        a->has_memory_budget = TRUE;
        a->memory_budget = v;
        break;
    case OPT_IDENTITY_FD:
        a->identity_fd = (int)v;
        a->decrypt = TRUE;
        break;
    case OPT_REGION:
        a->copy.region = v;
        a->copy.no_truncate = TRUE;   /* the bytes after a region are another's */
        break;
    default:
        store_nbd_number(a, id, v);
        break;
    }
}

/* --compress=zstd[:LEVEL], LEVEL within ioh-limits.h's bounds (negative: zstd's fast
 * levels), or --compress=auto (also zstd:auto): the level or raw chosen per window. */
static gboolean
apply_compress(IohArgs *a, const char *val, GError **error)
{
    const char *level = g_str_has_prefix(val, "zstd:") ? val + 5 : NULL;
    gint64 v = IOH_ZSTD_LEVEL_DEFAULT;

    a->copy.compress_auto = g_str_equal(val, "auto") || g_strcmp0(level, "auto") == 0;
    if (a->copy.compress_auto) {
        a->compress = TRUE;
        return TRUE;
    }
    if (!level && !g_str_equal(val, "zstd")) {
        return ioh_args_usage_error(error, "--compress: '%s' is not zstd, zstd:LEVEL or "
                                    "auto", val);
    }
    if (level && !ioh_number_signed(level, 10, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX, &v)) {
        return ioh_args_usage_error(error, "--compress: level '%s' is not a number from %d "
                                    "to %d", level, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX);
    }
    a->compress = TRUE;
    a->copy.compress_level = (int)v;
    return TRUE;
}

/* The filters: the checksum is over the stream, so before zstd and after unzstd;
 * encryption is last on a save (what is stored), decryption first on a restore. */
static void
apply_compression(IohArgs *a)
{
    const char *sum = a->copy.filters ? a->copy.filters[0] : NULL;
    guint n = 0;

    if (a->decrypt) {
        a->filters[n++] = "unage";
    }
    if (a->decompress) {
        a->filters[n++] = "unzstd";
    }
    if (sum) {
        a->filters[n++] = sum;
    }
    if (a->compress) {
        a->filters[n++] = "zstd";
    }
    if (a->encrypt) {
        a->filters[n++] = "age";
    }
    if (n > (sum ? 1u : 0u)) {
        a->copy.filters = a->filters;
    }
}

/* --checksum=ALG and --verify-checksum=HEX (which implies --checksum=xxh3): the stream
 * passes through the checksum filter of that name. */
static gboolean
apply_checksum(IohArgs *a, const char *name, const char *val, GError **error)
{
    const char *alg;
    guint64 v;
    gsize n = 0;

    if (g_str_equal(name, "checksum")) {
        alg = ioh_filter_checksum_lookup(val);
        if (!alg) {
            return ioh_args_usage_error(error, "--checksum: '%s' is not a known algorithm "
                                        "(%s)", val, ioh_filter_checksum_names());
        }
        a->checksum_filters[0] = alg;
        a->copy.filters = a->checksum_filters;
        return TRUE;
    }
    while (g_ascii_isxdigit(val[n])) {
        n++;
    }
    if (n != 16 || val[n] || !ioh_number_unsigned(val, 16, 0, G_MAXUINT64, &v)) {
        return ioh_args_usage_error(error, "--verify-checksum: '%s' is not an xxh3 checksum "
                                    "(16 hex digits)", val);
    }
    a->checksum_filters[0] = "xxh3";
    a->copy.filters = a->checksum_filters;
    a->copy.has_expected_checksum = TRUE;
    a->copy.expected_checksum = v;
    return TRUE;
}

static gboolean
apply_stats(IohArgs *a, const char *val, GError **error)
{
    if (!val || g_str_equal(val, "text")) {
        a->stats = IOH_STATS_TEXT;
    } else if (g_str_equal(val, "json")) {
        a->stats = IOH_STATS_JSON;
    } else {
        return ioh_args_usage_error(error, "--stats: '%s' is not 'text' or 'json'", val);
    }
    return TRUE;
}

static gboolean
apply_record(IohArgs *a, const char *val, GError **error)
{
    if (!*val) {
        return ioh_args_usage_error(error, "--record: empty file name");
    }
    g_free(a->record);
    a->record = g_strdup(val);
    return TRUE;
}

/* --cpus=LIST: applied by main() before any thread exists (ioh-cpus.h). */
static gboolean
apply_cpus(IohArgs *a, const char *val, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!ioh_cpus_parse(val, &a->cpus, &local)) {
        return ioh_args_usage_error(error, "--cpus: %s", local->message);
    }
    a->has_cpus = TRUE;
    return TRUE;
}

/* ioh_opt_parse()'s callback: one option of @entries. */
static gboolean
apply_option(const IohOptEntry *e, const char *val, gpointer data, GError **error)
{
    IohArgs *a = data;
    guint64 v;

    switch ((OptId)e->id) {
    case OPT_DIRECT:
        a->direct = TRUE;
        return TRUE;
    case OPT_FADVISE:
        a->fadvise = TRUE;
        return TRUE;
    case OPT_PROGRESS:
        a->progress = TRUE;
        return TRUE;
    case OPT_HELP:
        a->help = TRUE;
        return TRUE;
    case OPT_VERSION:
        a->version = TRUE;
        return TRUE;
    case OPT_DECOMPRESS:
        a->decompress = TRUE;
        return TRUE;
    case OPT_NO_TRUNCATE:
        a->copy.no_truncate = TRUE;
        return TRUE;
    case OPT_GROW:
        a->copy.rbd_grow = TRUE;
        return TRUE;
    case OPT_STATS:
        return apply_stats(a, val, error);
    case OPT_RECORD:
        return apply_record(a, val, error);
    case OPT_CPUS:
        return apply_cpus(a, val, error);
    case OPT_COMPRESS:
        return apply_compress(a, val, error);
    case OPT_CHECKSUM:
    case OPT_VERIFY_CHECKSUM:
        return apply_checksum(a, e->name, val, error);
    case OPT_RECIPIENT:
    case OPT_RECIPIENTS_FILE:
    case OPT_IDENTITY:
        return ioh_args_age_option(a, e->name, val, error);
    default:
        if (!parse_number(e, val, &v, error)) {
            return FALSE;
        }
        store_number(a, (OptId)e->id, v);
        return TRUE;
    }
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
        return ioh_args_usage_error(error, "'%s' is not a valid NBD URI: %s", name, cause);
    }
    /* libnbd's reading of the query, not GLib's: "?tls-psk-file=K;socket=S" has one */
    if (strstr(g_uri_get_scheme(uri), "+unix") && !ioh_nbd_has_socket(spec)) {
        return ioh_args_usage_error(error, "'%s' is not a valid NBD URI: +unix needs "
                                    "?socket=PATH", name);
    }
    return TRUE;
}

/* An RBD image name that does not parse: a usage error, before connecting. Its text is
 * not quoted (an option's value stays out of messages). */
static gboolean
check_rbd_name(const char *spec, GError **error)
{
    g_auto(IohRbdName) name = { 0 };
    g_autoptr(GError) err = NULL;

    if (ioh_rbd_name_parse(spec, &name, &err)) {
        return TRUE;
    }
    return ioh_args_usage_error(error, "not a valid RBD image name "
                                "(rbd:POOL/IMAGE[@SNAP][:conf=PATH][:id=USER][:keyring=PATH]; "
                                "'./rbd:...' for a file): %s", err->message);
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
        return ioh_args_usage_error(error, "'%s': no environment variable %s (write './%s' "
                                    "for a file of that name)", spec, spec + 4, spec);
    }
    if (!ioh_nbd_is_uri(value) && !ioh_rbd_is_name(value)) {
        return ioh_args_usage_error(error, "'%s': environment variable %s does not hold an "
                                    "NBD URI or an RBD image name", spec, spec + 4);
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
            return ioh_args_usage_error(error, "'%s': not a file descriptor number (write "
                                        "'./%s' for a file of that name)", spec, spec);
        }
        ret->kind = IOH_OPERAND_FD;
        ret->fd = (int)n;
    } else if (ioh_nbd_is_legacy(spec)) {
        /* libnbd does not take it, and a file of that name is rarely what was meant */
        return ioh_args_usage_error(error, "'%s' is QEMU's legacy NBD syntax: use an NBD "
                                    "URI (nbd://HOST[:PORT]/EXPORT, "
                                    "nbd+unix:///EXPORT?socket=PATH), or './%s' for a file of "
                                    "that name", spec, spec);
    } else if (ioh_nbd_is_uri(spec)) {
        ret->kind = IOH_OPERAND_NBD;
        return check_nbd_uri(spec, error);
    } else if (ioh_rbd_is_name(spec)) {
        ret->kind = IOH_OPERAND_RBD;
        return check_rbd_name(spec, error);
    }
    return TRUE;
}

/* PATH FD (the second a bare decimal number) or IN OUT. */
static gboolean
take_operands(IohArgs *a, GPtrArray *operands, GError **error)
{
    const char *second;
    guint64 fd;

    if (operands->len != 2) {
        return ioh_args_usage_error(error, "expected IN and OUT (or PATH FD), got %u operand%s",
                                    operands->len, operands->len == 1 ? "" : "s");
    }
    second = g_ptr_array_index(operands, 1);
    if (!is_fd_number(second)) {
        if (!operand_text(g_ptr_array_index(operands, 0), &a->in, error) ||
            !operand_text(second, &a->out, error)) {
            return FALSE;
        }
        if (!*a->in || !*a->out) {
            return ioh_args_usage_error(error, "empty file name");
        }
        return parse_operand(a->in, 0, &a->in_op, error) &&
               parse_operand(a->out, 1, &a->out_op, error);
    }
    if (!ioh_number_unsigned(second, 10, 0, G_MAXINT, &fd)) {
        return ioh_args_usage_error(error, "malformed fd '%s'", second);
    }
    a->libvirt = TRUE;
    a->path = g_strdup(g_ptr_array_index(operands, 0));
    a->fd = (int)fd;
    if (!*a->path) {
        return ioh_args_usage_error(error, "empty PATH");
    }
    return TRUE;
}

static gboolean
parse_args(int argc, char **argv, IohArgs *a, GError **error)
{
    g_autoptr(GPtrArray) operands = g_ptr_array_new();
    g_autoptr(GError) err = NULL;

    memset(a, 0, sizeof(*a));
    ioh_copy_options_init(&a->copy);
    a->status_fd = -1;
    a->fd = -1;
    a->identity_fd = -1;

    if (!ioh_opt_parse(entries, argc, argv, apply_option, a, operands, &err)) {
        /* a grammar error is a usage error like any other */
        return ioh_args_usage_error(error, "%s", err->message);
    }
    if (a->help || a->version) {
        return TRUE;
    }
    a->copy.mode = a->direct ? IOH_CACHE_DIRECT
                             : a->fadvise ? IOH_CACHE_FADVISE : IOH_CACHE_BUFFERED;
    apply_compression(a);
    return take_operands(a, operands, error) && ioh_clash_check_options(a, error);
}

void
ioh_args_update_filters(IohArgs *a)
{
    /* from the checksum alone again: apply_compression() reads it from copy.filters */
    a->copy.filters = a->checksum_filters[0] ? a->checksum_filters : NULL;
    memset(a->filters, 0, sizeof(a->filters));
    apply_compression(a);
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
    ioh_args_age_clear(a);
}
