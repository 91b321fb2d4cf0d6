/* qg-migrate-private.h - the parts of qg_migrate_save() and qg_migrate_restore()
 * (prefix qg_mig_, QgSaveFile qg_save_file_; not installed, not for callers of qg-migrate.h)
 *
 *   qg-mig-qmp.c     the QMP commands of a migration, every reply checked for its shape
 *   qg-mig-helper.c  supervising the helper: its verdict, and whose side a failure is on
 *   qg-mig-watch.c   waiting for QEMU's MIGRATION event: progress, stall timeout, cancel
 *   qg-save-file.c   the new image (prefix qg_save_file_): "FILE.part-XXXXXX", then header, rename, fsync
 *   qg-save.c, qg-restore.c  the two jobs, step by step
 *   qg-compress.c    compressed images: the helper's options, the header's figures
 *   qg-save-channels.c  QEMU's multifd: a helper per connection, a region each (qg_mfd_)
 *   qg-encrypt.c     encrypted images: recipients, the identity, the header's record
 *   qg-mig-channels.c   a multi-channel restore watching every channel's helper
 */
#pragma once

#include <gio/gio.h>

#include "iohwrap.h"
#include "qg-channels.h"
#include "qg-image.h"
#include "qg-migrate.h"

G_BEGIN_DECLS

#define QG_FDNAME_SAVE "qg-save"
#define QG_FDNAME_RESTORE "qg-restore"
/* "Unlimited": QEMU takes bytes/s; 1 TiB/s is far above any pipe. */
#define QG_BANDWIDTH_UNLIMITED (G_GUINT64_CONSTANT(1) << 40)
/* While QEMU loads a stream, the restore also looks at the helper this often: QEMU 7.2 does not notice a stream that ends early (it spins on POLLHUP). */
#define QG_RESTORE_POLL_MS 50
/* How long the helper may take to exit once its end of the stream closed. */
#define QG_HELPER_EXIT_WAIT_MS 5000
/* How long QEMU may take to give its verdict once it stopped reading the stream. */
#define QG_QEMU_VERDICT_WAIT_MS 10000
/* How long a QEMU told to quit may take to close its QMP connection. */
#define QG_QUIT_WAIT_MS 5000
/* How long a progress line waits for QEMU's figures. */
#define QG_PROGRESS_QUERY_MS 2000

/* ---- qg-mig-qmp.c ---- */

/* QEMU's run state ("running", "paused", "inmigrate", ...) and whether the guest runs. */
char *qg_mig_query_status(QgQmp *qmp, gboolean *ret_running, GError **error);
gboolean qg_mig_enable_events(QgQmp *qmp, GError **error);
gboolean qg_mig_set_bandwidth(QgQmp *qmp, guint64 bw, GError **error);
/* QEMU's max-bandwidth, 0 when it has none to tell (or refuses to); FALSE when the
 * reply has a shape it should not have, or none came. */
gboolean qg_mig_get_bandwidth(QgQmp *qmp, guint64 *ret_bw, GError **error);
gboolean qg_mig_pass_fd(QgQmp *qmp, const char *name, int fd, GError **error);
void qg_mig_close_fd_name(QgQmp *qmp, const char *name);
/* `migrate` (save) or `migrate-incoming` (restore) with uri "fd:@name"; on failure the
 * fd passed under @name is closed in QEMU again. */
gboolean qg_mig_start(QgQmp *qmp, gboolean save, const char *name, GError **error);
/* query-migrate's return, or NULL; waits @timeout_ms (0: the usual reply timeout). */
JsonObject *qg_mig_query_migrate(QgQmp *qmp, guint timeout_ms, GError **error);
/* query-migrate's error-desc: why QEMU says the migration failed, or NULL. */
char *qg_mig_error_desc(QgQmp *qmp);
/* The machine type, RAM size and QEMU version for the header. A QEMU that refuses to
 * tell leaves them unknown; a reply of the wrong shape, or none, fails. */
gboolean qg_mig_machine_info(QgQmp *qmp, QgImageInfo *info, GError **error);
/* QMP `quit`, then waits (QG_QUIT_WAIT_MS at most) until QEMU closed the connection.
 * FALSE when QEMU did not answer within QG_QUIT_WAIT_MS (its main loop is stuck). */
gboolean qg_mig_quit(QgQmp *qmp);

/* ---- qg-mig-helper.c and qg-mig-watch.c: one job's watch ---- */

typedef struct QgChanWatch QgChanWatch;

typedef struct {
    const char *what;           /* "save" or "restore": the start of messages */
    const char *path;
    QgQmp *qmp;
    const QgMigrateOptions *opts;
    IohWrap *wrap;
    guint64 total;              /* restore: the stream length; save: 0 */
    gint64 start;
    /* restore: the helper's verdict, from ioh_wrap_finish_async() run in ctx */
    GMainContext *ctx;
    GCancellable *helper_cancel;
    gboolean helper_pending;    /* the finish is started and has not called back yet */
    GError *helper_error;       /* its result once !helper_pending: NULL is success */
    gint64 qemu_stopped_at;     /* when the helper's stream ended (QEMU stopped reading,
                                 * or the helper refused the checksum); 0: not */
    gboolean qemu_gone;         /* QEMU closed the QMP connection */
    char *qemu_desc;            /* QEMU's own words on a failed migration (error-desc) */
    /* the stall watch: the figures last seen to change, and when */
    guint64 last_written;
    gint64 last_progress;
    /* with channels: the channels' helpers (their bytes count as progress) */
    IohWrap **chan_wraps;
    guint n_chan_wraps;
    /* restore of a multi-channel image: their exits watched (qg-mig-channels.c) */
    QgChanWatch *chans;
    guint n_chans;
    /* save with channels: our socket, where a connection beyond the n + 1 fails the save
     * at once (another QEMU's, say: its main channel looks like ours) */
    QgChannels *listener;
} QgWatch;

/* Starts watching the helper: its exit is reported in a context of our own (pushed as
 * this thread's default until qg_mig_helper_end()), iterated only by the restore. */
void qg_mig_helper_start(QgWatch *w);
/* Runs what is ready in the helper's context, waiting at most @ms for something. */
void qg_mig_helper_iterate(QgWatch *w, guint ms);
/* Waits for the helper's verdict: at most @timeout_ms (-1: for as long as it takes);
 * past that, with @kill, kills the helper (its verdict is then CANCELLED) and waits for
 * that. Returns TRUE when the verdict is in. */
gboolean qg_mig_helper_wait(QgWatch *w, gint timeout_ms, gboolean kill);
/* Ends the watch (kills a helper still running), pops the context. Safe to repeat. */
void qg_mig_helper_end(QgWatch *w);
/* The helper's own failure, or NULL: not run yet, succeeded, or killed by us. */
const GError *qg_mig_helper_failure(QgWatch *w);
/* Restore: did the stream fail on our side of QEMU's pipe, that is did the helper fail
 * reading the image? Then sets @error with the helper's own message ("restore failed:
 * read /x.img: Input/output error") and returns TRUE. A helper that failed writing with
 * EPIPE (QEMU stopped reading: QEMU's side, the EPIPE a consequence) or that refused the
 * checksum (the stream went whole to QEMU, which may load it: the guest must then be
 * left paused, not QEMU quit) notes the time in qemu_stopped_at and returns FALSE, so
 * that QEMU's own verdict is awaited. */
gboolean qg_mig_stream_failed(QgWatch *w, GError **error);
/* The stream bytes the helper has moved so far. */
guint64 qg_mig_bytes(QgWatch *w);

/* What a save and a restore both carry: the QEMU, FILE, the options, the watch, the
 * figures. */
typedef struct {
    QgQmp *qmp;
    const char *path;
    const QgMigrateOptions *opts;
    QgWatch w;
    QgMigrateStats stats;
} QgJob;

/* Fills @job for the job @what ("save", "restore"). */
void qg_mig_job_init(QgJob *job, const char *what, QgQmp *qmp, const char *path,
                     const QgMigrateOptions *opts);

/* Frees what the watch holds (ends the helper's watch first). */
void qg_mig_watch_clear(QgWatch *w);

/* TRUE with G_IO_ERROR_CANCELLED "@what interrupted" when opts->cancellable is
 * cancelled. */
gboolean qg_mig_cancelled(QgWatch *w, GError **error);

/* Waits for the MIGRATION event that ends the job, for no longer than the stream keeps
 * moving (the stall timeout) and until opts->cancellable is cancelled. A restore also
 * watches the helper (qg_mig_stream_failed()): QEMU 7.2 gives no verdict
 * on a stream cut short, and when both failed the helper's message is the one that
 * says why. QEMU's own reason for a failure is kept in w->qemu_desc. */
gboolean qg_mig_wait(QgWatch *w, gboolean save, GError **error);

/* ---- qg-mig-channels.c: the channels' helpers of a multi-channel restore ---- */

/* After qg_mig_helper_start(): watches the exit of the @n channels' helpers @wraps
 * (borrowed) in the same context, cancelled with the main one's. */
void qg_mig_channels_start(QgWatch *w, IohWrap **wraps, guint n);
/* Is a channel's helper still running? */
gboolean qg_mig_channels_pending(const QgWatch *w);
/* Did a channel's helper fail (killed by us does not count)? Then @error: "restore
 * failed: channel I of FILE: <the helper's message>", and TRUE. */
gboolean qg_mig_channels_failed(QgWatch *w, GError **error);
/* The stream bytes channel @i's helper has moved so far. */
guint64 qg_mig_channels_bytes(const QgWatch *w, guint i);
/* Frees the channels' watch (their helpers must have exited). */
void qg_mig_channels_clear(QgWatch *w);

/* ---- qg-save-file.c: the image a save makes ---- */

typedef struct {
    char *path;       /* FILE as the user gave it: the name in messages */
    char *target;     /* the regular file it replaces or creates (symlinks followed) */
    char *tmp_path;   /* "@target.part-XXXXXX", removed by _free unless committed */
    int fd;           /* for the helper: -1 once handed over */
    int hdr_fd;       /* our own open file description, for the header */
} QgSaveFile;

/* Creates "@target.part-XXXXXX" beside @target (qg_file_save_target() of @path; 0600,
 * with the placeholder header) and checks that it takes @cache (O_DIRECT): all before
 * QEMU is touched. NULL with @error, and nothing left behind, on failure. */
QgSaveFile *qg_save_file_new(const char *path, const char *target, IohCacheMode cache,
                             GError **error);
/* Writes the header (@info), renames the file over its target and fsyncs the folder. */
gboolean qg_save_file_commit(QgSaveFile *file, const QgImageInfo *info, GError **error);
/* Closes the fds; removes the temporary file unless committed. Accepts NULL. */
void qg_save_file_free(QgSaveFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgSaveFile, qg_save_file_free)

/* ---- qg-migrate.c ---- */

/* libwrap's flags for @cache. */
IohWrapFlags qg_mig_wrap_flags(IohCacheMode cache);
/* The checksum libwrap's helper reported (16 hex digits) as a number; FALSE (@error)
 * when it reported none. */
gboolean qg_mig_helper_checksum(IohWrap *wrap, guint64 *ret_sum, GError **error);
/* A copy of @fd, the caller's end of libwrap's pipe (O_CLOEXEC), for QEMU: libwrap
 * closes the original at its finish. */
int qg_mig_dup(int fd, GError **error);

/* ---- qg-compress.c: compressed images ---- */

/* Save: records @opts->compress in @info (qg_image_set_compression()); nothing when
 * NULL. Before QEMU is touched. */
gboolean qg_mig_compress_check(QgImageInfo *info, const QgMigrateOptions *opts,
                               GError **error);
/* libwrap's options for the job: a save's checksum and compression (@info's), a
 * restore's verification and decompression (from the header in @info). */
IohWrapOptions *qg_mig_wrap_options(const QgMigrateOptions *opts, const QgImageInfo *info,
                                    gboolean save, const char *path, GError **error);
/* The helper's CPUs for this image: @opts->helper_cpus unless auto chose them and the
 * helper compresses or encrypts (qg_placement_applies()); NULL: anywhere. */
const char *qg_mig_helper_cpus(const QgMigrateOptions *opts, const QgImageInfo *info);
/* The compression figures of @info into @stats. */
void qg_mig_compress_stats(const QgImageInfo *info, QgMigrateStats *stats);
/* A failed restore of a compressed image (*@error), after QEMU loaded the stream when
 * @loaded: when the failure is one the image can cause, decompresses it to its end; a
 * corrupt frame QEMU refused first (IOH_ERROR EIO) puts the helper's line first
 * ("restore failed: decompress FILE: corrupt zstd image: ...; QEMU could not load ..."),
 * frames holding more than the header's stream length replace the error with
 * "restore failed ...: FILE: compressed data continues past the stream's length N ..."
 * (QG_IMAGE_ERROR_CORRUPT). Nothing otherwise. */
void qg_mig_compress_diagnose(const char *path, const QgImageInfo *info, gboolean loaded,
                              GError **error);

/* ---- qg-save-channels.c: QEMU's multifd (docs/channels.md) ---- */

typedef struct {
    QgChannels *ch;     /* the socket and its n + 1 connections */
    IohWrap **wraps;    /* the n channels' helpers (the main channel's is the job's) */
    guint64 region;     /* save: the size of each region */
    const char *uri;    /* an NBD export the regions are in (the job's), or NULL: a file */
} QgMfd;

QgMfd *qg_mfd_new(guint n, GError **error);
/* Kills the channels' helpers still running, closes the connections, removes the
 * socket. Accepts NULL. */
void qg_mfd_free(QgMfd *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgMfd, qg_mfd_free)
gboolean qg_mfd_set_capability(QgQmp *qmp, gboolean on, GError **error);
/* The capability multifd, multifd-channels @n and multifd-compression (NULL: none). */
gboolean qg_mfd_set_qemu(QgQmp *qmp, guint n, const char *compression, GError **error);
/* `migrate` (@save) or `migrate-incoming` with uri "unix:@socket_path". */
gboolean qg_mfd_start(QgQmp *qmp, gboolean save, const char *socket_path, GError **error);
/* A region for a stream of at most @bound stored bytes (rounded up to 1 MiB). */
guint64 qg_mfd_region_size(guint64 bound);
/* Save, after `migrate`: accepts the n + 1 connections and starts a helper on each, into
 * its region of the .part @file_fd (each helper its own open of that very file, never of
 * its name; -1 with m->uri) (@name in messages); the main channel's wrap in *@ret_main. */
gboolean qg_mfd_save_plumb(QgMfd *m, int file_fd, const char *name,
                           QgImageInfo *info, const QgMigrateOptions *opts, guint64 region,
                           IohWrap **ret_main, GError **error);
/* Save, QEMU done: no extra connection, the channels' helpers' verdicts, the index.
 * @name: the image in messages. */
gboolean qg_mfd_save_finish(QgMfd *m, const char *name, QgImageInfo *info,
                            const QgMigrateOptions *opts, GError **error);
/* Restore, after `migrate-incoming`: connects the main channel, then the channels, each
 * fed by its own helper from its region of @path (its own open of @fd, the image whose
 * header was checked; -1 with m->uri). */
gboolean qg_mfd_restore_plumb(QgMfd *m, QgQmp *qmp, const char *path, int fd,
                              const QgImageInfo *info, const QgMigrateOptions *opts,
                              IohWrap **ret_main, GError **error);
/* The job's figures: the main channel's (in @stats already) and each channel's of @info
 * per connection, all of them in the totals. */
void qg_mfd_stats(const QgImageInfo *info, QgMigrateStats *stats);
/* Restore, QEMU done: each channel's helper delivered its region's length and checksum. */
gboolean qg_mfd_restore_verify(QgMfd *m, const QgImageInfo *info, GError **error);
/* Restore: the helper's options for connection @slot (0 the main channel, i + 1 channel
 * i): its checksum verified, decrypted and decompressed when stored so. */
IohWrapOptions *qg_mfd_restore_options(const QgImageInfo *info, const QgMigrateOptions *opts,
                                       guint slot, const char *path, GError **error);
/* Restore: where connection @slot's stream is stored (offset, stored length). */
IohWrapParams qg_mfd_restore_params(const QgImageInfo *info, guint slot);
/* A new open (its own file description) of the file @file_fd is, through /proc/self/fd,
 * never by name; -1 with @error (naming @name). */
int qg_mfd_reopen(int file_fd, gboolean save, const char *name, GError **error);

/* ---- qg-restore-probe.c: a multi-channel image's regions before QEMU is asked ---- */

/* Before QEMU is asked anything: each region that cannot be checked where it is stored
 * (encrypted, compressed, or on a server: @uri) through a helper of its own into a pipe,
 * as a single stream's restore starts (qg_restore_wait_start()), until its first bytes:
 * the main stream's helper opened region 0's age header with the identity; each
 * channel's first 64 bytes are its init packet with the index's UUID. @fd: the image
 * (-1 with @uri). One line on a failure; QEMU untouched. */
gboolean qg_probe_regions(const QgImageInfo *info, const char *uri, int fd, const char *path,
                          QgQmp *qmp, const QgMigrateOptions *opts, GError **error);

/* ---- qg-restore.c ---- */

/* Before QEMU gets the helper's pipe @fd: waits until the helper of @w delivered its first
 * bytes, or failed (then @error says that QEMU is untouched). */
gboolean qg_restore_wait_start(QgWatch *w, int fd, GError **error);
/* ---- qg-encrypt.c: encrypted images ---- */

/* Save: records in @info that the image is encrypted (age) when @opts names recipients.
 * Before QEMU is touched. */
gboolean qg_mig_encrypt_check(QgImageInfo *info, const QgMigrateOptions *opts,
                              GError **error);
/* Adds to @o a save's recipients (@opts), or a restore's identity when the header in
 * @info says the image (@path) is encrypted: without opts->identity, IOH_ERROR EINVAL
 * "encrypted image PATH: restore it with --identity=FILE ...". */
gboolean qg_mig_encrypt_options(IohWrapOptions *o, const QgMigrateOptions *opts,
                                const QgImageInfo *info, gboolean save, const char *path,
                                GError **error);
/* Restore: FALSE (IOH_ERROR EINVAL naming @path) for an encrypted image without
 * opts->identity, or a plain one with it: before QEMU or a helper is touched. */
gboolean qg_mig_encrypt_restore_check(const QgImageInfo *info, const QgMigrateOptions *opts,
                                      const char *path, GError **error);
/* After a successful save: what the helper says it stored. An image it encrypted without
 * recipients from us (the host's config named some) is recorded encrypted; one we asked
 * encrypted that it did not encrypt is an error (IOH_ERROR EIO naming @path). */
gboolean qg_mig_encrypt_result(QgImageInfo *info, IohWrap *wrap, const char *path,
                               GError **error);
/* Whether @info's image is encrypted, into @stats. */
void qg_mig_encrypt_stats(const QgImageInfo *info, QgMigrateStats *stats);

G_END_DECLS
