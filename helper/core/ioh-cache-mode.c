/* ioh-cache-mode.c - the cache mode and its names */
#include "ioh-cache-mode.h"

#include <errno.h>

#include "ioh-error.h"
#include "ioh-escape.h"

static const char *const names[IOH_CACHE_MODE_COUNT] = {
    [IOH_CACHE_BUFFERED] = "buffered",
    [IOH_CACHE_DIRECT] = "direct",
    [IOH_CACHE_FADVISE] = "fadvise",
    [IOH_CACHE_NBD] = "nbd",
    [IOH_CACHE_RBD] = "rbd",
};

const char *
ioh_cache_mode_to_string(IohCacheMode mode)
{
    return (guint)mode < IOH_CACHE_MODE_COUNT ? names[mode] : NULL;
}

gboolean
ioh_cache_mode_from_string(const char *text, IohCacheMode *ret_mode, GError **error)
{
    g_autofree char *shown = NULL;

    for (guint i = 0; text && i < IOH_CACHE_MODE_COUNT; i++) {
        if (g_str_equal(text, names[i])) {
            *ret_mode = (IohCacheMode)i;
            return TRUE;
        }
    }
    shown = ioh_escape_line(text ? text : "");
    return ioh_error_set(error, EINVAL, NULL, NULL,
                         "cache mode '%s': not buffered, direct, fadvise, nbd or rbd", shown);
}
