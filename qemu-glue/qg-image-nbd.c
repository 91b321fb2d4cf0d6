/* qg-image-nbd.c - the image header on an NBD export, over libnbd (qg-image-nbd.h)
 *
 * Why here and not through the helper: the header is 4096 bytes written twice (the
 * placeholder before, the final header after the stream) and read once, each with a
 * flush; a helper run per header would be a process, a connection and a status pipe
 * for one request, and the helper's --offset/--length copy of a pipe cannot express
 * "these 4096 bytes, then flush" any better than nbd_pwrite() + nbd_flush().
 */
#include "qg-image-nbd.h"

#include <errno.h>
#include <libnbd.h>

#include "ioh-error.h"
#include "ioh-nbd-connect.h"
#include "ioh-nbd-uri.h"

struct _QgImageNbd {
    struct nbd_handle *h;
    char *uri;        /* as given: only for ioh_nbd_redact() */
    char *name;
    guint64 size;
    guint timeout_s;             /* each command's bound, as the handshake's */
    GCancellable *cancellable;   /* the job's */
};

/* libnbd's last error as IOH_ERROR naming the URI, without its secrets. */
static gboolean
nbd_failed(GError **error, const char *op, const QgImageNbd *img)
{
    return ioh_nbd_fail(error, img->uri, op);
}

const char *
qg_image_nbd_job_path(const char *path, char **ret_uri, char **ret_name)
{
    if (!ioh_nbd_is_uri(path)) {
        return path;
    }
    *ret_uri = g_strdup(path);
    *ret_name = ioh_nbd_safe_name(path);
    return *ret_name;
}

void
qg_image_nbd_free(QgImageNbd *img)
{
    if (!img) {
        return;
    }
    if (img->h) {
        ioh_nbd_disconnect(img->h, img->timeout_s);
        nbd_close(img->h);
    }
    g_clear_object(&img->cancellable);
    g_free(img->uri);
    g_free(img->name);
    g_free(img);
}

QgImageNbd *
qg_image_nbd_open(const char *uri, gboolean write, guint timeout_s, GCancellable *cancellable,
                  GError **error)
{
    g_autoptr(QgImageNbd) img = g_new0(QgImageNbd, 1);
    int64_t size;

    img->uri = g_strdup(uri);
    img->name = ioh_nbd_safe_name(uri);
    img->timeout_s = timeout_s ? timeout_s : IOH_NBD_CONNECT_TIMEOUT_S;
    img->cancellable = cancellable ? g_object_ref(cancellable) : NULL;
    img->h = nbd_create();
    if (!img->h) {
        nbd_failed(error, "connect", img);
        return NULL;
    }
    /* tls-psk-file= and the like, as the helper allows them: the URI is the user's */
    if (nbd_set_uri_allow_local_file(img->h, true) < 0) {
        nbd_failed(error, "connect", img);
        return NULL;
    }
    if (!ioh_nbd_connect_uri(img->h, uri, timeout_s, cancellable, error)) {
        return NULL;
    }
    if ((size = nbd_get_size(img->h)) < 0) {
        nbd_failed(error, "connect", img);
        return NULL;
    }
    /* a save's header is flushed: a server without flush is refused before it is
     * written, as the helper refuses it before the stream */
    if (write && !ioh_nbd_check_save(img->h, uri, error)) {
        return NULL;
    }
    img->size = (guint64)size;
    return g_steal_pointer(&img);
}

const char *
qg_image_nbd_name(const QgImageNbd *img)
{
    return img->name;
}

guint64
qg_image_nbd_size(const QgImageNbd *img)
{
    return img->size;
}

/* Waits for the command @cookie, bounded and cancellable as the handshake: a server
 * that connects and then never answers held a save or a restore, SIGTERM or not. */
static gboolean
wait_command(QgImageNbd *img, int64_t cookie, const char *what, GError **error)
{
    return ioh_nbd_wait_command(img->h, cookie, img->uri, what, img->timeout_s,
                                img->cancellable, error);
}

static gboolean
write_flush(QgImageNbd *img, const guint8 *buf, GError **error)
{
    return wait_command(img, nbd_aio_pwrite(img->h, buf, QG_IMAGE_HEADER_SIZE, 0,
                                            NBD_NULL_COMPLETION, 0), "write", error) &&
           wait_command(img, nbd_aio_flush(img->h, NBD_NULL_COMPLETION, 0), "flush", error);
}

gboolean
qg_image_nbd_start_save(QgImageNbd *img, guint64 bound, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);

    if (img->size < QG_IMAGE_HEADER_SIZE + bound) {
        return qg_image_too_small(error, "export", img->name, img->size, bound);
    }
    qg_image_placeholder_encode(buf);
    return write_flush(img, buf, error);
}

gboolean
qg_image_nbd_write_header(QgImageNbd *img, const QgImageInfo *info, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);

    return qg_image_header_encode(info, buf, error) && write_flush(img, buf, error);
}

QgImageInfo *
qg_image_nbd_read_header(QgImageNbd *img, GError **error)
{
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE);
    gsize len = MIN(img->size, QG_IMAGE_HEADER_SIZE);
    g_autoptr(QgImageInfo) info = NULL;

    if (len && !wait_command(img, nbd_aio_pread(img->h, buf, len, 0, NBD_NULL_COMPLETION, 0),
                             "read", error)) {
        return NULL;
    }
    info = qg_image_header_decode(buf, len, img->name, error);
    if (!info) {
        return NULL;
    }
    return qg_image_check_holds(info, img->size, "export", img->name, error)
               ? g_steal_pointer(&info) : NULL;
}
