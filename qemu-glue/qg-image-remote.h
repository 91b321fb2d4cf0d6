/* qg-image-remote.h - the image header on a target without an fd: an NBD export
 * (qg-image-nbd.h) or an RBD image (qg-image-rbd.h) (prefix qg_image_remote_)
 *
 * The save and the restore see one kind of target: these calls pick the NBD or the RBD
 * side by the name's form (ioh_nbd_is_uri(), ioh_rbd_is_name()). Both have the same
 * layout as a file: the header in the first 4096 bytes, the stream after it, written by
 * the helper; this process writes and reads the header itself, over a connection of its
 * own, open only while it does so.
 */
#pragma once

#include <gio/gio.h>

#include "qg-image.h"

G_BEGIN_DECLS

typedef struct _QgImageRemote QgImageRemote;

/* The name a job on @path uses in its messages: @path itself, or when it is an NBD URI
 * or an RBD image, *@ret_name (without its secrets or options), *@ret_uri then a copy of
 * @path. */
const char *qg_image_remote_job_path(const char *path, char **ret_uri, char **ret_name);

/* Connects to @uri, each operation bounded by @timeout_s and ended by @cancellable.
 * @write: a save. */
QgImageRemote *qg_image_remote_open(const char *uri, gboolean write, guint timeout_s,
                                    GCancellable *cancellable, GError **error);
void qg_image_remote_free(QgImageRemote *img);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgImageRemote, qg_image_remote_free)

/* A save's start: an export or image too small for the header + @bound is refused (an
 * RBD image this save created is grown instead), then the placeholder header. */
gboolean qg_image_remote_start_save(QgImageRemote *img, guint64 bound, GError **error);

/* Writes the final header at offset 0, made durable. */
gboolean qg_image_remote_write_header(QgImageRemote *img, const QgImageInfo *info,
                                      GError **error);

/* Reads and checks the header, and that the target holds the whole stream. */
QgImageInfo *qg_image_remote_read_header(QgImageRemote *img, GError **error);

G_END_DECLS
