/* ioh-read-ahead.h - reads issued ahead of the consumer and handed on in order, for the
 * sources whose end is a pool of requests (the NBD and RBD sources)
 *
 * Both sources keep every request of their pool in flight until the stream is all asked
 * for, take the oldest once it completed, and hand its bytes on from its buffer (peek():
 * the inline strategy delivers them without a copy); a request's buffer is issued again
 * only once it has been handed on whole. The pools differ (libnbd's connections,
 * librbd's completions): each source gives its pool's calls in an IohReadAheadOps.
 */
#pragma once

#include "ioh-layer.h"

G_BEGIN_DECLS

typedef struct {
    /* The buffer of the next free request (NULL with @error set). */
    char *(*next)(gpointer pool, GError **error);
    /* Issues a read of @len bytes at @offset into the buffer next() returned. */
    gboolean (*issue_read)(gpointer pool, gsize len, guint64 offset, GError **error);
    /* The oldest request once complete (its length in *@ret_len), out of flight. */
    char *(*take)(gpointer pool, gsize *ret_len, GError **error);
    guint (*in_flight)(gconstpointer pool);
    guint (*capacity)(gconstpointer pool);
    /* The length of a request at @offset (at most the request size). */
    gsize (*request_at)(gconstpointer pool, guint64 offset);
} IohReadAheadOps;

typedef struct {
    const IohReadAheadOps *ops;
    gpointer pool;
    guint64 start;           /* end offset of the stream */
    guint64 length;
    guint64 issued;          /* stream bytes asked for */
    char *head;              /* the oldest request, being handed on */
    gsize head_len;
    gsize head_off;
} IohReadAhead;

/* The next bytes of the stream (at most *@len, lowered; 0 at its end), valid until the
 * next call: a source's peek(). */
const char *ioh_read_ahead_peek(IohCopy *c, IohReadAhead *ra, gsize *len, GError **error);

G_END_DECLS
