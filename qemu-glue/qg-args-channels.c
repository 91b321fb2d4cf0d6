/* qg-args-channels.c - qemu-iohelper's --channels and --qemu-compress (qg-args.h) */
#include "qg-args.h"

#include "ioh-rbd-name.h"
#include "ioh-number.h"
#include "qg-image.h"
#include "qg-report.h"

gboolean
qg_args_parse_channels(QgArgs *a, const char *value, GError **error)
{
    gint64 v;

    if (!ioh_number_signed(value, 10, 1, QG_IMAGE_CHANNELS_MAX, &v)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--channels takes 1 to %d, not '%s'", QG_IMAGE_CHANNELS_MAX, value);
        return FALSE;
    }
    a->channels = (gint)v;
    return TRUE;
}

gboolean
qg_args_parse_qemu_compress(QgArgs *a, const char *value, GError **error)
{
    if (!g_str_equal(value, "zstd") && !g_str_equal(value, "zlib") &&
        !g_str_equal(value, "none")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--qemu-compress takes zstd, zlib or none, not '%s'", value);
        return FALSE;
    }
    g_free(a->qemu_compress);
    a->qemu_compress = g_str_equal(value, "none") ? NULL : g_strdup(value);
    return TRUE;
}

/* An RBD image takes channels as it takes one stream (each channel's helper writes its
 * region, docs/rbd.md); a snapshot is refused before QEMU is touched, as a usage error:
 * it is read-only, a save into it could never succeed. */
static gboolean
qg_args_check_channels_rbd(const char *file)
{
    g_auto(IohRbdName) n = { 0 };
    g_autofree char *safe = NULL;

    if (!ioh_rbd_is_name(file) || !ioh_rbd_name_parse(file, &n, NULL) || !n.snap) {
        return TRUE;   /* a malformed name: the save's open names it */
    }
    safe = ioh_rbd_safe_name(file);
    qg_report_error("--channels saves into an RBD image, not a snapshot (%s is read-only: "
                    "restore from it, save to the image)", safe);
    return FALSE;
}

/* --channels belongs to a save into a file, an NBD export or an RBD image of a paused
 * guest; --qemu-compress to --channels. */
gboolean
qg_args_check_channels(const QgArgs *a, const char *cmd, const char *file)
{
    if (!a->channels && !a->qemu_compress) {
        return TRUE;
    }
    if (!g_str_equal(cmd, "save")) {
        qg_report_error("--channels and --qemu-compress are for save (a restore reads them "
                        "from the image's header)");
        return FALSE;
    }
    if (!a->channels) {
        qg_report_error("--qemu-compress needs --channels (it is QEMU's multifd "
                        "compression)");
        return FALSE;
    }
    if (a->live) {
        qg_report_error("--channels saves a paused guest: not with --live (a live save "
                        "sends pages again, past any channel's region)");
        return FALSE;
    }
    return qg_args_check_channels_rbd(file);
}
