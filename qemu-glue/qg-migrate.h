/* qg-migrate.h - save a QEMU to an image file and restore it, through the helper
 * (prefix qg_migrate_)
 *
 * Save:    QEMU --fd:--> libwrap's pipe --> iohelper (--checksum=xxh3) --> file
 * Restore: file --> iohelper (--length, --verify-checksum) --> libwrap's pipe --fd:--> QEMU
 *
 * One hop: QEMU always gets the helper's pipe, never the file; this process moves no
 * byte of the stream. The image format is in qg-image.h.
 */
#pragma once

#include <gio/gio.h>

#include "ioh-cache-mode.h"
#include "qg-qmp.h"

G_BEGIN_DECLS

/* Errors: a job's own verdicts are IOH_ERROR with an errno code, like the image's files
 * (create, open, O_DIRECT refused, rename, sync: with operation and path as fields):
 * EINVAL QEMU is not in a state that allows the job ("cannot save this QEMU: it is in
 * state ..."), EIO QEMU reported the migration failed or gave no verdict ("save failed:
 * QEMU says: ..."), ETIMEDOUT no byte of the stream moved for stall_timeout_s (the
 * helper's own stall timeout on an NBD end is ETIMEDOUT too). The helper's failures are
 * libwrap's IOH_WRAP_ERROR (the same fields, from its final status line; a checksum
 * mismatch is its "verify" operation); the header is QG_IMAGE_ERROR, the QMP connection
 * QG_QMP_ERROR. Every cancellation, ours (opts->cancellable: "save interrupted") or
 * QEMU's ("save cancelled in QEMU"), is the one "cancelled", G_IO_ERROR_CANCELLED
 * (ioh_error_is_cancelled()). */

/* A save with channels: the main channel and at most 16 multifd channels. */
#define QG_MIGRATE_CONNECTIONS_MAX 17

/* The stall timeout qemu-iohelper uses unless told otherwise. */
#define QG_MIGRATE_STALL_TIMEOUT_S 120

typedef struct {
    guint64 bytes;      /* stream bytes the helper moved so far (as written) */
    guint64 written;    /* bytes the helper wrote (save) or delivered (restore) */
    guint64 synced;     /* save: bytes the helper knows are durable */
    guint64 total;      /* restore: the stream length; save: 0 */
    double fraction;    /* 0..1, best estimate (save: from QEMU's RAM left to send) */
    double seconds;
    /* with channels: the bytes each connection's helper moved ([0] the main channel,
     * [1 + i] channel i); 0 connections: one stream */
    guint connections;
    guint64 connection_bytes[QG_MIGRATE_CONNECTIONS_MAX];
} QgProgress;

typedef void (*QgProgressFunc)(const char *what, const QgProgress *progress,
                               gpointer user_data);

typedef struct {
    IohCacheMode cache;         /* IOH_CACHE_BUFFERED, _DIRECT (O_DIRECT) or _FADVISE */
    gboolean live;              /* save: do not pause the guest first */
    guint64 max_bandwidth;      /* save: bytes/s QEMU may send; 0: unlimited */
    guint progress_interval_ms; /* 0: 500 */
    QgProgressFunc progress;    /* nullable; called from the calling thread */
    gpointer progress_data;
    /* nullable: once cancelled (from any thread), the job ends cleanly with
     * G_IO_ERROR_CANCELLED "save interrupted" / "restore interrupted", within
     * progress_interval_ms (a restore: 50 ms), undone as on any other failure. */
    GCancellable *cancellable;
    /* Fail the job when no byte of the stream moved for this long while QEMU migrates
     * (QEMU sends or takes nothing, or the helper is stuck); 0: wait for ever. A save
     * is then cancelled in QEMU, a restore's QEMU quit, as on any other failure. The
     * helper's final fdatasync after QEMU completed is not bounded by it. */
    guint stall_timeout_s;
    /* save: "zstd" or "zstd:LEVEL" (LEVEL -7 to 19, default 1): the helper stores the
     * stream as zstd frames, the header (version 2) records it; NULL: raw. A restore
     * reads the compression from the header and needs nothing here. */
    const char *compress;
    guint threads;              /* save with compress: zstd's workers; 0: the CPUs */
    /* save: QEMU's multifd with this many channels (1 to QG_IMAGE_CHANNELS_MAX), each
     * through its own helper into its own region of the image (docs/channels.md); 0: one
     * stream. A restore reads it from the header. */
    guint channels;
    const char *qemu_compress;  /* save with channels: multifd-compression ("zstd", "zlib") */
    /* save: age recipients ("age1...") and recipients files (NULL-terminated; NULL or
     * empty: none): the helper encrypts what it stores to them, the header (version 3)
     * records it. A restore reads that from the header. */
    const char *const *recipients;
    const char *const *recipients_files;
    /* restore of an encrypted image: the age identity file (mode 0600 or stricter),
     * handed to the helper on an fd; an encrypted image without it is refused before
     * QEMU gets a byte. Unused for a plain image. */
    const char *identity;
    /* the helpers' CPUs (their --cpus, "0-3,6"; qg-placement.h chooses it from QEMU's
     * affinity); NULL: wherever this process may run */
    const char *helper_cpus;
    /* helper_cpus are QEMU's (qemu-iohelper's --helper-cpus=auto): not for a helper that
     * compresses or encrypts (qg_placement_applies()) */
    gboolean helper_cpus_auto;
} QgMigrateOptions;

typedef struct {
    guint64 stream_length;
    guint64 checksum;
    double seconds;         /* from the migrate command to a durable file / a verified load */
    double qemu_seconds;    /* until QEMU said "completed" */
    gint64 downtime_ms;     /* save: QEMU's reported downtime; -1 unknown */
    gboolean running;       /* save: guest was running; restore: guest was resumed */
    gboolean helper;        /* an iohelper process served the file: always TRUE (it
                             * computes the checksum; docs/qemu-glue.md) */
    gboolean compressed;    /* the image holds zstd frames */
    int compress_level;     /* the level it was saved with (auto: the highest) */
    gboolean compress_auto; /* saved with --compress=auto */
    guint64 stored_length;  /* bytes after the header (= stream_length when raw) */
    guint channels;         /* multifd channels besides the main one; 0: one stream */
    gboolean encrypted;     /* the image is age-encrypted */
    /* with channels: each connection's stream and stored bytes, [0] the main channel,
     * [1 + i] channel i (channels + 1 of them) */
    guint64 connection_bytes[QG_MIGRATE_CONNECTIONS_MAX];
    guint64 connection_stored[QG_MIGRATE_CONNECTIONS_MAX];
} QgMigrateStats;

/**
 * qg_migrate_save:
 * Pauses the guest (unless @opts->live) and migrates it into a new file
 * "@path.part-XXXXXX" (0600) beside @path; once the helper made it durable, writes the
 * header, then renames it over @path (and fsyncs the folder). On failure the partial
 * file is removed and an old @path is left as it was; a guest that was paused by us is
 * resumed. QEMU's bandwidth setting is put back in both cases.
 * On success the source QEMU is left paused ("postmigrate"): QEMU 7.2 refuses a second
 * save from it.
 */
gboolean qg_migrate_save(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                         QgMigrateStats *ret_stats, GError **error);

/**
 * qg_migrate_restore:
 * @qmp: a QEMU started with `-incoming defer` (and the same devices as the source).
 * Checks the header, has the helper feed the stream and verify length and checksum
 * (--length, --verify-checksum), awaits its verdict after QEMU's, and resumes the guest
 * if it was running when saved. On a checksum mismatch the guest stays paused
 * (start the destination with -S: without it QEMU runs the guest as soon as the stream
 * is loaded, before the checksum is known; a guest that then proves bad is stopped).
 * A QEMU that fails to load the stream exits; the error then says so.
 * While QEMU loads, the helper is watched too (QEMU 7.2 gives no verdict on a stream
 * cut short: it spins on its pipe): a helper that fails reading ends the wait at once
 * with its own message ("restore failed: read /x.img: Input/output error"), also when
 * QEMU failed as well; a checksum mismatch (the whole stream went to QEMU) waits for
 * QEMU's verdict and leaves the guest paused.
 * Any failure after `migrate-incoming` and before QEMU loaded the stream (helper,
 * QEMU, @opts->cancellable) leaves QEMU with a half-loaded guest it can neither run nor
 * load again: it is then told to `quit` (QMP), and waited for up to 5 s. The guest is
 * resumed only after a load that QEMU completed and that passed every check.
 */
gboolean qg_migrate_restore(QgQmp *qmp, const char *path, const QgMigrateOptions *opts,
                            QgMigrateStats *ret_stats, GError **error);

G_END_DECLS
