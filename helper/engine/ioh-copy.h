/* ioh-copy.h - the copy engine: move a stream between a pipe and a file (docs/engine.md)
 *
 * The storage side (a regular file or block device) decides the cache mode; the pipe
 * side is raised to the pipe size. Success means every byte was delivered and, when
 * the destination is storage, made durable with fdatasync. The caller still closes the
 * ends with ioh_end_close() and must treat a failed close as a failed copy.
 */
#pragma once

#include <gio/gio.h>

#include "ioh-age-keys.h"
#include "ioh-budget.h"
#include "ioh-mem-account.h"
#include "ioh-cache-mode.h"
#include "ioh-file.h"
#include "ioh-stats.h"

G_BEGIN_DECLS

typedef void (*IohProgressFunc)(const IohStats *stats, gpointer user_data);

typedef struct {
    IohCacheMode mode;          /* of the storage side (ioh-cache-mode.h) */
    gsize buffer_size;          /* bytes per read/write, rounded up to the alignment */
    guint ring;                 /* buffers in flight */
    guint pipe_size;            /* size for pipe ends; 0 leaves them alone */
    gboolean has_offset;
    guint64 offset;             /* where the stream starts in the storage side */
    gboolean has_length;
    guint64 length;             /* copy exactly this many bytes; fewer is an error */
    gsize fadvise_window;       /* bytes written back and dropped at a time (fadvise) */
    gint64 progress_interval_us;
    IohProgressFunc progress;   /* called at most once per interval, and once at the end */
    gpointer progress_data;
    const char *const *filters; /* NULL-terminated names of the filters the stream passes
                                 * through, in order (ioh-filter.h); NULL: none */
    GCancellable *cancellable;  /* cancelled from any thread, stops the copy with
                                 * G_IO_ERROR_CANCELLED; NULL: none. A read waiting on a silent
                                 * stream wakes; one blocking write() into a full pipe
                                 * still waits for its reader (see ioh-fd.h) */
    gboolean no_truncate;       /* save: leave the file's bytes past the stream (another
                                 * channel's region of the image, docs/channels.md) */
    guint64 region;             /* save into an NBD export or RBD image: bytes the stored
                                 * stream may take from offset (0: no bound; ioh-region.h) */
    gboolean has_expected_checksum;
    guint64 expected_checksum;  /* a checksum filter fails the copy when the stream's
                                 * checksum differs (EBADMSG) */
    int compress_level;         /* the zstd filter's level (ioh-limits.h) */
    gboolean compress_auto;     /* ... or chosen per window (--compress=auto,
                                 * ioh-zstd-adapt.h): compress_level is then ignored */
    guint threads;              /* the zstd and age filters' worker threads; 0: the online
                                 * CPUs */
    const IohAgeKeys *age;      /* the age filter's recipients, the unage filter's
                                 * identities (ioh-age-keys.h); NULL: none */
    guint nbd_connections;      /* NBD end: connections (0: several with multi-conn, else 1) */
    guint nbd_requests;         /* NBD end: commands in flight per connection (0: default) */
    gsize nbd_request_size;     /* NBD end: bytes per command (0: default, ioh-nbd.h) */
    guint nbd_stall_timeout;    /* NBD end: seconds without a byte from the server, with
                                 * commands in flight, that fail the copy (0: none); RBD
                                 * end: the bound of every cluster operation (0: the
                                 * default, IOH_RBD_DEFAULT_TIMEOUT_S) */
    gboolean rbd_grow;          /* RBD end: an existing image smaller than the stream is
                                 * grown (else refused) */
    IohBudget *budget;          /* the host's budget for what the layers hold beyond their
                                 * floors (ioh-budget.h, ioh-mem-account.h); NULL: none */
    IohMemAccount *memory;      /* set by ioh_copy() on its own copy of the options, for the
                                 * layers: the account of this copy's memory, drawing on
                                 * budget (ioh-mem-account.h); the caller leaves it NULL */
} IohCopyOptions;

#define IOH_COPY_DEFAULT_BUFFER (1024 * 1024)
#define IOH_COPY_DEFAULT_RING 8
#define IOH_COPY_DEFAULT_WINDOW (8 * 1024 * 1024)

/* Fills @opts with the defaults: buffered, 1 MiB buffers, 1 MiB pipes, 1 s progress. */
void ioh_copy_options_init(IohCopyOptions *opts);

/* Copies @src to @dst as @opts say. @stats is filled as the copy goes (and on failure,
 * with what was done). */
gboolean ioh_copy(IohEnd *src, IohEnd *dst, const IohCopyOptions *opts, IohStats *stats,
                  GError **error);

G_END_DECLS
