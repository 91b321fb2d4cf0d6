/* qg-compress.c - compressed images: what the helper is asked, what the header records
 *
 * A save with QgMigrateOptions.compress has the helper store the stream as zstd frames
 * (libwrap's ioh_wrap_options_set_compress()) and records the method, the level and the
 * stored length in a version-2 header (qg-image.h); a restore reads them from the
 * header and has the helper decompress. The checksum is the stream's either way.
 */
#include "qg-migrate-private.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ioh-error.h"
#include "qg-file.h"
#include "qg-placement.h"

gboolean
qg_mig_compress_check(QgImageInfo *info, const QgMigrateOptions *opts, GError **error)
{
    return !opts->compress || qg_image_set_compression(info, opts->compress, error);
}

/* Save: the checksum, and the compression the header will record. */
static gboolean
qg_mig_save_options(IohWrapOptions *o, const QgMigrateOptions *opts,
                    const QgImageInfo *info, GError **error)
{
    g_autofree char *spec = NULL;

    if (!ioh_wrap_options_set_checksum(o, "xxh3", error)) {
        return FALSE;
    }
    if (!info->compression) {
        return !info->encryption || ioh_wrap_options_set_threads(o, opts->threads, error);
    }
    spec = info->compress_auto ? g_strdup_printf("%s:auto", info->compression)
                               : g_strdup_printf("%s:%d", info->compression,
                                                 info->compress_level);
    return ioh_wrap_options_set_compress(o, spec, error) &&
           ioh_wrap_options_set_threads(o, opts->threads, error);
}

const char *
qg_mig_helper_cpus(const QgMigrateOptions *opts, const QgImageInfo *info)
{
    return qg_placement_applies(opts->helper_cpus_auto, info->compression != NULL,
                                info->encryption != NULL) ? opts->helper_cpus : NULL;
}

IohWrapOptions *
qg_mig_wrap_options(const QgMigrateOptions *opts, const QgImageInfo *info, gboolean save,
                    const char *path, GError **error)
{
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autofree char *sum = NULL;

    if (!qg_mig_encrypt_options(o, opts, info, save, path, error) ||
        !ioh_wrap_options_set_cpus(o, qg_mig_helper_cpus(opts, info), error)) {
        return NULL;
    }
    if (save) {
        return qg_mig_save_options(o, opts, info, error) ? g_steal_pointer(&o) : NULL;
    }
    /* Restore: the header's checksum, verified over what the frames decode to. */
    sum = g_strdup_printf("%016" G_GINT64_MODIFIER "x", info->checksum);
    if (!ioh_wrap_options_set_verify_checksum(o, sum, error) ||
        !ioh_wrap_options_set_decompress(o, info->compression != NULL, error)) {
        return NULL;
    }
    return g_steal_pointer(&o);
}

void
qg_mig_compress_stats(const QgImageInfo *info, QgMigrateStats *stats)
{
    stats->compressed = info->compression != NULL;
    stats->compress_level = info->compress_level;
    stats->compress_auto = info->compress_auto;
    stats->stored_length = info->stored_length;
}

/* Reads the helper's pipe to its end, discarding: the frames are checked as they pass.
 * Returns the bytes read. */
static guint64
qg_mig_compress_drain(int fd)
{
    g_autofree char *buf = g_malloc(1 << 20);
    guint64 total = 0;

    for (;;) {
        ssize_t n = read(fd, buf, 1 << 20);

        if (n == 0 || (n < 0 && errno != EINTR)) {
            return total;
        }
        total += n > 0 ? (guint64)n : 0;
    }
}

/* Decompresses the whole image (its stored length) to nothing: the length of the stream
 * its frames hold in *@ret_length, or FALSE with the helper's error when a frame is
 * corrupt (or the image cannot be read). */
static gboolean
qg_mig_compress_verify(const char *path, const QgImageInfo *info, guint64 *ret_length,
                       GError **error)
{
    IohWrapParams params = { .offset = info->stream_offset, .length = info->stored_length };
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autoptr(IohWrap) wrap = NULL;
    int fd = qg_file_open_image(path, error);

    if (fd < 0) {
        return FALSE;
    }
    ioh_wrap_options_set_decompress(o, TRUE, NULL);
    wrap = ioh_wrap_new_with_options(&fd, path, IOH_WRAP_NONE, &params, o, error);
    if (!wrap) {
        close(fd);
        return FALSE;
    }
    *ret_length = qg_mig_compress_drain(fd);
    return ioh_wrap_finish(wrap, error);
}

/* What a compressed image can have caused once the helper ran: QEMU refused the stream
 * (EIO), or loaded it and the helper then disagreed: it found the pipe closed with bytes
 * left (EPIPE), or the stream's checksum (EBADMSG) or length differed from the header's. */
static gboolean
qg_mig_compress_suspect(const GError *err)
{
    int errsv = ioh_error_get_errno(err);   /* QEMU's (IOH_ERROR), the helper's */

    return errsv == EIO || errsv == EPIPE || errsv == EBADMSG ||
           g_error_matches(err, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED);
}

/* QEMU refused the stream (@qerr, EIO) and a frame is corrupt (@corrupt): the helper's
 * line first, then QEMU's. */
static void
qg_mig_compress_corrupt(GError *qerr, const GError *corrupt)
{
    const char *qemu_says = qerr->message;
    char *msg;

    if (g_str_has_prefix(qemu_says, "restore failed: ")) {
        qemu_says += strlen("restore failed: ");
    }
    msg = g_strdup_printf("restore failed: %s; %s", corrupt->message, qemu_says);
    g_free(qerr->message);
    qerr->message = msg;
}

void
qg_mig_compress_diagnose(const char *path, const QgImageInfo *info, gboolean loaded,
                         GError **error)
{
    g_autoptr(GError) corrupt = NULL;
    GError *qerr = error ? *error : NULL;
    guint64 length = 0;

    /* The helper hands on what a frame decodes to before the frame's checksum: a
     * damaged raw block can reach QEMU, which refuses the stream first (the helper then
     * only saw EPIPE); frames past the stream's end reach a pipe QEMU closed after the
     * stream (EPIPE), or its buffer (the checksum then differs). Read the frames to the
     * end to tell the user which it was. */
    /* an encrypted image's chunks are authenticated before anything is delivered: the
     * helper's own line already names a damaged one */
    if (!info || !info->compression || info->encryption || !qg_mig_compress_suspect(qerr)) {
        return;
    }
    if (!qg_mig_compress_verify(path, info, &length, &corrupt)) {
        if (g_error_matches(qerr, IOH_ERROR, EIO) &&
            g_str_has_prefix(corrupt->message, "decompress ")) {
            qg_mig_compress_corrupt(qerr, corrupt);
        }
        return;
    }
    if (length > info->stream_length) {
        g_clear_error(error);
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "restore failed%s: %s: compressed data continues past the stream's "
                    "length %" G_GUINT64_FORMAT " (its frames hold %" G_GUINT64_FORMAT
                    " bytes)", loaded ? " (guest left paused)" : "", path,
                    info->stream_length, length);
    }
}
