/* ioh-nbd-uri.h - NBD URIs as text: recognised, and named without their secrets
 *
 * In the core (no libnbd) so that libwrap and qemu-glue name a URI in their messages as
 * the helper does.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE when @spec starts with one of libnbd's URI schemes (nbd, nbds, +unix, +vsock). */
gboolean ioh_nbd_is_uri(const char *spec);

/* @uri without its secrets, for messages: the query is dropped except "socket=PATH". */
char *ioh_nbd_safe_name(const char *uri);

G_END_DECLS
