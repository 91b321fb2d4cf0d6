/* ioh-filter.h - filters: layers the stream passes through between source and sink
 *
 * A filter sees every byte of the stream, in stream order, just before the sink gets it,
 * on the thread that writes the sink. A filter is one file that defines one
 * IohFilterClass named ioh_filter_NAME, and one line IOH_FILTER(NAME) in
 * ioh-layer-list.h registers it (see docs/engine.md). A copy runs the filters that
 * IohCopyOptions.filters names, in that order.
 */
#pragma once

#include <glib.h>
#include <sys/uio.h>

#include "ioh-copy.h"
#include "ioh-engine.h"    /* ioh_filter_checksum_lookup(), ioh_filter_checksum_names() */
#include "ioh-file.h"
#include "ioh-filter-behind.h"
#include "ioh-stats.h"

G_BEGIN_DECLS

/* The filters of one copy, in order. */
typedef struct _IohFilterChain IohFilterChain;

/* Where a transforming filter hands on the bytes it makes: to the filters after it, then
 * the sink. Set up by the chain; the filter only reads @file and @align. */
typedef struct _IohFilterOut IohFilterOut;
struct _IohFilterOut {
    const char *file;       /* the storage end's name, for messages */
    gsize align;            /* the sink's alignment: hand on multiples of it, except at the
                             * end of the stream (an O_DIRECT sink writes the tail buffered) */
    IohFilterChain *chain;  /* private */
    guint next;             /* private: the index of the next filter */
};

/* Hands @len bytes made by a transforming filter to the rest of the chain and the sink. */
gboolean ioh_filter_out(IohFilterOut *out, const void *buf, gsize len, GError **error);

/* Hands on @cnt pieces, in order, as ioh_filter_out() would each: when no filter comes
 * after, the sink takes them in one vectored write (no copy into one buffer). Where
 * @out->align is over 1 (O_DIRECT), each piece's address and length are multiples of it
 * (as ioh_filter_out() asks), but the stream's tail. */
gboolean ioh_filter_outv(IohFilterOut *out, const struct iovec *iov, int cnt,
                         GError **error);

/* TRUE when the sink writes behind @out (ioh_filter_out_behind() queues): the last
 * filter before an O_DIRECT file sink on the ring (ioh_filter_chain_set_behind()). A
 * filter then keeps a few output buffers in turn, so one fills while others are written. */
gboolean ioh_filter_out_behind_on(const IohFilterOut *out);

/* Hands on @len bytes as ioh_filter_out() does; where the sink writes behind, only queues
 * them: @buf stays the writer's until ioh_filter_out_wait(*@ret_ticket) returns (else
 * *@ret_ticket is 0: written). A failed write (an earlier one's too) is FALSE with
 * @error naming the file. */
gboolean ioh_filter_out_behind(IohFilterOut *out, const void *buf, gsize len,
                               guint64 *ret_ticket, GError **error);

/* Waits until the write of @ticket (0: none) and those before it are done: the buffer
 * is the filter's again. FALSE with @error when a write failed. */
gboolean ioh_filter_out_wait(IohFilterOut *out, guint64 ticket, GError **error);

/* @size bytes for a transforming filter's output to @out's sink (free() them), or NULL:
 * for an O_DIRECT sink (@out->align over 1) on huge pages, as the ring's buffers, since
 * each write pins the buffer's pages and 4 KiB pages cost a pin each (docs/engine.md,
 * "What a save costs in CPU"). */
guint8 *ioh_filter_out_buffer(const IohFilterOut *out, gsize size);

typedef struct {
    const char *name;       /* what IohCopyOptions.filters and the command line say */
    gboolean checksum;      /* a checksum of the stream: --checksum=NAME selects it */
    /* A new state for one copy (the options as given), or NULL with @error set. */
    gpointer (*open)(const IohCopyOptions *opts, GError **error);
    /* The next @len bytes of the stream (@len > 0). An observing filter sets data: the
     * same bytes go on. */
    gboolean (*data)(gpointer state, const guint8 *buf, gsize len, GError **error);
    /* A transforming filter sets transform and flush instead: it takes the next @len
     * bytes (@len > 0) and hands on whatever it makes, any amount, with ioh_filter_out()
     * on @out; at the end of the stream, flush hands on the rest. The filters after it see
     * its output, not its input (docs/engine.md). */
    gboolean (*transform)(gpointer state, const guint8 *buf, gsize len, IohFilterOut *out,
                          GError **error);
    gboolean (*flush)(gpointer state, IohFilterOut *out, GError **error);
    /* The whole stream has passed and reached the sink: put results in @stats, or fail
     * (the file is the storage end, @src or @dst, for messages). */
    gboolean (*finish)(gpointer state, const IohEnd *src, const IohEnd *dst,
                       IohStats *stats, GError **error);
    void (*free)(gpointer state);  /* NULL allowed */
} IohFilterClass;

/* The registered filter called @name, or NULL. */
const IohFilterClass *ioh_filter_lookup(const char *name);


/* Opens the filters @opts->filters names (none: an empty chain). An unknown name is
 * IOH_ERROR/EINVAL. */
IohFilterChain *ioh_filter_chain_new(const IohCopyOptions *opts, GError **error);

/* What gets the bytes that leave the last filter: the sink. */
typedef gboolean (*IohFilterSinkFunc)(gpointer data, const void *buf, gsize len,
                                      GError **error);

/* TRUE when a filter of @chain transforms the stream (what the sink gets is not what the
 * source gave). Accepts NULL. */
gboolean ioh_filter_chain_transforms(const IohFilterChain *chain);

/* What takes ioh_filter_outv()'s pieces at the end of the chain: all of them, in order. */
typedef gboolean (*IohFilterSinkvFunc)(gpointer data, const struct iovec *iov, int cnt,
                                       GError **error);

/* Sets the sink (none: the bytes end at the last filter), with the storage end's @file
 * and the sink's @align for transforming filters; @sinkv (NULL: @sink per piece) takes
 * vectored output. */
void ioh_filter_chain_set_sink(IohFilterChain *chain, const char *file, gsize align,
                               IohFilterSinkFunc sink, IohFilterSinkvFunc sinkv,
                               gpointer sink_data);

/* The last filter's output buffers written behind it by a thread (ioh-filter-behind.h:
 * @sink's write, in order), while it fills the next; synchronous writes to the sink wait
 * for those first, and the flush for all of them. Once: a second call frees @sink's data. */
void ioh_filter_chain_set_behind(IohFilterChain *chain, const IohFilterBehindSink *sink);

/* Passes @len bytes through every filter, then to the sink (nothing when @len is 0). */
gboolean ioh_filter_chain_data(IohFilterChain *chain, const void *buf, gsize len,
                               GError **error);

/* The end of the stream: the transforming filters hand on what they hold, in order.
 * Once: a second call does nothing. */
gboolean ioh_filter_chain_flush(IohFilterChain *chain, GError **error);

/* Finishes every filter, in order; the first failure stops. */
gboolean ioh_filter_chain_finish(IohFilterChain *chain, const IohEnd *src,
                                 const IohEnd *dst, IohStats *stats, GError **error);

void ioh_filter_chain_free(IohFilterChain *chain);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohFilterChain, ioh_filter_chain_free)

G_END_DECLS
