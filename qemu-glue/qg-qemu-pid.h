/* qg-qemu-pid.h - QEMU's pid, from the QMP socket and checked with QEMU (prefix qg_qemu_pid)
 *
 * The QMP socket's peer credentials (SO_PEERCRED) name the process that listen()ed on
 * the socket, which need not be the QEMU answering on it: a proxy in between (socat, a
 * management daemon's relay), a listener that handed the socket on and exited (its pid
 * then free for reuse by anything), a QEMU in another pid namespace (pid 0, or the wrong
 * number). --helper-cpus=auto must not pin the helpers to such a process's CPUs, nor
 * call it QEMU: QEMU's own answer (query-cpus-fast, its vCPU threads' ids) must name a
 * thread of the peer.
 */
#pragma once

#include <glib.h>

#include "qg-qmp.h"

G_BEGIN_DECLS

/* QEMU's pid in this process's pid namespace: the QMP socket's peer, once one of the
 * vCPU threads query-cpus-fast names is a thread of that process. Else 0 and *@ret_why,
 * one phrase saying why it is unknown. */
GPid qg_qemu_pid(QgQmp *qmp, char **ret_why);

G_END_DECLS
