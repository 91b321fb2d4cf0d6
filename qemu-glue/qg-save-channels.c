/* qg-save-channels.c - a save and a restore over QEMU's multifd (prefix qg_mfd_)
 *
 * QEMU gets a unix socket instead of a pipe: `migrate unix:PATH` on our socket (a save),
 * `migrate-incoming unix:PATH` on its own (a restore), with the capability `multifd`
 * and the parameters `multifd-channels` and `multifd-compression` set first. Each of the
 * N+1 connections gets a helper of its own (ioh_wrap_new_channel()): the main channel's
 * region starts at 4096 as a single stream does, channel i's at 4096 + (i+1) * R, R the
 * bound of one stream rounded up to 1 MiB (docs/channels.md). The main channel's wrap is
 * the job's (watched as a single stream's); the channels' wraps are here.
 */
#include "qg-migrate-private.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"

#define QG_MFD_REGION_ALIGN (G_GUINT64_CONSTANT(1) << 20)

QgMfd *
qg_mfd_new(guint n, GError **error)
{
    g_autoptr(QgChannels) ch = qg_channels_new(n, error);
    QgMfd *m;

    if (!ch) {
        return NULL;
    }
    m = g_new0(QgMfd, 1);
    m->ch = g_steal_pointer(&ch);
    m->wraps = g_new0(IohWrap *, n);
    return m;
}

void
qg_mfd_free(QgMfd *m)
{
    if (!m) {
        return;
    }
    for (guint i = 0; i < m->ch->n; i++) {
        g_clear_pointer(&m->wraps[i], ioh_wrap_free);   /* kills a helper still running */
    }
    g_free(m->wraps);
    qg_channels_free(m->ch);
    g_free(m);
}

/* One migrate-set-capabilities: multifd on or off. */
gboolean
qg_mfd_set_capability(QgQmp *qmp, gboolean on, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autoptr(JsonObject) cap = json_object_new();
    JsonArray *caps = json_array_new();

    json_object_set_string_member(cap, "capability", "multifd");
    json_object_set_boolean_member(cap, "state", on);
    json_array_add_object_element(caps, json_object_ref(cap));
    json_object_set_array_member(args, "capabilities", caps);
    return qg_qmp_run(qmp, "migrate-set-capabilities", args, error);
}

gboolean
qg_mfd_set_qemu(QgQmp *qmp, guint n, const char *compression, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_int_member(args, "multifd-channels", n);
    json_object_set_string_member(args, "multifd-compression", compression ?: "none");
    return qg_mfd_set_capability(qmp, TRUE, error) &&
           qg_qmp_run(qmp, "migrate-set-parameters", args, error);
}

gboolean
qg_mfd_start(QgQmp *qmp, gboolean save, const char *socket_path, GError **error)
{
    g_autoptr(JsonObject) args = json_object_new();
    g_autofree char *uri = g_strconcat("unix:", socket_path, NULL);

    json_object_set_string_member(args, "uri", uri);
    return qg_qmp_run(qmp, save ? "migrate" : "migrate-incoming", args, error);
}

guint64
qg_mfd_region_size(guint64 bound)
{
    return (bound + QG_MFD_REGION_ALIGN - 1) / QG_MFD_REGION_ALIGN * QG_MFD_REGION_ALIGN;
}

/* An open of its own (its own position and O_DIRECT flag) of the file @file_fd is:
 * through /proc/self/fd, never by the file's name again. Whoever can write the folder
 * may have renamed a link to a file of their own over the name since the tool created
 * the .part (a save: the guest's RAM in their file) or read the header (a restore). */
int
qg_mfd_reopen(int file_fd, gboolean save, const char *name, GError **error)
{
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", file_fd);
    int fd = open(self, (save ? O_WRONLY : O_RDONLY) | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        ioh_error_set_errno(error, errno, "open", name);
    }
    return fd;
}

/* The helper of connection @slot (0 the main channel) on its own open of the image
 * (@file_fd: the .part a save created, the image a restore checked), or its own
 * connection to m->uri: the file's fd is the wrap's, the connection's the helper's
 * (ours is closed). */
static IohWrap *
qg_mfd_wrap(QgMfd *m, guint slot, int file_fd, const char *name, gboolean save,
            const IohWrapParams *params, const IohWrapOptions *wopts, IohCacheMode cache,
            GError **error)
{
    int fd = m->uri ? -1 : qg_mfd_reopen(file_fd, save, name, error);
    IohWrap *wrap;

    if (m->uri) {
        wrap = ioh_wrap_new_channel_uri(m->ch->fds[slot], m->uri, save, params, wopts, error);
        ioh_fd_clear(&m->ch->fds[slot]);
        return wrap;
    }
    if (fd < 0) {
        return NULL;
    }
    wrap = ioh_wrap_new_channel(m->ch->fds[slot], &fd, name, qg_mig_wrap_flags(cache), params,
                                wopts, error);
    ioh_fd_clear(&fd);
    ioh_fd_clear(&m->ch->fds[slot]);   /* the helper's copy is the connection now */
    if (wrap) {
        g_debug("channel %u of %u: helper pid %d at offset %" G_GUINT64_FORMAT, slot,
                m->ch->n, (int)ioh_wrap_get_pid(wrap), params->offset);
    }
    return wrap;
}

gboolean
qg_mfd_save_plumb(QgMfd *m, int file_fd, const char *name, QgImageInfo *info,
                  const QgMigrateOptions *opts, guint64 region, IohWrap **ret_main,
                  GError **error)
{
    /* the same recipients for every connection: each helper seals its region as one
     * age file of its own */
    g_autoptr(IohWrapOptions) wopts = qg_mig_wrap_options(opts, info, TRUE, name, error);

    if (!wopts || !ioh_wrap_options_set_region(wopts, region, error)) {
        return FALSE;
    }
    /* on a server, each helper's own bound, its final flush included (as one stream's) */
    if (m->uri && !ioh_wrap_options_set_stall_timeout(wopts, MIN(opts->stall_timeout_s, 86400),
                                                      error)) {
        return FALSE;
    }
    if (!qg_channels_accept(m->ch, opts->stall_timeout_s, opts->cancellable, error)) {
        g_prefix_error(error, "save failed: %s: ", name);
        return FALSE;
    }
    for (guint slot = 0; slot <= m->ch->n; slot++) {
        IohWrapParams params = { .offset = QG_IMAGE_HEADER_SIZE + slot * region,
                                 .progress_interval_ms = 250 };
        IohWrap *w = qg_mfd_wrap(m, slot, file_fd, name, TRUE, &params, wopts, opts->cache,
                                 error);

        if (!w) {
            return FALSE;
        }
        *(slot ? &m->wraps[slot - 1] : ret_main) = w;
    }
    m->region = region;
    return TRUE;
}

/* A channel's helper is done: its verdict, its figures into @r. On a save, it stored
 * its region encrypted exactly when the main channel's helper did (@encryption: the
 * host's recipients apply to every helper alike); a mix could not be indexed. */
static gboolean
qg_mfd_finish_one(IohWrap *wrap, guint i, gboolean save, const char *encryption,
                  QgImageRegion *r, GError **error)
{
    if (!ioh_wrap_finish(wrap, error) || !qg_mig_helper_checksum(wrap, &r->checksum, error)) {
        g_prefix_error(error, "channel %u: ", i);
        return FALSE;
    }
    if (save && g_strcmp0(ioh_wrap_get_encryption(wrap), encryption) != 0) {
        g_set_error(error, IOH_ERROR, EIO, "channel %u: its helper stored the region %s, "
                    "the main channel's %s", i, encryption ? "unencrypted" : "encrypted",
                    encryption ? "encrypted" : "unencrypted");
        return FALSE;
    }
    ioh_wrap_get_progress(wrap, &r->length, NULL);
    r->stored_length = ioh_wrap_get_stored_bytes(wrap);
    return TRUE;
}

/* Each helper is bounded by its region (a file's: the file-size limit; an export's or
 * an RBD image's: its --region, refused before a byte past it is sent); checked again
 * here, so that no stream past its region is ever indexed. */
static gboolean
qg_mfd_check_region(const QgMfd *m, guint64 stored, const char *what, const char *name,
                    GError **error)
{
    if (stored <= m->region) {
        return TRUE;
    }
    g_set_error(error, IOH_ERROR, EFBIG, "save failed: %s: %s stored %" G_GUINT64_FORMAT
                " bytes, past its region of %" G_GUINT64_FORMAT, name, what, stored,
                m->region);
    return FALSE;
}

gboolean
qg_mfd_save_finish(QgMfd *m, const char *name, QgImageInfo *info,
                   const QgMigrateOptions *opts, GError **error)
{
    if (!qg_channels_check_no_extra(m->ch, error)) {
        g_prefix_error(error, "save failed: %s: ", name);
        return FALSE;
    }
    info->channels = m->ch->n;
    info->regions = g_new0(QgImageRegion, m->ch->n);
    info->uuid = g_strdup(m->ch->uuid);
    info->multifd_compression = g_strdup(opts->qemu_compress ?: "none");
    if (!qg_mfd_check_region(m, info->stored_length, "the main channel", name, error)) {
        return FALSE;
    }
    for (guint i = 0; i < m->ch->n; i++) {
        info->regions[i].offset = QG_IMAGE_HEADER_SIZE + (i + 1) * m->region;
        if (!qg_mfd_finish_one(m->wraps[i], i, TRUE, info->encryption, &info->regions[i],
                               error)) {
            g_prefix_error(error, "save failed: %s: ", name);
            return FALSE;
        }
        g_autofree char *what = g_strdup_printf("channel %u", i);

        if (!qg_mfd_check_region(m, info->regions[i].stored_length, what, name, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

void
qg_mfd_stats(const QgImageInfo *info, QgMigrateStats *stats)
{
    stats->connection_bytes[0] = stats->stream_length;
    stats->connection_stored[0] = stats->stored_length;
    for (guint i = 0; i < info->channels && i + 1 < QG_MIGRATE_CONNECTIONS_MAX; i++) {
        stats->connection_bytes[i + 1] = info->regions[i].length;
        stats->connection_stored[i + 1] = info->regions[i].stored_length;
        stats->stream_length += info->regions[i].length;
        stats->stored_length += info->regions[i].stored_length;
    }
}

IohWrapOptions *
qg_mfd_restore_options(const QgImageInfo *info, const QgMigrateOptions *opts, guint slot,
                       const char *path, GError **error)
{
    g_autoptr(IohWrapOptions) o = slot ? ioh_wrap_options_new() : NULL;
    g_autofree char *sum = NULL;
    guint i = slot - 1;

    if (!slot) {
        return qg_mig_wrap_options(opts, info, FALSE, path, error);
    }
    sum = g_strdup_printf("%016" G_GINT64_MODIFIER "x", info->regions[i].checksum);
    if (!qg_mig_encrypt_options(o, opts, info, FALSE, path, error) ||
        !ioh_wrap_options_set_cpus(o, qg_mig_helper_cpus(opts, info), error) ||
        !ioh_wrap_options_set_verify_checksum(o, sum, error) ||
        !ioh_wrap_options_set_decompress(o, info->compression != NULL, error)) {
        return NULL;
    }
    return g_steal_pointer(&o);
}

IohWrapParams
qg_mfd_restore_params(const QgImageInfo *info, guint slot)
{
    const QgImageRegion *r = slot ? &info->regions[slot - 1] : NULL;

    return (IohWrapParams){ .offset = r ? r->offset : info->stream_offset,
                            .length = r ? r->stored_length : info->stored_length,
                            .progress_interval_ms = 250 };
}

gboolean
qg_mfd_restore_plumb(QgMfd *m, QgQmp *qmp, const char *path, int fd,
                     const QgImageInfo *info, const QgMigrateOptions *opts,
                     IohWrap **ret_main, GError **error)
{
    /* the main channel first: QEMU 7.2 takes the first connection as the main one */
    for (guint slot = 0; slot <= m->ch->n; slot++) {
        IohWrapParams params = qg_mfd_restore_params(info, slot);
        g_autoptr(IohWrapOptions) o = qg_mfd_restore_options(info, opts, slot, path, error);
        IohWrap *w;

        if (!o || !qg_channels_connect(m->ch, m->ch->path, slot, error)) {
            return FALSE;
        }
        w = qg_mfd_wrap(m, slot, fd, path, FALSE, &params, o, opts->cache, error);
        if (!w) {
            return FALSE;
        }
        *(slot ? &m->wraps[slot - 1] : ret_main) = w;
    }
    (void)qmp;
    return TRUE;
}

gboolean
qg_mfd_restore_verify(QgMfd *m, const QgImageInfo *info, GError **error)
{
    for (guint i = 0; i < m->ch->n; i++) {
        QgImageRegion got = { 0 };

        if (!qg_mfd_finish_one(m->wraps[i], i, FALSE, NULL, &got, error)) {
            g_prefix_error(error, "restore failed (guest left paused): ");
            return FALSE;
        }
        if (got.length != info->regions[i].length) {
            g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                        "restore failed (guest left paused): channel %u: the helper "
                        "delivered %" G_GUINT64_FORMAT " bytes, the index says %"
                        G_GUINT64_FORMAT, i, got.length, info->regions[i].length);
            return FALSE;
        }
    }
    return TRUE;
}
