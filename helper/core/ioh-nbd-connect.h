/* ioh-nbd-connect.h - connecting to an NBD server, bounded and cancellable, over libnbd
 *
 * Shared by the helper's NBD ends (helper/engine/ends/ioh-nbd.c) and qemu-glue's header
 * connection (qg-image-nbd.c): a library of its own beside the core (iohnbdconnect),
 * since the core is linked into libiohwrap.so, which has no business with libnbd.
 * Errors name the URI by ioh_nbd_safe_name() and quote libnbd through ioh_nbd_redact().
 */
#pragma once

#include <gio/gio.h>
#include <libnbd.h>

G_BEGIN_DECLS

/* The handshake's bound when the caller gives none (no --stall-timeout). */
#define IOH_NBD_CONNECT_TIMEOUT_S 60

/* Connects @h to @uri (libnbd's nbd_aio_connect_uri(), then its state machine driven
 * here until the handshake is done), never waiting longer than @timeout_s in all
 * (0: IOH_NBD_CONNECT_TIMEOUT_S), nor past @cancellable's cancellation (may be NULL;
 * the wait polls its fd). FALSE with "connect NAME: CAUSE" (NAME: the URI's safe name):
 * ETIMEDOUT "the server did not complete the NBD handshake in N s", the cancelled
 * error, or libnbd's cause. Blocking without bound remains only in the name lookup of
 * nbd:// (getaddrinfo(), inside libnbd). */
gboolean ioh_nbd_connect_uri(struct nbd_handle *h, const char *uri, guint timeout_s,
                             GCancellable *cancellable, GError **error);

/* Waits for the command @cookie (an nbd_aio_*() call's result; < 0: that call failed)
 * on @h, driving @h's state machine here (nobody else may drive it meanwhile), never
 * longer than @timeout_s (0: no bound) nor past @cancellable's cancellation (may be
 * NULL). FALSE with "WHAT NAME: CAUSE": ETIMEDOUT "the server did not answer in N s",
 * the cancelled error, or libnbd's cause (the command's error, a lost connection). */
gboolean ioh_nbd_wait_command(struct nbd_handle *h, int64_t cookie, const char *uri,
                              const char *what, guint timeout_s, GCancellable *cancellable,
                              GError **error);

/* Ends @h's connection politely: NBD_CMD_DISC sent (within @timeout_s, 0:
 * IOH_NBD_CONNECT_TIMEOUT_S), without waiting for the server to close its end, which
 * nbd_shutdown() waits for without bound (a server that never closes held a save that
 * had succeeded). The caller still nbd_close()s @h. */
void ioh_nbd_disconnect(struct nbd_handle *h, guint timeout_s);

/* @msg (a libnbd error) without the name of the call it starts with ("nbd_pwrite: "). */
const char *ioh_nbd_cause(const char *msg);

/* libnbd's last error of this thread as "WHAT NAME: CAUSE" (errno libnbd's, else EIO),
 * the cause without the name of the libnbd call it starts with and without @uri's
 * secrets. FALSE. */
gboolean ioh_nbd_fail(GError **error, const char *uri, const char *what);

/* A connected @h fit for a save: FALSE with "open NAME: the export is read-only"
 * (EROFS), or "flush NAME: NBD server does not support flush: cannot make the save
 * durable" (EOPNOTSUPP) - without a flush nothing tells that a write reached the
 * server's storage, so a save is refused before it writes anything. */
gboolean ioh_nbd_check_save(struct nbd_handle *h, const char *uri, GError **error);

/* FALSE with that flush error (a connection found without flush later). */
gboolean ioh_nbd_no_flush(GError **error, const char *name);

G_END_DECLS
