/* ioh-error.h - the one GError domain of iohelper, libwrap and qemu-glue
 *
 * Every error is in IOH_ERROR with the errno value as its code, so a caller tests for
 * ENOSPC with g_error_matches(error, IOH_ERROR, ENOSPC). But for one: "cancelled" is
 * G_IO_ERROR_CANCELLED everywhere (engine, helper, libwrap, qemu-glue), and
 * ioh_error_is_cancelled() is the one test for it. Why GLib's code and not ECANCELED:
 * it is what GLib itself gives (GTask, g_cancellable_set_error_if_cancelled(), GIO
 * streams), and what libwrap's public API promises its callers, who cannot see this
 * private domain. Every constructor here given ECANCELED makes it (without the
 * operation and path fields, which G_IO_ERROR has no room for); ioh_error_get_errno()
 * gives ECANCELED back, so the helper protocol still sends errno ECANCELED.
 *
 * The message has the form "<what> <path>: <cause>", ready to print after "iohelper: ".
 * Besides the message, an error set here carries its parts as structured fields (an
 * extended GError domain): the operation (@what, e.g. "write") and the path or URI. The
 * helper sends them on its status fd (see ioh-protocol.h) so that nobody parses
 * messages. g_prefix_error() and g_propagate_prefixed_error() keep them.
 *
 * Messages are not escaped here: a path keeps its bytes. Whoever prints a message escapes
 * it (ioh_escape_line()).
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define IOH_ERROR (ioh_error_quark())
GQuark ioh_error_quark(void);

/* Sets "<what> <path>: strerror(errsv)" with code @errsv (path NULL: "<what>: ..."),
 * operation @what and path @path. Returns FALSE for tail calls. */
gboolean ioh_error_set_errno(GError **error, int errsv, const char *what, const char *path);

/* Sets "<what> <path>: <cause>" where the cause is formatted from @fmt (instead of
 * strerror), with code @errsv, operation @what and path @path. @what may be NULL for a
 * message that is the cause alone. Returns FALSE. */
gboolean ioh_error_set(GError **error, int errsv, const char *what, const char *path,
                       const char *fmt, ...) G_GNUC_PRINTF(5, 6);

/* A new error with the literal @message and the given code and fields (NULL allowed):
 * what a reader of the helper's protocol rebuilds from an error line. ECANCELED gives
 * G_IO_ERROR_CANCELLED (no fields). */
GError *ioh_error_new_literal(int errsv, const char *what, const char *path,
                              const char *message);

/* Sets the one "cancelled": G_IO_ERROR_CANCELLED, "<what> <path>: Operation canceled". */
gboolean ioh_error_set_cancelled(GError **error, const char *what, const char *path);

/* FALSE with the cancelled error set when @cancellable (may be NULL) is cancelled. */
gboolean ioh_error_check_cancellable(GCancellable *cancellable, const char *what,
                                     const char *path, GError **error);

/* TRUE for the one "cancelled", G_IO_ERROR_CANCELLED. */
gboolean ioh_error_is_cancelled(const GError *error);

/* The errno of @error: the code of an IOH_ERROR, the errno field of an error of a domain
 * of ioh_error_domain_register(), ECANCELED for G_IO_ERROR_CANCELLED, 0 for other domains
 * and for NULL. */
int ioh_error_get_errno(const GError *error);

/* The operation ("write", "open", ...) and the path or URI of an IOH_ERROR (or of an
 * error of a domain of ioh_error_domain_register()), or NULL when the error carries none
 * (or is of another domain, or NULL). Owned by the error. */
const char *ioh_error_get_operation(const GError *error);
const char *ioh_error_get_path(const GError *error);

/* Another domain whose errors carry the same fields as IOH_ERROR's (errno, operation,
 * path), for a library that must keep its own public domain and codes (libwrap's
 * IOH_WRAP_ERROR). Registering a name twice returns the same quark; a process has room
 * for three such domains (0 and a critical after). The core is one shared library, so
 * every part of a process sees the same registrations. */
GQuark ioh_error_domain_register(const char *name);

/* A new error in @domain (IOH_ERROR or a domain of ioh_error_domain_register()) with
 * @code, and @from's message and fields: its errno (ioh_error_get_errno()), operation and
 * path. */
GError *ioh_error_new_from(GQuark domain, int code, const GError *from);

/* The symbolic name of @errsv ("ENOSPC"), or NULL when it has none. */
const char *ioh_errno_name(int errsv);

G_END_DECLS
