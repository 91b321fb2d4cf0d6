/* ioh-dio.h - the O_DIRECT alignment rule, one place for the helper (which aligns its
 * buffers, offsets and lengths to it) and libwrap (which refuses a start the helper could
 * not align) */
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

G_END_DECLS
