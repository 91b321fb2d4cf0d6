/* ioh-uring-stage.h - the io_uring save's filter stage (ioh-uring-stage.c): a filtered
 * --direct save from a pipe on the io_uring strategy's one thread
 *
 * The strategy (ioh-strategy-uring.c) reads the pipe into its ring as without filters;
 * the stage passes what was read through the copy's filters, gathers their output in a
 * ring of its own (aligned, registered with the input ring) and writes it with O_DIRECT
 * io_uring writes, several in flight, on the strategy's ring. It waits through the
 * strategy (the pipe's reads go on while it waits for room), so the two share one
 * io_uring and one thread.
 */
#pragma once

#include "ioh-layer.h"

#include <liburing.h>

G_BEGIN_DECLS

/* Completions whose tag is at least this are the stage's writes. */
#define IOH_URING_STAGE_TAG 16

/* What the stage uses of the strategy. */
typedef struct {
    struct io_uring *ring;
    guint *inflight;         /* operations submitted and not completed: the stage's count */
    GError **error;          /* the copy's first error */
    /* Submits what is queued (the next read of the pipe too), waits for one completion
     * at least and handles every one there is. FALSE when the copy failed. */
    gboolean (*wait)(gpointer data);
    gpointer data;
    int buf_index;           /* the stage ring's registered buffer (-1: not registered) */
} IohUringLink;

typedef struct _IohUringStage IohUringStage;

/* TRUE when @c's filters (if any) are to run on the stage: only with IOHELPER_IO_URING=
 * filters (@env), for now. Measured, the ring's two threads were no slower with age and
 * about twice as fast with zstd (benchmarks/results/encrypt.md, compress-slow.md): on
 * one thread the pipe is not read while the filter works (zstd blocked on its workers, age
 * waiting for its seal). FALSE with c->stats->io_uring saying why. */
gboolean ioh_uring_stage_wanted(IohCopy *c, const char *env);

/* A stage for @c's filters writing @span bytes at most per write, or NULL when the copy
 * has no filter. Its ring is taken from the memory account. */
IohUringStage *ioh_uring_stage_new(IohCopy *c, gsize span);

/* The stage ring (to register with the strategy's buffers). */
struct iovec ioh_uring_stage_buffer(const IohUringStage *s);

/* Connects the stage to the strategy, before its first feed. */
void ioh_uring_stage_link(IohUringStage *s, const IohUringLink *link);

/* Passes stream bytes [*@from, @to) of the strategy's ring (@mem, @size bytes) through the
 * filters when there is a span of them, the end of the ring, or the end of the stream
 * (@eof), and moves *@from past them. FALSE with @error set on failure. */
gboolean ioh_uring_stage_feed(IohUringStage *s, const char *mem, gsize size, guint64 *from,
                              guint64 to, gboolean eof, GError **error);

/* A completion tagged IOH_URING_STAGE_TAG or above. */
void ioh_uring_stage_done(IohUringStage *s, guint64 tag, int res);

/* The end of the stream: the filters flushed, every write done, the tail (less than the
 * alignment) through the file sink. Afterwards the filters hand on to the file sink again. */
gboolean ioh_uring_stage_end(IohUringStage *s, GError **error);

/* Gives the ring back to the memory account. Accepts NULL. */
void ioh_uring_stage_free(IohUringStage *s);

/* A write in flight or to submit, of the strategy's or the stage's ring. */
typedef struct {
    guint64 start;       /* stream (output) offset of the next byte to write */
    gsize len;           /* bytes still to write from there */
    gsize asked;         /* bytes the write in flight asked for */
    gboolean queued;     /* to be submitted (new, or the rest after a short write) */
    gboolean busy;       /* submitted, not completed */
    gboolean direct;     /* submitted with O_DIRECT set */
    guint64 synced;      /* bytes it wrote O_DIRECT: counted as synced when it retires, in
                          * stream order with stored, so that synced never runs ahead */
} IohUringWrite;

/* Moves a retired write's O_DIRECT bytes into the stats' synced count. */
void ioh_uring_write_retired(IohCopy *c, IohUringWrite *w);

/* Writes @w's bytes through the file sink (an O_DIRECT write refused); @data the caller's. */
typedef gboolean (*IohUringThroughFunc)(gpointer data, IohUringWrite *w, GError **error);
/* Fails the copy with @error (taken). */
typedef void (*IohUringFailFunc)(gpointer data, GError *error);

/* What write @w's completion @res means, for the strategy's writes and the stage's
 * alike: counted; unless the copy failed already (@failed): -EAGAIN and -EINTR queue it
 * again, -EINVAL of an O_DIRECT write goes through @through (the file sink tells a write
 * clipped at RLIMIT_FSIZE from a refusal, and takes what O_DIRECT refused), a short
 * write queues the rest, an error goes to @fail. TRUE when the caller is to retire what
 * was written. */
gboolean ioh_uring_write_done(IohCopy *c, IohUringWrite *w, int res, gboolean failed,
                              IohUringThroughFunc through, IohUringFailFunc fail,
                              gpointer data);

/* Writes @len bytes of a ring of bytes (@mem, @size bytes) from stream offset @start
 * through the file sink, at their place in the file (@c->dst_start + @start): what an
 * O_DIRECT write cannot take (an unaligned tail, a refusal). */
gboolean ioh_uring_write_through(IohCopy *c, const char *mem, gsize size, guint64 start,
                                 gsize len, GError **error);

G_END_DECLS
