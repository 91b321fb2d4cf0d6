/* ioh-nbd-uri.h - NBD URIs as text: recognised, and named without their secrets
 *
 * In the core (no libnbd) so that the helper, libwrap and qemu-glue name a URI alike.
 * A URI reaches a message, the status protocol, --record, --stats or debug output only
 * as ioh_nbd_safe_name(): that is the one sanitizer.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE when @spec starts with one of libnbd's URI schemes (nbd, nbds, +unix, +vsock). */
gboolean ioh_nbd_is_uri(const char *spec);

/* TRUE when @spec is QEMU's legacy NBD syntax ("nbd:HOST:PORT[:exportname=X]",
 * "nbd:unix:PATH[:exportname=X]"), which libnbd does not take. */
gboolean ioh_nbd_is_legacy(const char *spec);

#define IOH_NBD_UNPARSABLE "(unparsable URI)"

/* @uri reduced to what is safe to print: scheme://HOST[:PORT]/EXPORT?socket=PATH.
 * Bytes of the host and export that are not printable ASCII are percent-encoded
 * (libnbd refuses them raw). Dropped: the user information (libnbd takes all of it, "user:password" too, as the
 * TLS user name), every query parameter but the last socket= (the one libnbd uses;
 * its value percent-encoded again), and the fragment. The query is split as libnbd
 * 1.14 splits it, on '&' or, when none is left, ';' (lib/uri.c parse_uri_queries()).
 * A URI whose authority libxml2 would refuse or read otherwise is named only by its
 * scheme and IOH_NBD_UNPARSABLE; text that is not an NBD URI is returned as it is. */
char *ioh_nbd_safe_name(const char *uri);

/* TRUE when @uri has a socket= parameter as libnbd reads its query (split on '&', else
 * ';', names percent-decoded): what nbd+unix:// needs. */
gboolean ioh_nbd_has_socket(const char *uri);

/* @text (a message from libnbd about @uri) with every secret of @uri replaced: the whole
 * URI by its safe name, and the user information, the query and fragment, each query
 * parameter's raw and decoded value but socket's, by "<hidden>". libnbd quotes the URI
 * when it cannot parse it, and the PSK file and user name when TLS fails. */
char *ioh_nbd_redact(const char *uri, const char *text);

G_END_DECLS
