/* ioh-nbd-uri.c - NBD URIs as text (ioh-nbd-uri.h) */
#include "ioh-nbd-uri.h"

#include <string.h>

static const char *const schemes[] = {
    "nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://",
};

gboolean
ioh_nbd_is_uri(const char *spec)
{
    for (gsize i = 0; i < G_N_ELEMENTS(schemes); i++) {
        if (g_str_has_prefix(spec, schemes[i])) {
            return TRUE;
        }
    }
    return FALSE;
}

char *
ioh_nbd_safe_name(const char *uri)
{
    const char *q = strchr(uri, '?');
    GString *s;
    g_auto(GStrv) params = NULL;

    if (!q) {
        return g_strdup(uri);
    }
    s = g_string_new_len(uri, q - uri);
    params = g_strsplit(q + 1, "&", -1);
    for (guint i = 0; params[i]; i++) {
        if (g_str_has_prefix(params[i], "socket=")) {
            g_string_append_printf(s, "?%s", params[i]);
        }
    }
    return g_string_free(s, FALSE);
}
