/* ioh-filter-behind.h - writes behind a transforming filter: its output buffers written
 * to the sink in order by a thread of their own while the filter fills the next one
 * (private to the filter chain, ioh-filter.c; docs/engine.md, "Writes behind")
 */
#pragma once

#include <glib.h>
#include <sys/uio.h>

G_BEGIN_DECLS

typedef struct _IohFilterBehind IohFilterBehind;

/* What the chain's owner gives: @writev writes @cnt pieces in order on the writer thread
 * (the sink's writes, every byte or FALSE with @error naming the file); @done counts
 * @len written bytes on the filter's thread (the stats live there); @start, once, on the
 * filter's thread before the writer thread starts. */
typedef struct {
    void (*start)(gpointer data);
    gboolean (*writev)(gpointer data, const struct iovec *iov, int cnt, GError **error);
    void (*done)(gpointer data, gsize len);
    gpointer data;
    GDestroyNotify free;   /* of @data, NULL allowed */
} IohFilterBehindSink;

/* A writer for @sink (its thread starts with the first write). */
IohFilterBehind *ioh_filter_behind_new(const IohFilterBehindSink *sink);

/* Queues @len bytes at @buf (which stays the writer's until ioh_filter_behind_wait() of
 * *@ret_ticket returns): FALSE with @error when an earlier write failed (nothing queued
 * then). Waits while the queue is full. */
gboolean ioh_filter_behind_submit(IohFilterBehind *b, const void *buf, gsize len,
                                  guint64 *ret_ticket, GError **error);

/* Waits until the write of @ticket (0: none) and every one before it are done; FALSE
 * with @error when one of them failed. */
gboolean ioh_filter_behind_wait(IohFilterBehind *b, guint64 ticket, GError **error);

/* Waits until every queued write is done (as ioh_filter_behind_wait()). */
gboolean ioh_filter_behind_drain(IohFilterBehind *b, GError **error);

/* Stops the thread (queued writes not begun are dropped: the copy failed) and frees @b.
 * Accepts NULL. */
void ioh_filter_behind_free(IohFilterBehind *b);

G_END_DECLS
