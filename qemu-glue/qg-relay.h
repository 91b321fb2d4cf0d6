/* qg-relay.h - copy a stream from one fd to another in a thread, hashing it on the way
 * (prefix qg_relay_)
 *
 * Sits between QEMU's pipe and the helper's pipe, so the checksum of the stream is
 * known the moment the last byte passed, without reading the file back (which would
 * cost a second pass over the disk in the cache-bypassing modes). The checksum is
 * XXH3-64, seed 0 (see qg-image.h). Between two pipes it uses tee(2), so each byte is
 * copied once (to be hashed) instead of twice; otherwise read() and write().
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define QG_RELAY_ERROR (qg_relay_error_quark())
GQuark qg_relay_error_quark(void);

typedef enum {
    QG_RELAY_ERROR_READ,       /* reading @in_fd failed */
    QG_RELAY_ERROR_WRITE,      /* writing @out_fd failed (EPIPE: the reader went away) */
    QG_RELAY_ERROR_CANCELLED,
} QgRelayError;

typedef struct _QgRelay QgRelay;

/**
 * qg_relay_start:
 * @in_fd: read until EOF.
 * @out_fd: where the bytes go.
 * @what: a short name for messages ("save", "restore").
 *
 * Both fds are owned by the relay from now on (also on failure): it closes each as
 * soon as it is done with it, so the other ends see EOF or EPIPE at once.
 *
 * Both fds are switched to O_NONBLOCK. SIGPIPE is blocked in the relay's thread, so
 * a reader that goes away shows as an EPIPE error, never as a signal.
 */
QgRelay *qg_relay_start(int in_fd, int out_fd, const char *what, GError **error);

/* Bytes moved so far (any thread). */
guint64 qg_relay_get_bytes(QgRelay *relay);

/* TRUE once the relay has stopped: EOF on @in_fd (every byte written), an error, or a
 * cancel (any thread, never blocks). qg_relay_wait() then returns at once. It turns TRUE
 * before the relay closes its fds, so a peer that saw EOF or EPIPE from the relay finds
 * it TRUE already. */
gboolean qg_relay_has_ended(QgRelay *relay);

/* Waits for the end; TRUE when EOF on @in_fd was reached and every byte written.
 * May be called again: it returns the same result. */
gboolean qg_relay_wait(QgRelay *relay, guint64 *ret_bytes, guint64 *ret_checksum,
                       GError **error);

/* Stops the relay at once (if still running), closes what it owns, frees it. */
void qg_relay_free(QgRelay *relay);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgRelay, qg_relay_free)

G_END_DECLS
