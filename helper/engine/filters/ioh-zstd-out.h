/* ioh-zstd-out.h - the zstd filter's output: its aligned buffer, and chunks stored as
 * zstd frames of raw blocks, built there or handed on as pieces (private to the filter) */
#pragma once

#include <glib.h>
#include <sys/uio.h>

#include "ioh-filter.h"
#include "ioh-mem-account.h"

G_BEGIN_DECLS

#define IOH_ZSTD_OUT_IOV 64     /* pieces of raw frames handed on in one call */
#define IOH_ZSTD_OUT_SMALL 16   /* pieces up to this long are copied (headers, sums) */
#define IOH_ZSTD_OUT_BUFS 4     /* output buffers at most: one fills while the others are
                                 * written behind (ioh_filter_out_behind) */

/* unzstd decodes frames whose window is at most 2^30 bytes (1 GiB: `zstd --long=30`;
 * libzstd's own default stops at 2^27); a larger window is refused as unsupported, not
 * as corrupt. The fuzz target builds with a smaller one (each window is allocated) and
 * its reference decoder uses the same. */
#ifndef IOH_ZSTD_WINDOW_LOG_MAX
#define IOH_ZSTD_WINDOW_LOG_MAX 30
#endif

typedef struct {
    guint8 *buf;             /* output, aligned to the sink's alignment: bufs[cur] */
    guint8 *bufs[IOH_ZSTD_OUT_BUFS];
    guint64 tickets[IOH_ZSTD_OUT_BUFS];  /* each one's last write behind (0: none) */
    guint nbufs;             /* 1, or more when the sink writes behind (as the budget allows) */
    guint cur;
    IohMemAccount *memory;   /* the copy's (NULL: none), set by the filter: the buffers
                              * past the first are the layer "zstd-out" */
    gsize size;
    gsize have;              /* bytes of buf not handed on yet */
    gsize queued;            /* O_DIRECT: of those, the first ones already in iov */
    struct iovec iov[IOH_ZSTD_OUT_IOV];  /* raw frames' pieces not handed on yet, the
                                          * caller's bytes by reference */
    int niov;
    guint8 small[IOH_ZSTD_OUT_IOV * IOH_ZSTD_OUT_SMALL];  /* ... and the small pieces,
                                                           * copied */
    gsize nsmall;
    guint64 frames;          /* raw frames written (the filter counts its own too) */
    gint64 cpu_ns;           /* of the calling thread computing the frames' checksums */
    gboolean compact;        /* O_DIRECT: raw frames copied, never padded (auto: an image
                              * within 0.1% of the stream, not 3.1% over) */
    gint64 out_ns;           /* wall time in the sink's writes (ioh_zstd_out_put(); written
                              * behind: its waits for a free buffer) */
    guint64 out_bytes;       /* ... and the bytes handed on */
} IohZstdOut;

/* Allocates @o's buffer once the sink's alignment (@out->align) is known. */
gboolean ioh_zstd_out_alloc(IohZstdOut *o, const IohFilterOut *out, GError **error);

/* Hands on the first @len bytes of @o's buffer (as ioh_filter_out(), written behind where
 * the sink does), its time and bytes counted in @o; what the buffer holds past them
 * (o->have - @len bytes) starts the next buffer, which becomes o->buf. */
gboolean ioh_zstd_out_put(IohZstdOut *o, IohFilterOut *out, gsize len, GError **error);

/* Frees @o's buffer (NULL: nothing). */
void ioh_zstd_out_clear(IohZstdOut *o);

/* Hands on @len > 0 bytes of the stream as zstd frames of one raw block each, after what
 * @o's buffer holds; what is not handed on yet (an O_DIRECT sink's unaligned end) stays
 * in the buffer, at its start. */
gboolean ioh_zstd_out_raw(IohZstdOut *o, const guint8 *buf, gsize len, IohFilterOut *out,
                          GError **error);

G_END_DECLS
