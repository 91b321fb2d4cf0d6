/* qg-compress.c - compressed images: what the helper is asked, what the header records
 *
 * A save with QgMigrateOptions.compress has the helper store the stream as zstd frames
 * (libwrap's ioh_wrap_options_set_compress()) and records the method, the level and the
 * stored length in a version-2 header (qg-image.h); a restore reads them from the
 * header and has the helper decompress. The checksum is the stream's either way.
 */
#include "qg-migrate-private.h"

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
        return TRUE;
    }
    spec = g_strdup_printf("%s:%d", info->compression, info->compress_level);
    return ioh_wrap_options_set_compress(o, spec, error) &&
           ioh_wrap_options_set_threads(o, opts->threads, error);
}

IohWrapOptions *
qg_mig_wrap_options(const QgMigrateOptions *opts, const QgImageInfo *info, gboolean save,
                    GError **error)
{
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autofree char *sum = NULL;

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
    stats->stored_length = info->stored_length;
}
