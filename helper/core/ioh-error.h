/* ioh-error.h - the engine's GError domain
 *
 * Every engine error is in IOH_ERROR with the errno value as its code (so callers can
 * test for ENOSPC) and a message of the form "<what> <path>: <cause>", ready to print
 * after "iohelper: ".
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_ERROR (ioh_error_quark())
GQuark ioh_error_quark(void);

/* Sets "<what> <path>: strerror(errsv)" with code errsv. Returns FALSE for tail calls. */
gboolean ioh_error_set_errno(GError **error, int errsv, const char *what, const char *path);

G_END_DECLS
