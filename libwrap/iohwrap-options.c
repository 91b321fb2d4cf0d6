/* iohwrap-options.c - IohWrapOptions: what the helper does to the stream besides copying
 *
 * The options a wrap can ask of the helper beyond the cache mode and placement (the
 * checksum; later releases add more setters): a small object the caller fills and hands
 * to ioh_wrap_new_with_options(), which copies it. Each setter checks its own value;
 * what depends on the direction (a verification on a save) is checked by the constructor.
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-private.h"
#include "ioh-cpus.h"
#include "ioh-number.h"
#include "ioh-option-rules.h"

IohWrapOptions *
ioh_wrap_options_new(void)
{
    IohWrapOptions *options = g_new0(IohWrapOptions, 1);

    options->identity_fd = -1;
    return options;
}

void
ioh_wrap_options_free(IohWrapOptions *options)
{
    if (!options) {
        return;
    }
    g_free(options->checksum);
    g_free(options->verify_checksum);
    g_free(options->cpus);
    iohw_age_options_clear(options);
    g_free(options);
}

IohWrapOptions *
iohw_options_copy(const IohWrapOptions *options)
{
    IohWrapOptions *copy = ioh_wrap_options_new();

    if (options) {
        copy->checksum = g_strdup(options->checksum);
        copy->verify_checksum = g_strdup(options->verify_checksum);
        copy->compress = options->compress;
        copy->compress_level = options->compress_level;
        copy->compress_auto = options->compress_auto;
        copy->decompress = options->decompress;
        copy->threads = options->threads;
        copy->connections = options->connections;
        copy->stall_timeout = options->stall_timeout;
        copy->region = options->region;
        copy->cpus = g_strdup(options->cpus);
        iohw_age_options_copy(options, copy);
    }
    return copy;
}

static gboolean
options_invalid(GError **error, const char *what)
{
    g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                "ioh_wrap_options_%s: options must not be NULL", what);
    return FALSE;
}

gboolean
ioh_wrap_options_set_checksum(IohWrapOptions *options, const char *algorithm,
                              GError **error)
{
    if (!options) {
        return options_invalid(error, "set_checksum");
    }
    if (!iohw_check_checksum(TRUE, algorithm, NULL, error)) {
        return FALSE;
    }
    g_free(options->checksum);
    options->checksum = g_strdup(algorithm);
    return TRUE;
}

gboolean
ioh_wrap_options_set_verify_checksum(IohWrapOptions *options, const char *hex,
                                     GError **error)
{
    if (!options) {
        return options_invalid(error, "set_verify_checksum");
    }
    if (!iohw_check_checksum(FALSE, NULL, hex, error)) {
        return FALSE;
    }
    g_free(options->verify_checksum);
    options->verify_checksum = hex ? g_ascii_strdown(hex, -1) : NULL;
    return TRUE;
}

/* ---- compression (0.3) ------------------------------------------------------------ */

/* "zstd" or "zstd:LEVEL" with LEVEL in the helper's bounds (ioh-limits.h), or "auto"
 * (also "zstd:auto": the helper's --compress=auto, *ret_auto). */
static gboolean
parse_compress(const char *spec, int *ret_level, gboolean *ret_auto, GError **error)
{
    gint64 level = IOH_ZSTD_LEVEL_DEFAULT;

    *ret_auto = g_str_equal(spec, "auto") || g_str_equal(spec, "zstd:auto");
    if (*ret_auto || g_str_equal(spec, "zstd") ||
        (g_str_has_prefix(spec, "zstd:") &&
         ioh_number_signed(spec + 5, 10, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX, &level))) {
        *ret_level = (int)level;
        return TRUE;
    }
    g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                "ioh_wrap_options_set_compress: '%s' is not zstd or zstd:LEVEL "
                "(LEVEL %d to %d) or auto", spec, IOH_ZSTD_LEVEL_MIN, IOH_ZSTD_LEVEL_MAX);
    return FALSE;
}

gboolean
ioh_wrap_options_set_compress(IohWrapOptions *options, const char *spec, GError **error)
{
    int level = 0;
    gboolean autolevel = FALSE;

    if (!options) {
        return options_invalid(error, "set_compress");
    }
    if (spec && !parse_compress(spec, &level, &autolevel, error)) {
        return FALSE;
    }
    options->compress = spec != NULL;
    options->compress_level = level;
    options->compress_auto = autolevel;
    return TRUE;
}

gboolean
ioh_wrap_options_set_decompress(IohWrapOptions *options, gboolean decompress,
                                GError **error)
{
    if (!options) {
        return options_invalid(error, "set_decompress");
    }
    options->decompress = decompress;
    return TRUE;
}

gboolean
ioh_wrap_options_set_threads(IohWrapOptions *options, guint threads, GError **error)
{
    if (!options) {
        return options_invalid(error, "set_threads");
    }
    if (threads > IOH_THREADS_MAX) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_threads: %u threads is out of range (%d to %d, "
                    "or 0 for the online CPUs)", threads, IOH_THREADS_MIN, IOH_THREADS_MAX);
        return FALSE;
    }
    options->threads = threads;
    return TRUE;
}

/* ---- placement (0.5) --------------------------------------------------------------- */

gboolean
ioh_wrap_options_set_cpus(IohWrapOptions *options, const char *cpus, GError **error)
{
    g_autoptr(GError) local = NULL;
    cpu_set_t set;

    if (!options) {
        return options_invalid(error, "set_cpus");
    }
    if (cpus && !ioh_cpus_parse(cpus, &set, &local)) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_cpus: %s", local->message);
        return FALSE;
    }
    g_free(options->cpus);
    options->cpus = cpus ? ioh_cpus_format(&set) : NULL;
    return TRUE;
}

/* The age options' misfits (IOHWRAP_0.4): recipients on a restore, an identity on a
 * save; NULL when they fit. */
static const char *
age_misfit(const IohWrapOptions *options, gboolean save, gboolean uri)
{
    if (save && iohw_age_decrypting(options)) {
        return uri ? "an identity is for a restore (save is TRUE)"
                   : "an identity is for a restore (the fd is open for writing)";
    }
    if (!save && iohw_age_encrypting(options)) {
        return uri ? "recipients are for a save (save is FALSE)"
                   : "recipients are for a save (the fd is open for reading)";
    }
    return NULL;
}

/* Why @options cannot serve a wrap in this direction, or NULL: the helper's rules
 * (ioh-option-rules.h), in the words of this API. */
static const char *
options_misfit(const IohWrapOptions *options, gboolean save, gboolean uri)
{
    IohOptionSet set = {
        .compress = options->compress,
        .decompress = options->decompress,
        .encrypt = iohw_age_encrypting(options),
        .decrypt = iohw_age_decrypting(options),
        .threads = options->threads,
        .nbd_options = options->connections != 0,
        .nbd = uri,
        .direction_known = TRUE,
        .direction = save ? IOH_DIRECTION_SAVE : IOH_DIRECTION_RESTORE,
    };

    if (options->stall_timeout && !uri) {
        return "a stall timeout applies to an NBD URI (ioh_wrap_new_uri())";
    }
    switch (ioh_option_rules_check(&set)) {
    case IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD:
        return "connections apply to an NBD URI (ioh_wrap_new_uri())";
    case IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS:
        /* one of the two is for the other direction: say which */
        return save ? (uri ? "decompress is for a restore (save is TRUE)"
                           : "decompress is for a restore (the fd is open for writing)")
                    : (uri ? "compress is for a save (save is FALSE)"
                           : "compress is for a save (the fd is open for reading)");
    case IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE:
        return uri ? "compress is for a save (save is FALSE)"
                   : "compress is for a save (the fd is open for reading)";
    case IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE:
        return uri ? "decompress is for a restore (save is TRUE)"
                   : "decompress is for a restore (the fd is open for writing)";
    case IOH_OPTION_RULE_THREADS_NEED_COMPRESS:
        return "threads are compression threads: they need compress";
    default:
        return age_misfit(options, save, uri);
    }
}

gboolean
iohw_options_check(const IohWrapOptions *options, gboolean save, gboolean uri,
                   GError **error)
{
    const char *what;

    if (!options) {
        return TRUE;
    }
    if (!iohw_check_checksum(save, NULL, options->verify_checksum, error)) {
        return FALSE;
    }
    what = options_misfit(options, save, uri);
    if (what) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID, "%s: %s",
                    uri ? "ioh_wrap_new_uri" : "ioh_wrap_new", what);
        return FALSE;
    }
    return TRUE;
}

gboolean
iohw_options_compressing(const IohWrapOptions *options)
{
    return options->compress || options->decompress || iohw_age_encrypting(options) ||
           iohw_age_decrypting(options);
}

void
iohw_options_add_compress_args(const IohWrapOptions *options, GPtrArray *argv)
{
    if (options->compress && options->compress_auto) {
        g_ptr_array_add(argv, g_strdup("--compress=auto"));
    } else if (options->compress) {
        g_ptr_array_add(argv, g_strdup_printf("--compress=zstd:%d", options->compress_level));
    }
    if (options->decompress) {
        g_ptr_array_add(argv, g_strdup("--decompress"));
    }
    if (options->threads) {
        g_ptr_array_add(argv, g_strdup_printf("--threads=%u", options->threads));
    }
    iohw_age_add_args(options, argv);
    if (options->cpus) {
        g_ptr_array_add(argv, g_strdup_printf("--cpus=%s", options->cpus));
    }
}
