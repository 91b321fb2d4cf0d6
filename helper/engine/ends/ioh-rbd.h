/* ioh-rbd.h - RBD images as ends of a copy, over librbd (the rbd source and sink)
 *
 * An RBD end has no fd: it is a name in QEMU's form (rbd:POOL/IMAGE[@SNAP][:conf=PATH]
 * [:id=USER][:keyring=PATH], ioh-rbd-name.h). The layers connect in prepare()
 * (ioh-rbd-connect.h: bounded, cancellable), open the image, and move the stream in
 * requests cut at the image's object boundaries (whole objects where the stream allows),
 * issued with rbd_aio_write/rbd_aio_read, at most --requests in flight, completed in
 * order. A completion wakes the copy's thread through an eventfd; a wait with requests in
 * flight and no completion for the stall timeout fails the copy.
 */
#pragma once

#include "ioh-engine.h"        /* ioh_rbd_end_new() */
#include "ioh-layer.h"
#include "ioh-rbd-connect.h"  /* IOH_RBD_LENGTH_KEY, IOH_RBD_OFFSET_KEY */

G_BEGIN_DECLS

/* Requests in flight by default: 8 objects of 4 MiB (benchmarks/results/rbd.md). */
#define IOH_RBD_DEFAULT_REQUESTS 8

typedef struct _IohRbd IohRbd;

/* Connects @end (its priv, freed with the end) and opens its image: a save creates a
 * missing one (thin, the default features, @create_size bytes) and refuses a snapshot;
 * a restore opens read-only (a snapshot too). */
IohRbd *ioh_rbd_open(IohCopy *c, IohEnd *end, gboolean for_write, guint64 create_size,
                     GError **error);

guint64 ioh_rbd_size(const IohRbd *r);
gboolean ioh_rbd_created(const IohRbd *r);
gboolean ioh_rbd_is_snapshot(const IohRbd *r);

/* Bytes from @pos to the end of its object, at most the request size: a request never
 * spans two objects. */
gsize ioh_rbd_request_at(const IohRbd *r, guint64 pos);

/* Resizes the image to @size bytes. */
gboolean ioh_rbd_resize(IohRbd *r, guint64 size, GError **error);

/* The metadata @key as a number: FALSE with @error on failure; *@ret_found FALSE when
 * the image has no such key (or it does not hold a number). */
gboolean ioh_rbd_meta_get(IohRbd *r, const char *key, guint64 *ret, gboolean *ret_found,
                          GError **error);
gboolean ioh_rbd_meta_set(IohRbd *r, const char *key, guint64 value, GError **error);
gboolean ioh_rbd_meta_remove(IohRbd *r, const char *key, GError **error);

/* The buffer of the next request (waiting for the oldest when all are in flight: its
 * result in @error). */
char *ioh_rbd_next(IohRbd *r, GError **error);

/* Issues the buffer ioh_rbd_next() returned: @len bytes at image offset @offset. */
gboolean ioh_rbd_issue(IohRbd *r, gboolean write, gsize len, guint64 offset,
                       GError **error);

/* The oldest request, once complete and checked (a read: all @len bytes), out of flight;
 * *@ret_len its length. Its buffer stays the caller's until the next ioh_rbd_next(). */
char *ioh_rbd_take(IohRbd *r, gsize *ret_len, GError **error);

guint ioh_rbd_in_flight(const IohRbd *r);
guint ioh_rbd_capacity(const IohRbd *r);

/* The layer's own state, freed with @r. */
void ioh_rbd_set_layer_state(IohRbd *r, gpointer state, GDestroyNotify state_free);
gpointer ioh_rbd_layer_state(const IohRbd *r);

/* Waits for every request in flight and, after writes, flushes (rbd_aio_flush, waited
 * for as a request). */
gboolean ioh_rbd_finish(IohRbd *r, gboolean flush, GError **error);

G_END_DECLS
