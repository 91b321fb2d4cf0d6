/* ioh-dio.h - O_DIRECT: the alignment rule and the probe, one place for the helper (which
 * aligns its buffers, offsets and lengths to it and sets the flag on its file), libwrap
 * (which refuses a start the helper could not align, or a file system that refuses the
 * flag) and qemu-glue (which probes an image before it asks QEMU anything) */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The floor: every O_DIRECT transfer is aligned to at least this many bytes. */
#define IOH_DIO_MIN_ALIGN 4096

/* The alignment O_DIRECT needs on @fd (a regular file, or a block device when
 * @is_block): at least IOH_DIO_MIN_ALIGN; what statx(STATX_DIOALIGN) reports where the
 * kernel knows (6.1+), else the logical block size of a device or the file system's
 * block size (when at most 1 MiB). */
guint ioh_dio_align(int fd, gboolean is_block);

/* The one phrase for a file system that does not take O_DIRECT (EINVAL from open() or
 * fcntl(F_SETFL)), in every part's message. */
#define IOH_DIO_REFUSED "its file system refuses O_DIRECT"

/* Whether the file system of @fd takes O_DIRECT: sets the flag (when not set already)
 * and puts the flags back. 0, or the errno of the failure: EINVAL when it refuses. */
int ioh_dio_probe(int fd);

/* Sets (@direct) or clears O_DIRECT on @fd. On failure, IOH_ERROR with @name as its path:
 * a file system that refuses it (EINVAL) is "open NAME: " IOH_DIO_REFUSED " (CAUSE)",
 * another failure "fcntl NAME: CAUSE". */
gboolean ioh_dio_set(int fd, gboolean direct, const char *name, GError **error);

G_END_DECLS
