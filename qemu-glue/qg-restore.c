/* qg-restore.c - qg_migrate_restore(): the image -> helper -> relay (XXH3) -> pipe -> QEMU
 *
 * Steps: check QEMU and the image, start the helper and the relay, wait for the first
 * bytes, hand QEMU its pipe, wait for QEMU while watching the helper, verify length and
 * checksum, resume. Everything a step set up is undone by qg_restore_free() (a QEMU left
 * with a half-loaded guest is told to quit; a loaded guest that proved bad is stopped).
 */
#include "qg-migrate-private.h"

#include <fcntl.h>
#include <unistd.h>

#include "ioh-fd.h"
#include "qg-file.h"

typedef struct {
    QgJob job;              /* qmp, path, opts, the watch, the figures */
    QgImageInfo *info;
    int fd;                 /* the image; then the wrap's end of its pipe (the wrap's) */
    int qemu_fd;            /* the read end of QEMU's pipe until QEMU has its own */
    IohWrap *wrap;
    QgRelay *relay;
    gboolean loading;       /* migrate-incoming was started */
    gboolean loaded;        /* QEMU said "completed" */
    gboolean done;
} QgRestore;

static void
qg_restore_free(QgRestore *r)
{
    if (!r) {
        return;
    }
    if (r->loading && !r->loaded && !r->done && !r->job.w.qemu_gone) {
        /* QEMU holds a half-loaded guest that it cannot run, nor take another stream
         * into (7.2 accepts one incoming migration per process), and after a stream cut
         * short it would spin on its pipe forever: quit it (before its pipe closes, so
         * that it ends by our word, not by its reaction to a cut stream), and the
         * failure leaves no QEMU behind that looks usable. */
        qg_mig_quit(r->job.qmp);
    }
    ioh_fd_clear(&r->qemu_fd);
    g_clear_pointer(&r->relay, qg_relay_free);
    qg_mig_watch_clear(&r->job.w);   /* kills a helper still running, waits for its exit */
    g_clear_pointer(&r->wrap, ioh_wrap_free);
    ioh_fd_clear(&r->fd);
    if (r->loaded && !r->done) {
        /* A QEMU started without -S runs the guest as soon as the stream is loaded,
         * before we could check it: stop a guest whose image proved bad. */
        qg_qmp_run(r->job.qmp, "stop", NULL, NULL);
    }
    g_clear_pointer(&r->info, qg_image_info_free);
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
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STATE,
                    "cannot restore into this QEMU: it is in state '%s', not waiting for "
                    "an incoming migration (start it with -incoming defer)", status);
        return FALSE;
    }
    return TRUE;
}

/* Opens the image and checks it: a regular file, a sound header, the whole stream
 * there, O_DIRECT taken when the cache mode asks for it. */
static gboolean
qg_restore_open(QgRestore *r, GError **error)
{
    g_autoptr(GError) local = NULL;

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
        g_set_error(error, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_IO,
                    "cannot restore from %s bypassing the cache with O_DIRECT: %s", r->job.path,
                    local->message);
        return FALSE;
    }
    return TRUE;
}

/* The helper on the image, the relay from its pipe into QEMU's, the helper's watch. */
static gboolean
qg_restore_plumb(QgRestore *r, GError **error)
{
    IohWrapParams params = { .offset = r->info->stream_offset,
                             .length = r->info->stream_length,
                             .progress_interval_ms = 250 };
    int p[2], in_fd;

    r->wrap = ioh_wrap_new(&r->fd, r->job.path, qg_mig_wrap_flags(r->job.opts->cache), &params,
                           error);
    if (!r->wrap) {
        return FALSE;
    }
    r->job.stats.helper = ioh_wrap_is_spawned(r->wrap);   /* always: POLLABLE */
    in_fd = qg_mig_dup(r->fd, error);
    r->fd = -1;   /* the wrap's end of its pipe: the wrap closes it */
    if (in_fd < 0) {
        return FALSE;
    }
    if (!qg_mig_make_pipe(p, error)) {
        close(in_fd);
        return FALSE;
    }
    r->qemu_fd = p[0];
    r->relay = qg_relay_start(in_fd, p[1], "restore", error);
    if (!r->relay) {
        return FALSE;
    }
    r->job.w.relay = r->relay;
    r->job.w.wrap = r->wrap;
    r->job.w.total = r->info->stream_length;
    r->job.w.start = g_get_monotonic_time();
    /* From now on the helper's exit is watched as well as QEMU. */
    qg_mig_helper_start(&r->job.w);
    return TRUE;
}

/* Before QEMU gets the pipe: waits until the helper has delivered the stream's first
 * bytes (it opened the image, set its cache mode and read), the whole stream, or
 * failed. A failure says that QEMU was not touched: it still waits for a stream. */
static gboolean
qg_restore_wait_start(QgWatch *w, GError **error)
{
    g_autoptr(GError) local = NULL;
    gint64 start = g_get_monotonic_time();

    while (qg_relay_get_bytes(w->relay) == 0 && w->total > 0) {
        if (qg_mig_stream_failed(w, QG_HELPER_EXIT_WAIT_MS, &local) ||
            qg_mig_cancelled(w, &local)) {
            break;
        }
        if (w->opts->stall_timeout_s &&
            g_get_monotonic_time() - start > (gint64)w->opts->stall_timeout_s * G_USEC_PER_SEC) {
            g_set_error(&local, QG_MIGRATE_ERROR, QG_MIGRATE_ERROR_STALLED,
                        "restore failed: the helper delivered no byte of %s in %u s",
                        w->path, w->opts->stall_timeout_s);
            break;
        }
        qg_mig_helper_iterate(w, QG_RESTORE_POLL_MS);
    }
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
    if (!qg_restore_wait_start(&r->job.w, error) ||
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

/* QEMU loaded the stream: the relay and the helper must have ended well too. */
static gboolean
qg_restore_check_stream(QgRestore *r, guint64 *ret_bytes, guint64 *ret_sum, GError **error)
{
    g_autoptr(GError) rerr = NULL;
    gboolean relayed = qg_relay_wait(r->relay, ret_bytes, ret_sum, &rerr);
    const GError *herr;

    qg_mig_helper_wait(&r->job.w, -1, FALSE);
    /* The helper's message says more than the relay's; a helper killed by us (its
     * verdict CANCELLED) cannot happen here, but would fail too. */
    herr = qg_mig_helper_failure(&r->job.w);
    if (!herr && relayed) {
        herr = r->job.w.helper_error;
    }
    if (herr) {
        g_set_error(error, herr->domain, herr->code,
                    "restore failed (guest left paused): %s", herr->message);
        return FALSE;
    }
    if (!relayed) {
        g_propagate_prefixed_error(error, g_steal_pointer(&rerr),
                                   "restore failed (guest left paused): ");
        return FALSE;
    }
    return TRUE;
}

/* Length and checksum against the header. */
static gboolean
qg_restore_verify(QgRestore *r, GError **error)
{
    guint64 bytes = 0, sum = 0;

    if (!qg_restore_check_stream(r, &bytes, &sum, error)) {
        return FALSE;
    }
    if (bytes != r->info->stream_length) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED,
                    "image truncated %s: %" G_GUINT64_FORMAT " bytes of stream read, the "
                    "header says %" G_GUINT64_FORMAT " (guest left paused)", r->job.path, bytes,
                    r->info->stream_length);
        return FALSE;
    }
    if (sum != r->info->checksum) {
        g_autofree char *got = qg_image_checksum_to_string(sum);
        g_autofree char *want = qg_image_checksum_to_string(r->info->checksum);
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CHECKSUM,
                    "checksum mismatch in %s: the stream has %s, the header says %s "
                    "(guest left paused)", r->job.path, got, want);
        return FALSE;
    }
    r->job.stats.stream_length = bytes;
    r->job.stats.checksum = sum;
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

gboolean
qg_migrate_restore(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                   QgMigrateStats *ret_stats, GError **error)
{
    g_autoptr(QgRestore) r = g_new0(QgRestore, 1);

    qg_mig_job_init(&r->job, "restore", qmp, path, opts);
    r->fd = r->qemu_fd = -1;
    if (!qg_restore_check_qemu(r, error) || !qg_restore_open(r, error) ||
        !qg_mig_enable_events(qmp, error) || !qg_restore_plumb(r, error) ||
        !qg_restore_load(r, error) || !qg_restore_verify(r, error) ||
        !qg_restore_resume(r, error)) {
        return FALSE;
    }
    if (ret_stats) {
        *ret_stats = r->job.stats;
    }
    return TRUE;
}
