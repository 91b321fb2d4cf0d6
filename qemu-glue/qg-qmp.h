/* qg-qmp.h - a small synchronous QMP client (prefix qg_qmp_)
 *
 * Connects to QEMU's QMP unix socket, checks the greeting, negotiates capabilities,
 * runs commands (optionally passing one fd with SCM_RIGHTS, as `getfd` needs) and
 * queues the events that arrive meanwhile. One connection, one thread at a time.
 *
 * QEMU 7.2 notes that shape this API: the greeting comes at once, but no command is
 * answered until every -device loader has read its file (16 s for 2 GiB), so the reply
 * timeout is long by default; a QEMU that fails an incoming migration exits, which
 * shows here as QG_QMP_ERROR_CLOSED.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>
#include "ioh-json.h"

G_BEGIN_DECLS

#define QG_QMP_ERROR (qg_qmp_error_quark())
GQuark qg_qmp_error_quark(void);

typedef enum {
    QG_QMP_ERROR_CONNECT,   /* socket missing, not a socket, refused, path too long */
    QG_QMP_ERROR_NOT_QMP,   /* the peer did not greet like QMP */
    QG_QMP_ERROR_TIMEOUT,   /* no answer in time */
    QG_QMP_ERROR_CLOSED,    /* QEMU closed the connection (or exited) */
    QG_QMP_ERROR_PROTOCOL,  /* a message that is not valid QMP, or a reply of a shape
                             * the command does not have */
    QG_QMP_ERROR_COMMAND,   /* QEMU answered with an error: the message quotes its desc */
} QgQmpError;

/* Default wait for the greeting, and for each reply (see the header comment). */
#define QG_QMP_GREETING_TIMEOUT_MS 10000
#define QG_QMP_REPLY_TIMEOUT_MS 120000

typedef struct _QgQmp QgQmp;

/**
 * qg_qmp_connect:
 * @path: the QMP unix socket (at most 107 bytes).
 * @reply_timeout_ms: wait for any one reply; 0 means QG_QMP_REPLY_TIMEOUT_MS.
 *
 * Connects, reads the greeting (QG_QMP_GREETING_TIMEOUT_MS at most) and runs
 * `qmp_capabilities`. Returns NULL and sets @error on failure.
 */
QgQmp *qg_qmp_connect(const char *path, guint reply_timeout_ms, GError **error);

/* Frees @qmp (NULL allowed) and closes the connection. */
void qg_qmp_free(QgQmp *qmp);

/* QEMU's version from the greeting, "MAJOR.MINOR.MICRO". */
const char *qg_qmp_get_version(QgQmp *qmp);

/* The pid of the process that listen()ed on the socket's other end (SO_PEERCRED): not
 * necessarily QEMU (a proxy, a listener gone: qg-qemu-pid.h checks). 0 when the kernel
 * does not say (a peer in another pid namespace). */
GPid qg_qmp_get_peer_pid(QgQmp *qmp);

/**
 * qg_qmp_execute:
 * @command: the QMP command name.
 * @args: (nullable): its arguments (not consumed).
 *
 * Sends the command and waits for its reply. Returns the "return" member (a new
 * reference; an empty object for commands that return nothing), or NULL and sets
 * @error (QG_QMP_ERROR_COMMAND with QEMU's desc when QEMU refused).
 */
JsonNode *qg_qmp_execute(QgQmp *qmp, const char *command, JsonObject *args,
                         GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* The same, passing @fd along with the command (SCM_RIGHTS), as `getfd` expects.
 * @fd stays open in this process: the caller closes it. */
JsonNode *qg_qmp_execute_with_fd(QgQmp *qmp, const char *command, JsonObject *args,
                                 int fd, GError **error) G_GNUC_WARN_UNUSED_RESULT;

/**
 * qg_qmp_call:
 * @fd: passed along (SCM_RIGHTS) when >= 0; stays open here.
 * @shape: (nullable): the members the reply must (or may) have, with their types.
 * @timeout_ms: wait for the reply; 0: the connection's reply timeout.
 *
 * Runs @command and checks its reply: an object that fits @shape (any object when
 * NULL). A reply of another shape is QG_QMP_ERROR_PROTOCOL, one line naming the member
 * ("unexpected reply from QEMU to 'query-status' on SOCK: 'running' is a string, not a
 * boolean"). Returns a new reference to the reply object, or NULL with @error.
 */
JsonObject *qg_qmp_call(QgQmp *qmp, const char *command, JsonObject *args, int fd,
                        const IohJsonMember *shape, guint timeout_ms,
                        GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Runs a command that returns nothing (QEMU's `{}`): TRUE on success; a reply that is
 * not an object is a PROTOCOL error. */
gboolean qg_qmp_run(QgQmp *qmp, const char *command, JsonObject *args, GError **error);

/**
 * qg_qmp_next_event:
 * @timeout_ms: how long to wait for one; 0 only looks at what is queued or pending.
 *
 * Returns the oldest event received (the whole message: "event", "data",
 * "timestamp"), as a new reference. Returns NULL with @error unset on timeout,
 * NULL with @error set when the connection failed.
 */
JsonObject *qg_qmp_next_event(QgQmp *qmp, guint timeout_ms, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgQmp, qg_qmp_free)

G_END_DECLS
