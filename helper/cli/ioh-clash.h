/* ioh-clash.h - refuse command lines whose parts collide, before anything is opened
 *
 * A copy has two data sides (IN and OUT; in the libvirt form FD and stdin or stdout) and
 * up to four side channels: --status-fd, --record, and standard error when --stats or a
 * drawn --progress writes there. Names say nothing ("-", "fd:5", "./x", a symlink, a
 * hard link): what the fds and files ARE is compared, st_dev and st_ino from fstat/stat
 * (a pipe's two ends and every fd on it share one inode), and for a path that does not
 * exist yet its directory and base name.
 *
 * Refused, as usage errors (IOH_ARGS_ERROR, exit 2, nothing opened or written):
 * - IN and OUT the same regular file, block device or pipe (a copy onto itself would
 *   grow or destroy it; a terminal or a socket reads and writes two streams: allowed);
 * - a side channel that is IN or OUT, of any kind except the null device (its lines
 *   would land in the data or the source);
 * - an option that cannot apply: --offset, --direct or --fadvise with no file or block
 *   device on either side; --offset with a file or device on both sides (which side it
 *   means would be a guess); --offset with an O_APPEND destination (every write lands at
 *   its end, whatever the offset);
 * - --threads without --compress (zstd's compression threads; a restore has none).
 */
#pragma once

#include <glib.h>

#include "ioh-args.h"

G_BEGIN_DECLS

/* Checks @a as above. An fd that is not open is not a clash: opening it reports it. */
gboolean ioh_clash_check(const IohArgs *a, GError **error);

/* TRUE when the open fds @in_fd and @out_fd are the same regular file, block device or
 * pipe (the same check as ioh_clash_check, on what was actually opened). */
gboolean ioh_clash_same_data(int in_fd, int out_fd);

G_END_DECLS
