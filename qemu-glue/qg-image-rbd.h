/* qg-image-rbd.h - the image header on an RBD image, over librbd (prefix qg_image_rbd_)
 *
 * As qg-image-nbd.h for an NBD export: the header in the image's first 4096 bytes, the
 * stream after it (the helper's, with --offset=4096), the header written and read here
 * over a cluster connection of its own (ioh-rbd-connect.h: bounded, cancellable). A save
 * creates a missing image thin and grows an image it created to the header + the
 * stream's upper bound (thin: nothing written); an existing image too small is refused
 * as an NBD export is. Messages name the image without its options.
 */
#pragma once

#include <gio/gio.h>

#include "qg-image.h"

G_BEGIN_DECLS

typedef struct _QgImageRbd QgImageRbd;

QgImageRbd *qg_image_rbd_open(const char *name, gboolean write, guint timeout_s,
                              GCancellable *cancellable, GError **error);
void qg_image_rbd_free(QgImageRbd *img);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgImageRbd, qg_image_rbd_free)

gboolean qg_image_rbd_start_save(QgImageRbd *img, guint64 bound, GError **error);
gboolean qg_image_rbd_write_header(QgImageRbd *img, const QgImageInfo *info,
                                   GError **error);
QgImageInfo *qg_image_rbd_read_header(QgImageRbd *img, GError **error);

G_END_DECLS
