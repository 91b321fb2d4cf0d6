/* ioh-layer.h - the layers of a copy, inside the engine (docs/engine.md)
 *
 * A copy is a source (reads the stream from its end), zero or more filters (see each
 * byte, ioh-filter.h), and a sink (writes the stream to its end), run by a strategy
 * (which threads read and write, and through which buffers), with the cache policy
 * (write-behind, drop-behind) after each chunk the sink took. ioh-copy.c chooses them and
 * runs the copy; each layer is one file with one job, registered in ioh-layer-list.h.
 */
#pragma once

#include <gio/gio.h>

#include "ioh-copy.h"
#include "ioh-filter.h"

G_BEGIN_DECLS

typedef struct _IohCopy IohCopy;

/* A pipe source read by a ring's reader thread waits for the end of each write into the
 * pipe (ioh-pipe-edge.h). */
typedef struct _IohPipeEdge IohPipeEdge;

/* One thread's way of reading the source: the source's own fd, or (parallel O_DIRECT
 * readers) an fd of its own on the same file. */
typedef struct {
    IohCopy *c;
    int fd;
    gboolean own;            /* fd is ours (closed after the copy) */
    gboolean direct;         /* O_DIRECT is set on fd */
} IohReader;

typedef struct {
    const char *name;
    gboolean (*accepts)(const IohEnd *end);
    /* Before any byte moves: position, cache mode, pipe size. */
    gboolean (*prepare)(IohCopy *c, GError **error);
    /* Reads until @len bytes or the end of the stream, at stream offset @pos (< 0: where
     * the fd is). Returns the bytes read, or -1 with @error set. */
    gssize (*read)(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error);
    /* The stream has been read whole. */
    void (*finish)(IohCopy *c);
    /* Optional: the next bytes of the stream (at most *@len, which it lowers; 0 at the
     * end) where the source holds them, valid until its next call: the inline strategy
     * delivers them from there, no copy (the NBD source's request buffers). NULL with
     * @error set on failure. */
    const char *(*peek)(IohCopy *c, gsize *len, GError **error);
} IohSourceClass;

typedef struct {
    const char *name;
    gboolean (*accepts)(const IohEnd *end);
    gboolean (*prepare)(IohCopy *c, GError **error);
    /* Writes all @len bytes. */
    gboolean (*write)(IohCopy *c, const char *buf, gsize len, GError **error);
    /* Every byte was written: make them durable (storage). */
    gboolean (*finish)(IohCopy *c, GError **error);
    /* Optional: where the next write's bytes should be read to (at most *@len bytes, which
     * it may lower), so that write() finds them in place and does not copy them. NULL
     * with @error set on failure. The inline strategy uses it (the NBD sink has one). */
    char *(*buffer)(IohCopy *c, gsize *len, GError **error);
    /* Optional: writes all the bytes of @cnt pieces, in order, in as few calls as it can
     * (a transforming filter's pieces without a copy into one buffer: ioh_filter_outv). */
    gboolean (*writev)(IohCopy *c, const struct iovec *iov, int cnt, GError **error);
} IohSinkClass;

/* How the bytes move: one of ioh-strategy-*.c. */
typedef struct {
    const char *name;
    gboolean (*run)(IohCopy *c, GError **error);
} IohStrategy;

extern const IohStrategy ioh_strategy_inline;    /* read then write, one thread */
extern const IohStrategy ioh_strategy_ring;      /* a reader thread and a ring */
extern const IohStrategy ioh_strategy_parallel;  /* parallel O_DIRECT readers, a ring */
extern const IohStrategy ioh_strategy_uring;     /* io_uring, one thread: an O_DIRECT
                                                  * save from a pipe */
extern const IohStrategy ioh_strategy_splice;    /* splice(2) between a pipe and the page
                                                  * cache, one thread */

/* Write-behind and drop-behind: what the cache policy has done so far. */
typedef struct {
    guint64 dropped;         /* fadvise: stream bytes already written back and dropped */
    guint64 started;         /* stream bytes whose write-back was started */
    gboolean no_writeback;   /* sync_file_range does not apply to the destination */
    guint64 held;            /* restore: stream bytes behind the head a spliced pipe may
                              * still hold (its size), not yet droppable */
    guint64 window;          /* fadvise save: the drop-behind window now (0: not yet) */
    gint64 next_look_us;     /* fadvise save: when to count the concurrent saves again */
} IohCachePolicy;

struct _IohCopy {
    IohEnd *src;
    IohEnd *dst;
    const IohCopyOptions *opts;
    IohStats *stats;
    const IohSourceClass *source;
    const IohSinkClass *sink;
    IohFilterChain *filters;     /* run by the thread that writes the sink */
    const IohStrategy *strategy;
    char *mem;                   /* nslots buffers of slot bytes, aligned to align */
    gsize slot;
    guint nslots;
    gsize align;
    GCancellable *cancel;        /* a threaded strategy's stop (NULL: one thread) */
    gboolean poll_src;           /* the source is a readable stream: wait on it with cancel */
    IohPipeEdge *edge;           /* a pipe source read by a ring reader, or NULL */
    guint64 reads;               /* read calls so far (atomic: parallel readers) */
    guint64 src_start;           /* file offset where the stream starts (storage source) */
    guint64 dst_start;           /* ... and in a storage destination */
    guint64 in;                  /* bytes of the source delivered (before the filters) */
    guint64 out;                 /* bytes the sink took (after them): they differ when a
                                  * filter transforms the stream */
    IohCachePolicy cache;
    gint64 last_progress_us;
};

/* Parallel O_DIRECT readers at most. */
#define IOH_MAX_READERS 4

#define IOH_ALIGN_DOWN(x, a) ((x) / (a) * (a))
#define IOH_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* Stream ends (ioh-stream.c). accepts(): every end (the stream layers come last in
 * ioh-layer-list.h); prepare(): a pipe @end is raised to the pipe size. */
gboolean ioh_stream_accepts_any(const IohEnd *end);
void ioh_stream_raise_pipe(IohCopy *c, IohEnd *end);

/* The first registered source (sink) that accepts @end. */
const IohSourceClass *ioh_source_for(const IohEnd *end);
const IohSinkClass *ioh_sink_for(const IohEnd *end);

/* A source's read() for a source that has peek() (the NBD and RBD sources, whose bytes
 * sit in their request buffers): copies what peek() hands out until @len bytes or the end
 * of the stream. */
gssize ioh_source_read_by_peek(IohReader *rd, char *buf, gsize len, gint64 pos,
                               GError **error);

/* One read call done (any thread). */
void ioh_copy_count_read(IohCopy *c);

/* @len bytes moved from the source to the sink by the strategy itself (splice), past no
 * filter: counts them and runs the cache policy, as ioh_copy_deliver() does. */
gboolean ioh_copy_moved(IohCopy *c, gsize len, gboolean write_behind, GError **error);

/* Passes @len bytes written... first through the filters, then to the sink; then counts
 * them and runs the cache policy (@write_behind: start write-back early, see
 * ioh-cache-policy.c). The writing thread's one way to deliver a chunk. */
gboolean ioh_copy_deliver(IohCopy *c, const char *buf, gsize len, gboolean write_behind,
                          GError **error);

/* @len bytes that left the last filter are written by the strategy itself (the io_uring
 * filter stage): counts them as stored. */
void ioh_copy_stored(IohCopy *c, gsize len);

/* Calls the progress callback, at most once per interval unless @final. */
void ioh_copy_report_progress(IohCopy *c, gboolean final);

/* Hands what leaves the last filter to the sink (ioh_copy_deliver()'s path), each piece
 * aligned for an O_DIRECT sink. */
void ioh_copy_route_filters(IohCopy *c);

/* Storage ends (ioh-storage.c): sets O_DIRECT in the direct mode, finds where the stream
 * starts (--offset, the fd's position, or the end of an O_APPEND file) into *ret_start. */
gboolean ioh_storage_prepare(IohCopy *c, IohEnd *end, guint64 *ret_start, GError **error);

/* Waits until @fd (the end called @name) is ready for @events. FALSE with the cancelled
 * error ("<what> NAME: Operation canceled") when the copy was stopped: the copy's first
 * error is another, which the strategy keeps. A poll error is left for the read or write
 * itself to report. */
gboolean ioh_copy_wait(IohCopy *c, int fd, short events, const char *what,
                       const char *name, GError **error);

/* After a read or write of @fd failed with @errsv: TRUE when it is to be tried again
 * (EINTR; EAGAIN once @fd is ready for @events), else FALSE with @error set: "<what>
 * NAME: <cause>", or the cancelled error. */
gboolean ioh_copy_retry(IohCopy *c, int errsv, int fd, short events, const char *what,
                        const char *name, GError **error);

/* The cache policy (ioh-cache-policy.c). */
gboolean ioh_cache_after_chunk(IohCopy *c, gboolean write_behind, GError **error);
void ioh_cache_finish_read(IohCopy *c);
gboolean ioh_cache_finish_write(IohCopy *c, GError **error);
void ioh_cache_drop_written(IohCopy *c);

G_END_DECLS
