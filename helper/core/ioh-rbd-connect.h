/* ioh-rbd-connect.h - connecting to a Ceph cluster and opening an RBD image, bounded and
 * cancellable, over librados/librbd
 *
 * Beside the core, as ioh-nbd-connect.h is (a library of its own, iohrbdconnect): the
 * core is linked into libiohwrap.so, which has no business with librados. Errors name the
 * image by ioh_rbd_safe_name() only: never a key, a keyring's content or an option.
 */
#pragma once

#include <gio/gio.h>
#include <rados/librados.h>
#include <rbd/librbd.h>

#include "ioh-rbd-name.h"

G_BEGIN_DECLS

/* The bound of the connection and of every cluster operation when the caller gives none
 * (no --stall-timeout): librbd waits without one for a monitor that does not answer and
 * for writes into a full pool. */
#define IOH_RBD_DEFAULT_TIMEOUT_S 60

/* The stream's length and where it starts, recorded in the image's metadata by a
 * single-stream save (the length last: a save that did not finish leaves none), read by
 * a restore; removed by qemu-glue before a multi-channel save, whose regions its header
 * indexes (docs/channels.md). */
#define IOH_RBD_LENGTH_KEY "iohelper.length"
#define IOH_RBD_OFFSET_KEY "iohelper.offset"

/* Connects to the cluster of @name (its conf=, id=, keyring=; else librados' defaults and
 * CEPH_CONF/CEPH_ARGS) and opens the I/O context of its pool (and namespace). Every
 * operation of the handle is bounded by @timeout_s (0: IOH_RBD_DEFAULT_TIMEOUT_S): the
 * monitors' (client_mount_timeout, rados_mon_op_timeout) and the OSDs' (rados_osd_op_
 * timeout: a write waiting on a full pool or a dead OSD fails with ETIMEDOUT). The
 * connection runs in a thread of its own so that @cancellable (may be NULL) ends the wait
 * at once; a connection abandoned so is shut down by that thread when librados returns.
 * librbd's cache is off: a stream is written once, and a cache would copy it and hold
 * writes until the flush. FALSE with "connect NAME: CAUSE" (ETIMEDOUT, the cancelled
 * error, EACCES for a refused key, ENOENT for a missing pool: "pool P does not exist"). */
gboolean ioh_rbd_connect(const IohRbdName *name, guint timeout_s, GCancellable *cancellable,
                         rados_t *ret_cluster, rados_ioctx_t *ret_io, GError **error);

/* Loads librados and librbd (ioh-rbd-dl.c: not linked, so that a helper without an RBD
 * end does not carry them), once; FALSE with "connect NAME: cannot load librbd: ..."
 * (ENOSYS) when they are missing. ioh_rbd_connect() calls it first. */
gboolean ioh_rbd_dl_load(const char *name, GError **error);

/* Closes what ioh_rbd_connect() opened (NULL handles allowed). */
void ioh_rbd_disconnect(rados_t cluster, rados_ioctx_t io);

/* FALSE with "WHAT NAME: CAUSE", code -@ret (a librados/librbd result < 0); the cause is
 * strerror's, in Ceph's words for the codes it gives a meaning (ETIMEDOUT: "the cluster
 * did not answer in N s", EDQUOT: the pool's quota, EACCES: the user's capabilities). */
gboolean ioh_rbd_fail(GError **error, int ret, const char *what, const char *name,
                      guint timeout_s);

/* Why writes into @pool wait, as the monitors say (one bounded command): "the pool P is at
 * its quota" (the pool's full_quota flag: ceph osd pool set-quota), "the pool P is full
 * (an OSD reached its full ratio)" (its full flag), else NULL. librbd makes such writes
 * wait without an error; this names the cause once the wait timed out. */
char *ioh_rbd_pool_full(rados_t cluster, const char *pool);

G_END_DECLS
