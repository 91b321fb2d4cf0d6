/* ioh-error.c - the engine's GError domain */
#include "ioh-error.h"

#include <string.h>

G_DEFINE_QUARK(ioh-error-quark, ioh_error)

gboolean
ioh_error_set_errno(GError **error, int errsv, const char *what, const char *path)
{
    g_set_error(error, IOH_ERROR, errsv, "%s %s: %s", what, path, g_strerror(errsv));
    return FALSE;
}
