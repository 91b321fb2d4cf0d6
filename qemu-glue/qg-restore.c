/* qg-restore.c - qg_migrate_restore(): the image -> helper (verifies XXH3) -> pipe -> QEMU
 *
 * Steps: check QEMU and the image, start the helper (told the header's length and
 * checksum), wait for the first bytes, hand QEMU the helper's pipe, wait for QEMU while
 * watching the helper, await the helper's verdict on length and checksum, resume.
 * Everything a step set up is undone by qg_restore_free() (a QEMU left
 * with a half-loaded guest is told to quit; a loaded guest that proved bad is stopped).
 */
#include "qg-migrate-private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <glib-unix.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "qg-file.h"
#include "qg-image-remote.h"

typedef struct {
    QgJob job;              /* qmp, path, opts, the watch, the figures */
    QgImageInfo *info;
    int fd;                 /* the image, until the wrap takes it */
    int qemu_fd;            /* the read end of the helper's pipe until QEMU has its own */
    IohWrap *wrap;
    gboolean loading;       /* migrate-incoming was started */
    gboolean loaded;        /* QEMU said "completed" */
    gboolean done;
    char *uri;              /* an NBD source: the URI as given (job.path: uri_name) */
    char *uri_name;         /* ... without its secrets */
    QgMfd *mfd;             /* a multi-channel image: QEMU's multifd connections */
    gboolean quit_sent;     /* a failed restore told QEMU to quit */
} QgRestore;

/* A failed restore whose QEMU holds a half-loaded guest: quits it. That guest cannot
 * run, nor can QEMU take another stream (7.2 accepts one incoming migration per
 * process), and after a stream cut short it would spin on its pipe forever: quit it
 * (before its pipe closes, so that it ends by our word, not by its reaction to a cut
 * stream), and the failure leaves no QEMU behind that looks usable. A QEMU waiting for
 * a multifd channel that ended early answers nothing (its main loop waits for the
 * channel): @error then says so. Once. */
static void
qg_restore_abandon(QgRestore *r, GError **error)
{
    if (!r->loading || r->loaded || r->done || r->job.w.qemu_gone || r->quit_sent) {
        return;
    }
    r->quit_sent = TRUE;
    if (!qg_mig_quit(r->job.qmp) && error && *error) {
        g_autofree char *msg = (*error)->message;

        (*error)->message = g_strdup_printf("%s; QEMU does not answer (its load waits for "
                                            "the channel forever, the guest cannot run): "
                                            "stop it", msg);
    }
}

static void
qg_restore_free(QgRestore *r)
{
    if (!r) {
        return;
    }
    qg_restore_abandon(r, NULL);
    ioh_fd_clear(&r->qemu_fd);
    qg_mig_watch_clear(&r->job.w);   /* kills a helper still running, waits for its exit */
    g_clear_pointer(&r->wrap, ioh_wrap_free);
    g_clear_pointer(&r->mfd, qg_mfd_free);
    ioh_fd_clear(&r->fd);
    if (r->loaded && !r->done) {
        /* A QEMU started without -S runs the guest as soon as the stream is loaded,
         * before we could check it: stop a guest whose image proved bad. */
        qg_qmp_run(r->job.qmp, "stop", NULL, NULL);
    }
    g_clear_pointer(&r->info, qg_image_info_free);
    g_free(r->uri);
    g_free(r->uri_name);
    g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgRestore, qg_restore_free)

static gboolean
qg_restore_check_qemu(QgRestore *r, GError **error)
{
    gboolean running = FALSE;
    g_autofree char *status = qg_mig_query_status(r->job.qmp, &running, error);

    if (!status) {
        return FALSE;
    }
    if (!g_str_equal(status, "inmigrate")) {
        ioh_error_set(error, EINVAL, NULL, NULL,
                      "cannot restore into this QEMU: it is in state '%s', not waiting for "
                      "an incoming migration (start it with -incoming defer)", status);
        return FALSE;
    }
    return TRUE;
}

/* An NBD source: the header read from the export and checked, the export large enough
 * for the stream it announces. */
static gboolean
qg_restore_nbd_open(QgRestore *r, GError **error)
{
    g_autoptr(QgImageRemote) img = qg_image_remote_open(r->uri, FALSE,
                                                         r->job.opts->stall_timeout_s,
                                                         r->job.opts->cancellable, error);

    r->info = img ? qg_image_remote_read_header(img, error) : NULL;
    return r->info != NULL;
}

/* Opens the image and checks it: a regular file, a sound header, the whole stream
 * there, O_DIRECT taken when the cache mode asks for it. */
static gboolean
qg_restore_open(QgRestore *r, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (r->uri) {
        return qg_restore_nbd_open(r, error);
    }
    r->fd = qg_file_open_image(r->job.path, error);
    if (r->fd < 0) {
        return FALSE;
    }
    r->info = qg_image_read_header(r->fd, r->job.path, error);
    if (!r->info) {
        return FALSE;
    }
    if (r->job.opts->cache == IOH_CACHE_DIRECT &&
        !qg_file_probe_direct(r->job.path, O_RDONLY, &local)) {
        g_autofree char *msg = g_strdup_printf("cannot restore from %s bypassing the cache "
                                               "with O_DIRECT: %s", r->job.path,
                                               local->message);

        g_propagate_error(error, ioh_error_new_literal(ioh_error_get_errno(local), "open",
                                                       r->job.path, msg));
        return FALSE;
    }
    return TRUE;
}

/* The helper on the image, told the header's length and checksum; its watch. */
static gboolean
qg_restore_plumb(QgRestore *r, GError **error)
{
    IohWrapParams params = { .offset = r->info->stream_offset,
                             .length = r->info->stored_length,   /* compressed: the frames */
                             .progress_interval_ms = 250 };
    g_autoptr(IohWrapOptions) wopts = qg_mig_wrap_options(r->job.opts, r->info, FALSE,
                                                             r->job.path, error);

    /* An export: --offset 4096 --length, the header's checksum (and decompression). */
    r->wrap = !wopts ? NULL
              : r->uri ? ioh_wrap_new_uri(r->uri, FALSE, &r->fd, &params, wopts, error)
                       : ioh_wrap_new_with_options(&r->fd, r->job.path,
                                                   qg_mig_wrap_flags(r->job.opts->cache),
                                                   &params, wopts, error);
    if (!r->wrap) {
        return FALSE;
    }
    r->job.stats.helper = ioh_wrap_is_spawned(r->wrap);   /* always: POLLABLE */
    /* The read end of the helper's pipe: the wrap closes it when its finish starts
     * (now); QEMU gets a copy. */
    r->qemu_fd = qg_mig_dup(r->fd, error);
    r->fd = -1;
    if (r->qemu_fd < 0) {
        return FALSE;
    }
    r->job.w.wrap = r->wrap;
    r->job.w.total = r->info->stream_length;
    r->job.w.start = g_get_monotonic_time();
    /* From now on the helper's exit is watched as well as QEMU. */
    qg_mig_helper_start(&r->job.w);
    return TRUE;
}

/* Are the helper's first bytes in its pipe? A pipe at its end without a byte means the
 * helper exited: waits for its verdict (it failed, or had nothing to send). */
static gboolean
qg_restore_has_bytes(QgWatch *w, int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n = 0;

    if (poll(&p, 1, 0) <= 0) {
        return FALSE;
    }
    if (ioctl(fd, FIONREAD, &n) == 0 && n > 0) {
        return TRUE;
    }
    qg_mig_helper_wait(w, QG_HELPER_EXIT_WAIT_MS, TRUE);
    return FALSE;
}

static gboolean
qg_restore_ready_cb(gint fd, GIOCondition cond, gpointer data)
{
    (void)fd, (void)cond, (void)data;
    return G_SOURCE_REMOVE;   /* one wake-up: the loop looks at the pipe itself */
}

/* Before QEMU gets the pipe: waits until the helper has delivered the stream's first
 * bytes (it opened the image, set its cache mode and read), or failed. A failure says
 * that QEMU was not touched: it still waits for a stream. The pipe wakes the wait as
 * its first bytes arrive (not the next poll slice: a multi-channel restore waits so
 * for each region it probes). */
gboolean
qg_restore_wait_start(QgWatch *w, int fd, GError **error)
{
    g_autoptr(GError) local = NULL;
    gint64 start = g_get_monotonic_time();
    GSource *ready = g_unix_fd_source_new(fd, G_IO_IN | G_IO_HUP | G_IO_ERR);

    g_source_set_callback(ready, G_SOURCE_FUNC(qg_restore_ready_cb), NULL, NULL);
    g_source_attach(ready, w->ctx);

    while (w->total > 0 && !qg_restore_has_bytes(w, fd)) {
        if (qg_mig_stream_failed(w, &local) || qg_mig_cancelled(w, &local)) {
            break;
        }
        if (!w->helper_pending) {
            ioh_error_set(&local, EIO, NULL, NULL,
                          "restore failed: the helper ended without a byte of %s", w->path);
            break;
        }
        if (w->opts->stall_timeout_s &&
            g_get_monotonic_time() - start > (gint64)w->opts->stall_timeout_s * G_USEC_PER_SEC) {
            ioh_error_set(&local, ETIMEDOUT, NULL, NULL,
                          "restore failed: the helper delivered no byte of %s in %u s",
                          w->path, w->opts->stall_timeout_s);
            break;
        }
        qg_mig_helper_iterate(w, QG_RESTORE_POLL_MS);
    }
    g_source_destroy(ready);
    g_source_unref(ready);
    if (!local) {
        return TRUE;
    }
    g_set_error(error, local->domain, local->code,
                "%s (QEMU untouched: it still waits for an incoming stream)", local->message);
    return FALSE;
}

/* The first bytes through the helper before QEMU gets the pipe: whatever fails at the
 * start (O_DIRECT refused, the first read) leaves QEMU waiting, for another try. */
static gboolean
qg_restore_load(QgRestore *r, GError **error)
{
    if (!qg_restore_wait_start(&r->job.w, r->qemu_fd, error) ||
        !qg_mig_pass_fd(r->job.qmp, QG_FDNAME_RESTORE, r->qemu_fd, error)) {
        return FALSE;
    }
    ioh_fd_clear(&r->qemu_fd);
    if (!qg_mig_start(r->job.qmp, FALSE, QG_FDNAME_RESTORE, error)) {
        return FALSE;
    }
    r->loading = TRUE;
    if (!qg_mig_wait(&r->job.w, FALSE, error)) {
        return FALSE;
    }
    r->loaded = TRUE;
    r->job.stats.qemu_seconds = (g_get_monotonic_time() - r->job.w.start) / 1e6;
    return TRUE;
}

/* QEMU loaded the stream: the helper's verdict decides. It delivered exactly the
 * header's length (--length) and found the header's checksum (--verify-checksum), or it
 * failed: "verify IMAGE: xxh3 checksum mismatch: ...", a short read. */
static gboolean
qg_restore_verify(QgRestore *r, GError **error)
{
    const GError *herr;
    guint64 bytes = 0;

    qg_mig_helper_wait(&r->job.w, -1, FALSE);
    /* A helper killed by us (its verdict CANCELLED) cannot happen here, but fails too. */
    herr = r->job.w.helper_error;
    if (herr) {
        /* a copy keeps the helper's errno for qg_mig_compress_diagnose() */
        g_propagate_prefixed_error(error, g_error_copy(herr),
                                   "restore failed (guest left paused): ");
        return FALSE;
    }
    /* What the helper checked, checked again from its result line. */
    ioh_wrap_get_progress(r->wrap, &bytes, NULL);
    if (bytes != r->info->stream_length) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "restore failed (guest left paused): the helper delivered %"
                    G_GUINT64_FORMAT " bytes of %s, the header says %" G_GUINT64_FORMAT,
                    bytes, r->job.path, r->info->stream_length);
        return FALSE;
    }
    if (!qg_mig_helper_checksum(r->wrap, &r->job.stats.checksum, error)) {
        g_prefix_error(error, "restore failed (guest left paused): ");
        return FALSE;
    }
    r->job.stats.stream_length = bytes;
    qg_mig_compress_stats(r->info, &r->job.stats);
    qg_mig_encrypt_stats(r->info, &r->job.stats);
    return TRUE;
}

/* Resumes a guest that was running when saved. */
static gboolean
qg_restore_resume(QgRestore *r, GError **error)
{
    if (r->info->running) {
        if (!qg_qmp_run(r->job.qmp, "cont", NULL, error)) {
            return FALSE;
        }
        r->job.stats.running = TRUE;
    }
    r->job.stats.seconds = (g_get_monotonic_time() - r->job.w.start) / 1e6;
    r->done = TRUE;
    return TRUE;
}

/* A multi-channel image: its regions checked (an encrypted or compressed one's, and an
 * export's, as their helpers deliver them: a wrong identity leaves QEMU untouched, as a
 * single stream's does), QEMU's multifd set as at the save,
 * `migrate-incoming unix:`, the main channel connected first, then the channels, each
 * fed by its own helper; then QEMU's verdict. QEMU is touched before any helper runs. */
static gboolean
qg_restore_mfd_load(QgRestore *r, GError **error)
{
    const char *comp = r->info->multifd_compression;

    if (!qg_mig_encrypt_restore_check(r->info, r->job.opts, r->job.path, error) ||
        (!r->uri && !qg_channels_check_image(r->fd, r->info, r->job.path, error)) ||
        !qg_probe_regions(r->info, r->uri, r->fd, r->job.path, r->job.qmp, r->job.opts,
                          error) ||
        !(r->mfd = qg_mfd_new(r->info->channels, error))) {
        return FALSE;
    }
    r->mfd->uri = r->uri;   /* an export: each helper connects to it */
    if (!qg_mfd_set_qemu(r->job.qmp, r->info->channels, g_strcmp0(comp, "none") ? comp : NULL,
                         error) ||
        !qg_mfd_start(r->job.qmp, FALSE, r->mfd->ch->path, error)) {
        return FALSE;
    }
    r->loading = TRUE;
    r->job.w.start = g_get_monotonic_time();
    if (!qg_mfd_restore_plumb(r->mfd, r->job.qmp, r->job.path, r->fd, r->info, r->job.opts,
                              &r->wrap, error)) {
        return FALSE;
    }
    r->job.stats.helper = TRUE;
    r->job.stats.channels = r->info->channels;
    r->job.w.wrap = r->wrap;
    r->job.w.total = r->info->stream_length;
    for (guint i = 0; i < r->info->channels; i++) {
        r->job.w.total += r->info->regions[i].length;
    }
    /* every helper is watched while QEMU loads: a channel ended early stalls QEMU */
    qg_mig_helper_start(&r->job.w);
    qg_mig_channels_start(&r->job.w, r->mfd->wraps, r->info->channels);
    if (!qg_mig_wait(&r->job.w, FALSE, error)) {
        return FALSE;
    }
    r->loaded = TRUE;
    r->job.stats.qemu_seconds = (g_get_monotonic_time() - r->job.w.start) / 1e6;
    return TRUE;
}

/* The helpers, QEMU's load: one stream through a pipe, or multifd's connections. */
static gboolean
qg_restore_run(QgRestore *r, GError **error)
{
    if (r->info->channels) {
        if (!qg_restore_mfd_load(r, error) || !qg_restore_verify(r, error) ||
            !qg_mfd_restore_verify(r->mfd, r->info, error)) {
            return FALSE;
        }
        qg_mfd_stats(r->info, &r->job.stats);
        return TRUE;
    }
    return qg_restore_plumb(r, error) && qg_restore_load(r, error) &&
           qg_restore_verify(r, error);
}

gboolean
qg_migrate_restore(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                   QgMigrateStats *ret_stats, GError **error)
{
    g_autoptr(QgRestore) r = g_new0(QgRestore, 1);

    path = qg_image_remote_job_path(path, &r->uri, &r->uri_name);
    qg_mig_job_init(&r->job, "restore", qmp, path, opts);
    r->fd = r->qemu_fd = -1;
    if (!qg_restore_check_qemu(r, error) || !qg_restore_open(r, error) ||
        !qg_mig_enable_events(qmp, error) || !qg_restore_run(r, error) ||
        !qg_restore_resume(r, error)) {
        qg_restore_abandon(r, error);
        qg_mig_compress_diagnose(path, r->info, r->loaded, error);
        return FALSE;
    }
    if (ret_stats) {
        *ret_stats = r->job.stats;
    }
    return TRUE;
}
