/* qg-image-remote.c - the image header on an NBD export or an RBD image
 * (qg-image-remote.h): each call goes to the side the name's form says */
#include "qg-image-remote.h"

#include "ioh-nbd-uri.h"
#include "ioh-rbd-name.h"
#include "qg-image-nbd.h"
#include "qg-image-rbd.h"

struct _QgImageRemote {
    QgImageNbd *nbd;
    QgImageRbd *rbd;
};

const char *
qg_image_remote_job_path(const char *path, char **ret_uri, char **ret_name)
{
    if (!ioh_rbd_is_name(path)) {
        return qg_image_nbd_job_path(path, ret_uri, ret_name);
    }
    *ret_uri = g_strdup(path);
    *ret_name = ioh_rbd_safe_name(path);
    return *ret_name;
}

QgImageRemote *
qg_image_remote_open(const char *uri, gboolean write, guint timeout_s,
                     GCancellable *cancellable, GError **error)
{
    g_autoptr(QgImageRemote) img = g_new0(QgImageRemote, 1);

    if (ioh_rbd_is_name(uri)) {
        img->rbd = qg_image_rbd_open(uri, write, timeout_s, cancellable, error);
    } else {
        img->nbd = qg_image_nbd_open(uri, write, timeout_s, cancellable, error);
    }
    return img->nbd || img->rbd ? g_steal_pointer(&img) : NULL;
}

void
qg_image_remote_free(QgImageRemote *img)
{
    if (!img) {
        return;
    }
    qg_image_nbd_free(img->nbd);
    qg_image_rbd_free(img->rbd);
    g_free(img);
}

gboolean
qg_image_remote_start_save(QgImageRemote *img, guint64 bound, GError **error)
{
    return img->rbd ? qg_image_rbd_start_save(img->rbd, bound, error)
                    : qg_image_nbd_start_save(img->nbd, bound, error);
}

gboolean
qg_image_remote_write_header(QgImageRemote *img, const QgImageInfo *info, GError **error)
{
    return img->rbd ? qg_image_rbd_write_header(img->rbd, info, error)
                    : qg_image_nbd_write_header(img->nbd, info, error);
}

QgImageInfo *
qg_image_remote_read_header(QgImageRemote *img, GError **error)
{
    return img->rbd ? qg_image_rbd_read_header(img->rbd, error)
                    : qg_image_nbd_read_header(img->nbd, error);
}
