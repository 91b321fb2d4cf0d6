/* qg-image-nbd.h - the image header on an NBD export (prefix qg_image_nbd_)
 *
 * An image whose target is an NBD URI (nbd://, nbd+unix://...: anything iohelper takes)
 * has the same layout as a file (qg-image.h): the header in the export's first 4096
 * bytes, the stream after it, written by the helper. This process writes and reads the
 * header itself over a libnbd connection of its own, open only while it does so: the
 * placeholder before the helper starts, the final header after the helper's flush and
 * exit, each followed by a flush.
 * Messages name the URI without its secrets (ioh_nbd_safe_name()).
 */
#pragma once

#include <gio/gio.h>

#include "qg-image.h"

G_BEGIN_DECLS

typedef struct _QgImageNbd QgImageNbd;

/* The name a job on @path uses in its messages: @path itself, or when it is an NBD URI,
 * *@ret_name (the URI without its secrets), *@ret_uri then a copy of @path. */
const char *qg_image_nbd_job_path(const char *path, char **ret_uri, char **ret_name);

/* Connects to @uri, the handshake and each later command (the header's read, write and
 * flush) bounded by @timeout_s (0: IOH_NBD_CONNECT_TIMEOUT_S) and ended by @cancellable
 * (may be NULL): ioh_nbd_connect_uri(), ioh_nbd_wait_command(). @write: a save (a
 * read-only export, or a server without flush, is refused before anything is written). */
QgImageNbd *qg_image_nbd_open(const char *uri, gboolean write, guint timeout_s,
                              GCancellable *cancellable, GError **error);
void qg_image_nbd_free(QgImageNbd *img);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgImageNbd, qg_image_nbd_free)

/* The URI without its secrets; the export's size in bytes. */
const char *qg_image_nbd_name(const QgImageNbd *img);
guint64 qg_image_nbd_size(const QgImageNbd *img);

/* A save's start: refuses an export smaller than the header + @bound bytes (ENOSPC,
 * "export URI is N bytes, the image may need up to ...": @bound, an upper bound of the
 * stored stream, is checked before anything is written, so that a save that could
 * outgrow the export leaves the image there whole), then writes the placeholder header
 * and flushes. */
gboolean qg_image_nbd_start_save(QgImageNbd *img, guint64 bound, GError **error);

/* Writes the final header at offset 0 and flushes. */
gboolean qg_image_nbd_write_header(QgImageNbd *img, const QgImageInfo *info,
                                   GError **error);

/* Reads and checks the header, and that the export holds the whole stream. */
QgImageInfo *qg_image_nbd_read_header(QgImageNbd *img, GError **error);

G_END_DECLS
