/* ioh-engine.h - the copy engine as the command line sees it (docs/engine.md)
 *
 * iohelper.c and cli/ include this header and no other of helper/engine/: the copy
 * (ioh-copy.h: ioh_copy() and its options), its ends (ioh-file.h: an IohEnd opened from
 * a path or an fd, and below, from an NBD URI), the stats it fills (ioh-stats.h), the
 * host's memory budget (ioh-budget.h) and the checksum filters' names. Everything else
 * under helper/engine/ (the layers, the ring, the memory account) is the engine's own.
 */
#pragma once

#include "ioh-budget.h"
#include "ioh-copy.h"
#include "ioh-file.h"
#include "ioh-stats.h"

G_BEGIN_DECLS

/* An end for the NBD export @uri (libnbd's syntax: nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, nbds://... with TLS): kind IOH_KIND_NBD, fd -1, not
 * yet connected (the copy's nbd source or sink connects it: ends/ioh-nbd.h). */
IohEnd *ioh_nbd_end_new(const char *uri);

/* An end for the RBD image @name (rbd:POOL/IMAGE[@SNAP][:conf=PATH][:id=USER]
 * [:keyring=PATH], ioh-rbd-name.h): kind IOH_KIND_RBD, fd -1, not yet connected (the
 * copy's rbd source or sink connects it: ends/ioh-rbd.h). */
IohEnd *ioh_rbd_end_new(const char *name);

/* TRUE once an RBD end was left open after a timeout (librbd's threads may still use it):
 * the process must then end with _exit(), since the destructors exit() runs would free
 * what those threads still use (AddressSanitizer saw one read freed memory). */
gboolean ioh_rbd_left_open(void);

/* The registered checksum filter called @name (--checksum=NAME): its name, NULL when
 * there is none. */
const char *ioh_filter_checksum_lookup(const char *name);

/* The registered checksum names, comma-separated, for messages ("xxh3"). */
const char *ioh_filter_checksum_names(void);

G_END_DECLS
