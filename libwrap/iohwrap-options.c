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

IohWrapOptions *
ioh_wrap_options_new(void)
{
    return g_new0(IohWrapOptions, 1);
}

void
ioh_wrap_options_free(IohWrapOptions *options)
{
    if (!options) {
        return;
    }
    g_free(options->checksum);
    g_free(options->verify_checksum);
    g_free(options);
}

IohWrapOptions *
iohw_options_copy(const IohWrapOptions *options)
{
    IohWrapOptions *copy = ioh_wrap_options_new();

    if (options) {
        copy->checksum = g_strdup(options->checksum);
        copy->verify_checksum = g_strdup(options->verify_checksum);
        copy->connections = options->connections;
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
