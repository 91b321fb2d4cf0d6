/* qg-image-rbd.c - the image header on an RBD image, over librbd (qg-image-rbd.h)
 *
 * Why here and not through the helper: as for NBD (qg-image-nbd.c), the header is 4096
 * bytes written twice and read once, each made durable; a helper run per header would be
 * a process and a cluster session for one write.
 */
#include "qg-image-rbd.h"

#include <errno.h>

#include "ioh-error.h"
#include "ioh-rbd-connect.h"

struct _QgImageRbd {
    IohRbdName parsed;
    char *name;                  /* without options */
    rados_t cluster;
    rados_ioctx_t io;
    rbd_image_t image;
    guint64 size;
    gboolean created;
    guint timeout_s;
};

void
qg_image_rbd_free(QgImageRbd *img)
{
    if (!img) {
        return;
    }
    if (img->image) {
        rbd_close(img->image);
    }
    ioh_rbd_disconnect(img->cluster, img->io);
    ioh_rbd_name_clear(&img->parsed);
    g_free(img->name);
    g_free(img);
}

/* A save opens the image, creating a missing one (thin, 0 bytes: start_save grows it to
 * the whole layout, every channel's region too, before any helper starts);
 * a restore opens it, or its snapshot, read-only. */
static int
open_image(QgImageRbd *img, gboolean write)
{
    IohRbdName *n = &img->parsed;
    int order = 0, r;

    if (!write) {
        return rbd_open_read_only(img->io, n->image, &img->image, n->snap);
    }
    r = rbd_open(img->io, n->image, &img->image, NULL);
    if (r != -ENOENT) {
        return r;
    }
    r = rbd_create(img->io, n->image, 0, &order);
    img->created = r == 0;
    return r < 0 ? r : rbd_open(img->io, n->image, &img->image, NULL);
}

static gboolean
open_checked(QgImageRbd *img, gboolean write, GError **error)
{
    rbd_image_info_t info;
    int r;

    if (write && img->parsed.snap) {
        return ioh_error_set(error, EROFS, "open", img->name, "a snapshot is read-only "
                             "(restore from it; save to the image)");
    }
    r = open_image(img, write);
    if (r == -ENOENT) {
        img->image = NULL;
        return ioh_error_set(error, ENOENT, "open", img->name, "the image does not exist "
                             "in pool %s", img->parsed.pool);
    }
    if (r >= 0) {
        r = rbd_stat(img->image, &info, sizeof(info));
    } else {
        img->image = NULL;
    }
    img->size = r >= 0 ? info.size : 0;
    return r >= 0 || ioh_rbd_fail(error, r, "open", img->name, img->timeout_s);
}

QgImageRbd *
qg_image_rbd_open(const char *name, gboolean write, guint timeout_s,
                  GCancellable *cancellable, GError **error)
{
    g_autoptr(QgImageRbd) img = g_new0(QgImageRbd, 1);
    g_autoptr(GError) err = NULL;

    img->name = ioh_rbd_safe_name(name);
    img->timeout_s = timeout_s ? timeout_s : IOH_RBD_DEFAULT_TIMEOUT_S;
    if (!ioh_rbd_name_parse(name, &img->parsed, &err)) {
        ioh_error_set(error, EINVAL, "open", img->name, "%s", err->message);
        return NULL;
    }
    if (!ioh_rbd_connect(&img->parsed, img->timeout_s, cancellable, &img->cluster, &img->io,
                         error) ||
        !open_checked(img, write, error)) {
        return NULL;
    }
    return g_steal_pointer(&img);
}

static gboolean
write_flush(QgImageRbd *img, const guint8 *buf, GError **error)
{
    ssize_t n = rbd_write(img->image, 0, QG_IMAGE_HEADER_SIZE, (const char *)buf);
    int r = n == QG_IMAGE_HEADER_SIZE ? rbd_flush(img->image) : n < 0 ? (int)n : -EIO;

    return r >= 0 || ioh_rbd_fail(error, r, "write", img->name, img->timeout_s);
}

/* The single-stream record an earlier save left in the image's metadata, forgotten
 * before the placeholder overwrites that save's header: a multi-channel save's helpers
 * write regions and record nothing (their index is our header), so an old record would
 * describe bytes that are no longer its stream. A single-stream save's helper removes and
 * sets it itself; removing it first changes nothing there. */
static gboolean
forget_record(QgImageRbd *img, GError **error)
{
    const char *keys[] = { IOH_RBD_LENGTH_KEY, IOH_RBD_OFFSET_KEY };

    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
        int r = rbd_metadata_remove(img->image, keys[i]);

        if (r < 0 && r != -ENOENT) {
            return ioh_rbd_fail(error, r, "write metadata of", img->name, img->timeout_s);
        }
    }
    return TRUE;
}

gboolean
qg_image_rbd_start_save(QgImageRbd *img, guint64 bound, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);
    guint64 need = QG_IMAGE_HEADER_SIZE + bound;

    if (img->size < need) {
        int r = img->created ? rbd_resize(img->image, need) : -ENOSPC;

        if (r == -ENOSPC) {
            return qg_image_too_small(error, "image", img->name, img->size, bound);
        }
        if (r < 0) {
            return ioh_rbd_fail(error, r, "resize", img->name, img->timeout_s);
        }
        img->size = need;
    }
    qg_image_placeholder_encode(buf);
    return forget_record(img, error) && write_flush(img, buf, error);
}

gboolean
qg_image_rbd_write_header(QgImageRbd *img, const QgImageInfo *info, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);

    return qg_image_header_encode(info, buf, error) && write_flush(img, buf, error);
}

QgImageInfo *
qg_image_rbd_read_header(QgImageRbd *img, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);
    gsize len = (gsize)MIN(img->size, QG_IMAGE_HEADER_SIZE);
    ssize_t n = len ? rbd_read(img->image, 0, len, (char *)buf) : 0;
    g_autoptr(QgImageInfo) info = NULL;

    if (n < 0) {
        ioh_rbd_fail(error, (int)n, "read", img->name, img->timeout_s);
        return NULL;
    }
    info = qg_image_header_decode(buf, (gsize)n, img->name, error);
    if (!info) {
        return NULL;
    }
    return qg_image_check_holds(info, img->size, "image", img->name, error)
               ? g_steal_pointer(&info) : NULL;
}
