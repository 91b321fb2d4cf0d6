/* ioh-cache-mode.h - how the storage side of a copy uses the page cache
 *
 * One enum for the helper (--direct, --fadvise), libwrap and qemu-glue (--bypass-cache),
 * and one spelling of each mode, the one the helper's stats, record and protocol use.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    IOH_CACHE_BUFFERED,  /* page cache, fdatasync at the end */
    IOH_CACHE_DIRECT,    /* O_DIRECT with aligned buffers; the unaligned tail goes buffered */
    IOH_CACHE_FADVISE,   /* page cache, written back and dropped behind the head */
    IOH_CACHE_NBD,       /* no local storage: an NBD export, durable by the server's flush
                          * (what a copy with an NBD end reports; never asked for) */
    IOH_CACHE_RBD,       /* no local storage: an RBD image, durable by librbd's flush
                          * (what a copy with an RBD end reports; never asked for) */
} IohCacheMode;

#define IOH_CACHE_MODE_COUNT 5

/* "buffered", "direct", "fadvise", "nbd" or "rbd"; NULL for a value outside the enum. */
const char *ioh_cache_mode_to_string(IohCacheMode mode);

/* The mode spelled @text (exactly one of the five names). Otherwise FALSE with
 * IOH_ERROR/EINVAL "cache mode 'TEXT': not buffered, direct, fadvise, nbd or rbd". */
gboolean ioh_cache_mode_from_string(const char *text, IohCacheMode *ret_mode,
                                    GError **error);

G_END_DECLS
