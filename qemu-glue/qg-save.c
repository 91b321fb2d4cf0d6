/* qg-save.c - qg_migrate_save(): QEMU -> the helper's pipe -> helper (XXH3) -> the new image
 *
 * Steps: check QEMU and FILE (nothing touched yet), make the image and the plumbing,
 * pause and migrate, wait for QEMU, wait for the helper's durable file, header + rename.
 * Everything a step set up is undone by qg_save_free() unless the save completed.
 */
#include "qg-migrate-private.h"

#include <errno.h>
#include <string.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-number.h"
#include "qg-file.h"
#include "qg-image-remote.h"
#include "ioh-json.h"

/* Device state besides RAM in a stream (QEMU's vmstate of every device): generous; the
 * RAM blocks are counted from QEMU itself. */
#define QG_SAVE_DEVICE_STATE (4u << 20)
/* Without x-query-ramblock: ROMs and video RAM (std VGA: 16 MiB) beside the guest's RAM. */
#define QG_SAVE_ROM_ALLOWANCE (64u << 20)

typedef struct {
    QgJob job;              /* qmp, path, opts, the watch, the figures */
    char *target;           /* the file FILE leads to (qg_file_save_target()) */
    QgImageInfo *info;
    QgSaveFile *file;
    IohWrap *wrap;
    int qemu_fd;            /* the write end of the helper's pipe until QEMU has its own */
    guint64 old_bw;
    gboolean bw_changed;    /* QEMU's max-bandwidth is to be put back */
    gboolean stopped;       /* we paused the guest: resume it on failure */
    gboolean migrating;     /* migrate was started and has not ended: cancel on failure */
    gboolean done;
    char *uri;              /* an NBD target: the URI as given (job.path: uri_name) */
    char *uri_name;         /* ... without its secrets */
    QgMfd *mfd;             /* --channels: QEMU's multifd connections and their helpers */
    gboolean mfd_caps;      /* QEMU's multifd capability is ours to turn off on failure */
    guint64 region;         /* --channels: each connection's region in the image */
} QgSave;

static void
qg_save_free(QgSave *s)
{
    if (!s) {
        return;
    }
    if (s->migrating) {
        qg_qmp_run(s->job.qmp, "migrate_cancel", NULL, NULL);
    }
    ioh_fd_clear(&s->qemu_fd);
    g_clear_pointer(&s->wrap, ioh_wrap_free);   /* kills a helper still running */
    g_clear_pointer(&s->mfd, qg_mfd_free);
    if (s->mfd_caps && !s->done) {
        qg_mfd_set_capability(s->job.qmp, FALSE, NULL);   /* a next save may be one stream */
    }
    g_clear_pointer(&s->file, qg_save_file_free);   /* removes the .part file */
    if (s->stopped && !s->done) {
        qg_qmp_run(s->job.qmp, "cont", NULL, NULL);
    }
    if (s->bw_changed) {
        qg_mig_set_bandwidth(s->job.qmp, s->old_bw, NULL);
    }
    qg_mig_watch_clear(&s->job.w);
    g_clear_pointer(&s->info, qg_image_info_free);
    g_free(s->target);
    g_free(s->uri);
    g_free(s->uri_name);
    g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgSave, qg_save_free)

/* QEMU can be saved (not waiting for a stream, not saved already); the header's facts. */
static gboolean
qg_save_check_qemu(QgSave *s, GError **error)
{
    g_autofree char *status = NULL;
    gboolean running = FALSE;

    status = qg_mig_query_status(s->job.qmp, &running, error);
    if (!status) {
        return FALSE;
    }
    if (g_str_equal(status, "inmigrate") || g_str_equal(status, "postmigrate") ||
        g_str_equal(status, "finish-migrate")) {
        ioh_error_set(error, EINVAL, NULL, NULL,
                      "cannot save this QEMU: it is in state '%s'%s", status,
                      g_str_equal(status, "inmigrate") ? " (waiting for an incoming migration)"
                      : " (QEMU 7.2 saves a guest only once: restart it)");
        return FALSE;
    }
    if (!qg_mig_machine_info(s->job.qmp, s->info, error)) {
        return FALSE;
    }
    s->info->running = running;
    s->info->time = g_get_real_time() / G_USEC_PER_SEC;
    return TRUE;
}

/* The helper on the image, computing the checksum; its pipe is QEMU's. */
static gboolean
qg_save_plumb(QgSave *s, GError **error)
{
    IohWrapParams params = { .offset = QG_IMAGE_HEADER_SIZE, .progress_interval_ms = 250 };
    g_autoptr(IohWrapOptions) wopts = qg_mig_wrap_options(s->job.opts, s->info, TRUE,
                                                          s->job.path, error);

    s->wrap = wopts ? ioh_wrap_new_with_options(&s->file->fd, s->file->tmp_path,
                                                qg_mig_wrap_flags(s->job.opts->cache),
                                                &params, wopts, error)
                    : NULL;
    if (!s->wrap) {
        return FALSE;
    }
    s->job.stats.helper = ioh_wrap_is_spawned(s->wrap);   /* always: POLLABLE */
    /* The file's fd is now the write end of the wrap's pipe: the wrap closes it at its
     * finish; QEMU gets a copy. */
    s->qemu_fd = qg_mig_dup(s->file->fd, error);
    s->file->fd = -1;
    s->job.w.wrap = s->wrap;
    return s->qemu_fd >= 0;
}

/* ---- an NBD target: the export, not a file ---------------------------------------- */

/* The RAM blocks' "Used" sizes summed from x-query-ramblock (QEMU 6.2 on): every block,
 * guest RAM, video RAM and ROMs (the guest's RAM size alone undercounts the stream), and
 * how many there are. Its columns: name, page size, then Offset, Used, ... in hex. */
static gboolean
qg_save_ram_blocks(QgSave *s, guint64 *ret_bytes, guint *ret_blocks)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(JsonNode) ret = qg_qmp_execute(s->job.qmp, "x-query-ramblock", NULL, &local);
    JsonObject *o = ret && JSON_NODE_HOLDS_OBJECT(ret) ? json_node_get_object(ret) : NULL;
    const char *text = o ? ioh_json_get_string(o, "human-readable-text") : NULL;
    g_auto(GStrv) lines = text ? g_strsplit(text, "\n", -1) : NULL;

    *ret_bytes = 0;
    *ret_blocks = 0;
    if (!lines || !lines[0] || !strstr(lines[0], " Offset ") || !strstr(lines[0], " Used ")) {
        g_debug("x-query-ramblock: %s", local ? local->message : "not the columns known");
        return FALSE;
    }
    for (guint i = 1; lines[i]; i++) {
        const char *hex = strstr(lines[i], " 0x");
        g_autofree char *digits = NULL;
        guint64 used;

        hex = hex ? strstr(hex + 1, " 0x") : NULL;     /* Used: after Offset */
        if (!hex) {
            continue;
        }
        digits = g_strndup(hex + 3, strspn(hex + 3, "0123456789abcdefABCDEF"));
        if (!ioh_number_unsigned(digits, 16, 0, G_MAXUINT64 / 2, &used)) {
            return FALSE;
        }
        *ret_bytes += used;
        (*ret_blocks)++;
    }
    return *ret_blocks > 0;
}

/* An upper bound of the image's stored bytes for a paused guest: each page of every RAM
 * block once, with its 8-byte header, and each block's name (QEMU 7.2's RAM section),
 * device state, and zstd's worst case over that when compressed. Without
 * x-query-ramblock, the guest's RAM with room for ROMs and video RAM. A live save sends
 * pages again: no bound holds for it (docs/qemu-glue.md). */
static guint64
qg_save_stream_bound(QgSave *s)
{
    guint64 bytes = 0, bound;
    guint blocks = 0;

    if (!qg_save_ram_blocks(s, &bytes, &blocks)) {
        bytes = s->info->ram_size + QG_SAVE_ROM_ALLOWANCE;
        blocks = 64;
    }
    bound = bytes + (bytes + 4095) / 4096 * 8 + blocks * 512ull + QG_SAVE_DEVICE_STATE;
    if (s->job.opts->compress) {
        bound += bound / 128 + (1 << 20);     /* incompressible pages: raw blocks' framing */
    }
    /* age: 16 bytes a 64 KiB chunk, its header; for channels always, as the host's
     * recipients may encrypt regions sized before any helper runs */
    if (s->info->encryption || s->job.opts->channels) {
        bound += bound / 4096 + (64 << 10);
    }
    g_debug("NBD save: the stream may take up to %" G_GUINT64_FORMAT " bytes (RAM blocks: %"
            G_GUINT64_FORMAT " bytes in %u)", bound, bytes, blocks);
    return bound;
}

/* Connects, refuses an export too small for the image's upper bound, writes the
 * placeholder: before QEMU sends anything, so that a save that could outgrow the export
 * never overwrites the image already there. The connection is closed before the helper
 * opens its own (a server may take one client at a time: qemu-nbd without --shared). */
static gboolean
qg_save_nbd_open(QgSave *s, GError **error)
{
    guint64 bound = qg_save_stream_bound(s);
    /* --channels: the main stream's region and each channel's, of that bound each */
    guint64 total = s->job.opts->channels
                    ? (s->job.opts->channels + 1ull) * qg_mfd_region_size(bound) : bound;
    g_autoptr(QgImageRemote) img = qg_image_remote_open(s->uri, TRUE,
                                                         s->job.opts->stall_timeout_s,
                                                         s->job.opts->cancellable, error);

    return img && qg_image_remote_start_save(img, total, error);
}

/* The final header, once the helper has flushed and gone: a connection of its own. */
static gboolean
qg_save_nbd_commit(QgSave *s, GError **error)
{
    g_autoptr(QgImageRemote) img = qg_image_remote_open(s->uri, TRUE,
                                                         s->job.opts->stall_timeout_s,
                                                         s->job.opts->cancellable, error);

    return img && qg_image_remote_write_header(img, s->info, error);
}

/* The helper on the export at offset 4096, computing the checksum (and compressing when
 * asked); its pipe is QEMU's. */
static gboolean
qg_save_nbd_plumb(QgSave *s, GError **error)
{
    IohWrapParams params = { .offset = QG_IMAGE_HEADER_SIZE, .progress_interval_ms = 250 };
    g_autoptr(IohWrapOptions) options = qg_mig_wrap_options(s->job.opts, s->info, TRUE,
                                                            s->job.path, error);
    int fd = -1;

    /* the helper's own bound on the server, the final flush included: QEMU's progress,
     * which the job watches, says nothing once the stream is sent */
    if (!options || !ioh_wrap_options_set_stall_timeout(options,
                                                        MIN(s->job.opts->stall_timeout_s,
                                                            86400), error)) {
        return FALSE;
    }
    s->wrap = ioh_wrap_new_uri(s->uri, TRUE, &fd, &params, options, error);
    if (!s->wrap) {
        return FALSE;
    }
    s->job.stats.helper = TRUE;
    s->qemu_fd = qg_mig_dup(fd, error);   /* fd: the wrap's, closed at its finish */
    s->job.w.wrap = s->wrap;
    return s->qemu_fd >= 0;
}

/* --channels: QEMU's multifd set, our socket listening, each region's size. The helpers
 * start once QEMU has connected (qg_save_mfd_migrate()). */
static gboolean
qg_save_mfd_prepare(QgSave *s, GError **error)
{
    s->region = qg_mfd_region_size(qg_save_stream_bound(s));
    s->mfd = qg_mfd_new(s->job.opts->channels, error);
    if (!s->mfd) {
        return FALSE;
    }
    s->mfd_caps = TRUE;
    s->job.stats.helper = TRUE;
    s->job.stats.channels = s->job.opts->channels;
    return qg_mfd_set_qemu(s->job.qmp, s->job.opts->channels, s->job.opts->qemu_compress,
                           error) &&
           qg_channels_listen(s->mfd->ch, error);
}

/* --channels: `migrate unix:OUR-SOCKET`, then a helper on each connection QEMU opens. */
static gboolean
qg_save_mfd_migrate(QgSave *s, GError **error)
{
    s->job.w.start = g_get_monotonic_time();
    if (!qg_mfd_start(s->job.qmp, TRUE, s->mfd->ch->path, error)) {
        return FALSE;
    }
    s->migrating = TRUE;
    s->mfd->uri = s->uri;
    if (!qg_mfd_save_plumb(s->mfd, s->file ? s->file->fd : -1, s->job.path, s->info, s->job.opts,
                           s->region, &s->wrap, error)) {
        return FALSE;
    }
    s->job.w.wrap = s->wrap;
    s->job.w.listener = s->mfd->ch;
    s->job.w.chan_wraps = s->mfd->wraps;
    s->job.w.n_chan_wraps = s->mfd->ch->n;
    return TRUE;
}

/* The image file, QEMU's migration settings, the plumbing: before the guest pauses. */
static gboolean
qg_save_prepare(QgSave *s, GError **error)
{
    /* The file first: a file that cannot be made leaves QEMU as it was. */
    if (s->uri) {
        if (!qg_save_nbd_open(s, error)) {
            return FALSE;
        }
    } else if (!(s->file = qg_save_file_new(s->job.path, s->target, s->job.opts->cache,
                                            error))) {
        return FALSE;
    }
    if (!qg_mig_enable_events(s->job.qmp, error) ||
        !qg_mig_get_bandwidth(s->job.qmp, &s->old_bw, error) ||
        !qg_mig_set_bandwidth(s->job.qmp, s->job.opts->max_bandwidth ? s->job.opts->max_bandwidth
                                                             : QG_BANDWIDTH_UNLIMITED,
                              error)) {
        return FALSE;
    }
    s->bw_changed = s->old_bw != 0;
    if (s->job.opts->channels) {
        return qg_save_mfd_prepare(s, error);
    }
    /* One stream over fd: QEMU refuses it with multifd on, which a restore of a
     * multi-channel image leaves on (it set it as the save had): off, and left off. */
    if (!qg_mfd_set_capability(s->job.qmp, FALSE, error)) {
        return FALSE;
    }
    return s->uri ? qg_save_nbd_plumb(s, error) : qg_save_plumb(s, error);
}

/* QEMU's migration failed: a dead helper makes QEMU fail with EPIPE, so the helper's
 * own failure comes first, then QEMU's words (w.qemu_desc). Consumes @qerr. */
static void
qg_save_failed(QgSave *s, GError *qerr, GError **error)
{
    g_autoptr(GError) cerr = NULL;
    const GError *herr;

    if (ioh_error_is_cancelled(qerr) || g_error_matches(qerr, IOH_ERROR, ETIMEDOUT)) {
        /* qg_save_free kills the helper (a stuck one too: never waited for), cancels */
        g_propagate_error(error, qerr);
        return;
    }
    /* QEMU holds the helper's pipe: a QEMU that keeps it open after its failure would
     * keep the helper waiting for the stream's end. Its verdict is awaited for a while,
     * then it is killed (a verdict of ours, not a failure of its own). */
    qg_mig_helper_start(&s->job.w);
    if (s->mfd) {
        /* a channel's helper that failed is the cause: QEMU only saw its socket close
         * ("Unable to write to socket: Broken pipe"), the main helper a short stream */
        qg_mig_channels_start(&s->job.w, s->mfd->wraps, s->mfd->ch->n);
    }
    qg_mig_helper_wait(&s->job.w, QG_HELPER_EXIT_WAIT_MS, TRUE);
    herr = qg_mig_helper_failure(&s->job.w);
    if ((!herr || ioh_error_get_errno(herr) == EPIPE) && s->mfd &&
        qg_mig_channels_failed(&s->job.w, &cerr)) {
        herr = cerr;   /* "save failed: channel 1 of FILE: ..." */
    }
    if (!herr) {
        g_propagate_error(error, qerr);
        return;
    }
    g_set_error(error, herr->domain, herr->code, "%s%s; QEMU then reported: %s",
                cerr ? "" : "save failed: ", herr->message,
                s->job.w.qemu_desc ? s->job.w.qemu_desc : qerr->message);
    g_error_free(qerr);
}

/* QEMU gets the helper's pipe: `migrate fd:`. */
static gboolean
qg_save_migrate_fd(QgSave *s, GError **error)
{
    if (!qg_mig_pass_fd(s->job.qmp, QG_FDNAME_SAVE, s->qemu_fd, error)) {
        return FALSE;
    }
    ioh_fd_clear(&s->qemu_fd);   /* QEMU holds its own copy; ours would hide EOF */
    s->job.w.start = g_get_monotonic_time();
    if (!qg_mig_start(s->job.qmp, TRUE, QG_FDNAME_SAVE, error)) {
        return FALSE;
    }
    s->migrating = TRUE;
    return TRUE;
}

/* Pauses the guest (unless live), hands QEMU its pipe and waits for "completed". */
static gboolean
qg_save_migrate(QgSave *s, GError **error)
{
    GError *qerr = NULL;

    if (s->info->running && !s->job.opts->live) {
        if (!qg_qmp_run(s->job.qmp, "stop", NULL, error)) {
            return FALSE;
        }
        s->stopped = TRUE;
    }
    if (s->mfd ? !qg_save_mfd_migrate(s, error) : !qg_save_migrate_fd(s, error)) {
        return FALSE;
    }
    if (!qg_mig_wait(&s->job.w, TRUE, &qerr)) {
        qg_save_failed(s, qerr, error);
        return FALSE;
    }
    s->migrating = FALSE;
    return TRUE;
}

/* QEMU is done; the helper is not: success is its exit, after fdatasync. Then the
 * header and the rename. */
static gboolean
qg_save_complete(QgSave *s, GError **error)
{
    gint64 t_qemu = g_get_monotonic_time();
    g_autoptr(JsonObject) mig = qg_mig_query_migrate(s->job.qmp, 0, NULL);

    if (!ioh_wrap_finish(s->wrap, error) ||
        !qg_mig_helper_checksum(s->wrap, &s->info->checksum, error)) {
        g_prefix_error(error, "save failed: ");
        return FALSE;
    }
    ioh_wrap_get_progress(s->wrap, &s->info->stream_length, NULL);
    s->info->stored_length = ioh_wrap_get_stored_bytes(s->wrap);
    if (!qg_mig_encrypt_result(s->info, s->wrap, s->job.path, error)) {
        g_prefix_error(error, "save failed: ");
        return FALSE;
    }
    if (s->mfd && !qg_mfd_save_finish(s->mfd, s->job.path, s->info, s->job.opts, error)) {
        return FALSE;
    }
    qg_mig_compress_stats(s->info, &s->job.stats);
    qg_mig_encrypt_stats(s->info, &s->job.stats);
    /* The header last: after the helper's flush, flushed itself. */
    if (s->uri ? !qg_save_nbd_commit(s, error)
               : !qg_save_file_commit(s->file, s->info, error)) {
        return FALSE;
    }
    s->job.stats.stream_length = s->info->stream_length;
    qg_mfd_stats(s->info, &s->job.stats);
    s->job.stats.checksum = s->info->checksum;
    s->job.stats.seconds = (g_get_monotonic_time() - s->job.w.start) / 1e6;
    s->job.stats.qemu_seconds = (t_qemu - s->job.w.start) / 1e6;
    s->job.stats.running = s->info->running;
    s->job.stats.downtime_ms = mig ? ioh_json_get_int(mig, "downtime", -1) : -1;
    s->done = TRUE;
    return TRUE;
}

gboolean
qg_migrate_save(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                QgMigrateStats *ret_stats, GError **error)
{
    g_autoptr(QgSave) s = g_new0(QgSave, 1);

    path = qg_image_remote_job_path(path, &s->uri, &s->uri_name);
    qg_mig_job_init(&s->job, "save", qmp, path, opts);
    s->info = qg_image_info_new();
    s->qemu_fd = -1;
    /* What FILE is, before QEMU is asked anything: a save never pauses a guest for a
     * file it cannot write. */
    s->target = s->uri ? g_strdup(path) : qg_file_save_target(path, error);
    if (!s->target || !qg_mig_compress_check(s->info, opts, error) ||
        !qg_mig_encrypt_check(s->info, opts, error) ||
        !qg_save_check_qemu(s, error) ||
        !qg_save_prepare(s, error) || !qg_save_migrate(s, error) ||
        !qg_save_complete(s, error)) {
        return FALSE;
    }
    if (ret_stats) {
        *ret_stats = s->job.stats;
    }
    return TRUE;
}
