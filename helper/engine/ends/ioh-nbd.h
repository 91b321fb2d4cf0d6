/* ioh-nbd.h - NBD exports as ends of a copy, over libnbd (the nbd source and sink)
 *
 * An NBD end has no fd: it is a URI in libnbd's syntax (nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, nbds://... with TLS). The layers connect in prepare():
 * one or more connections (several only to a server that advertises multi-conn), each
 * with a thread of its own that drives libnbd's state machine (poll on nbd_aio_get_fd()
 * in nbd_aio_get_direction(), woken by an eventfd when a command is issued), and a pool
 * of request buffers taken back in the order they were issued: at most `requests`
 * commands in flight per connection, the commands on the connections in turn. Unless
 * both are given, how many of each is decided as the copy goes (ioh-nbd-adapt.h), the
 * connections opened and closed while it runs; --stats says what and why.
 */
#pragma once

#include "ioh-engine.h"        /* ioh_nbd_end_new() */
#include "ioh-layer.h"
#include "ioh-nbd-connect.h"  /* ioh_nbd_connect_uri(), ioh_nbd_check_save() */
#include "ioh-nbd-uri.h"      /* ioh_nbd_is_uri(), ioh_nbd_safe_name() */

G_BEGIN_DECLS

/* Request size when IohCopyOptions.nbd_request_size is 0: the best, or within the noise
 * of it, for saves and restores in benchmarks/nbd's request-size sweep
 * (benchmarks/results/nbd.md), and nbdcopy's own measured choice. */
#define IOH_NBD_DEFAULT_REQUEST (256 * 1024)
/* Connections and requests in flight: --connections / --requests as given, else chosen
 * as the copy goes, from one connection and a few requests (ioh-nbd-adapt.h). */

/* A save flushes without waiting every this many bytes (write-behind): the server's disk
 * writes while the stream comes, not all at the final flush (measured in ioh-nbd.c). */
#define IOH_NBD_FLUSH_BEHIND (32 * 1024 * 1024)

typedef struct _IohNbd IohNbd;

/* FALSE with "export NAME is SIZE bytes, the stream needs more" (ENOSPC, operation @what,
 * path the end's name). */
gboolean ioh_nbd_too_small(GError **error, const char *what, const IohEnd *end,
                           guint64 size);

/* Connects @end (its priv, freed with the end): each handshake bounded by
 * --stall-timeout (else IOH_NBD_CONNECT_TIMEOUT_S) and ended by the copy's cancellable.
 * A save refuses a read-only export and a server that does not advertise flush
 * (ioh_nbd_check_save()). */
IohNbd *ioh_nbd_connect(IohCopy *c, IohEnd *end, gboolean for_write, GError **error);

guint64 ioh_nbd_export_size(const IohNbd *n);
gsize ioh_nbd_request_size(const IohNbd *n);

/* The buffer of the next request, once the command it last carried has completed (its
 * result in @error: FALSE when it failed). *@ret_len is what that command moved. */
char *ioh_nbd_next(IohNbd *n, gsize *ret_len, GError **error);

/* Issues the buffer ioh_nbd_next() returned: @len bytes at export offset @offset. */
gboolean ioh_nbd_issue(IohNbd *n, gboolean write, gsize len, guint64 offset,
                       GError **error);

/* The oldest request issued, once its command has completed (a read: its data), taken
 * out of flight; *@ret_len is what it moved. Its buffer stays the caller's until the
 * next ioh_nbd_next() or ioh_nbd_take(). */
char *ioh_nbd_take(IohNbd *n, gsize *ret_len, GError **error);

/* The export's minimum block size (1: none): a request's offset and length are
 * multiples of it (ioh_nbd_issue() rounds a read up; the rest is not handed on). */
gsize ioh_nbd_min_block(const IohNbd *n);

/* Reads the one block (ioh_nbd_min_block() bytes) at @offset into @buf, waiting for it:
 * a save's read-modify-write of its unaligned tail. */
gboolean ioh_nbd_read_block(IohNbd *n, char *buf, guint64 offset, GError **error);

/* Requests issued and not yet taken back; how many may be now (the shape changes as
 * the copy goes: call again). */
guint ioh_nbd_in_flight(const IohNbd *n);
guint ioh_nbd_capacity(const IohNbd *n);

/* The layer's own state, freed with @n (@state_free may be NULL). */
void ioh_nbd_set_layer_state(IohNbd *n, gpointer state, GDestroyNotify state_free);
gpointer ioh_nbd_layer_state(const IohNbd *n);

/* Waits for every command in flight, stops the connection threads and, after writes,
 * flushes: once with multi-conn, else on every connection. */
gboolean ioh_nbd_finish(IohNbd *n, gboolean flush, GError **error);

G_END_DECLS
