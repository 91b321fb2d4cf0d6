/* ioh-clash.h - every check of the helper's options against each other and against
 * what its operands are, before anything is opened
 *
 * Three steps, each as soon as what it needs is known, all usage errors (IOH_ARGS_ERROR,
 * exit 2): ioh_clash_check_options() when the command line is parsed (the rules between
 * options are ioh-option-rules.h's, which libwrap and qemu-iohelper apply too);
 * ioh_clash_check() on what the operands and side channels are; and
 * ioh_clash_check_direction() once the status fd is known to be no data side (its
 * refusal is reported there too).
 *
 * A copy has two data sides (IN and OUT; in the libvirt form FD and stdin or stdout) and
 * up to four side channels: --status-fd, --record, and standard error when --stats or a
 * drawn --progress writes there. Names say nothing ("-", "fd:5", "./x", a symlink, a
 * hard link): what the fds and files ARE is compared, st_dev and st_ino from fstat/stat
 * (a pipe's two ends and every fd on it share one inode), and for a path that does not
 * exist yet its directory and base name.
 *
 * ioh_clash_check() refuses (nothing opened or written):
 * - IN and OUT the same regular file, block device or pipe (a copy onto itself would
 *   grow or destroy it; a terminal or a socket reads and writes two streams: allowed);
 * - a side channel that is IN or OUT, of any kind except the null device (its lines
 *   would land in the data or the source);
 * - an option that cannot apply: --offset, --direct or --fadvise with no file or block
 *   device on either side; --offset with a file or device on both sides (which side it
 *   means would be a guess); --offset with an O_APPEND destination (every write lands at
 *   its end, whatever the offset);
 */
#pragma once

#include <glib.h>

#include "ioh-args.h"
#include "ioh-protocol.h"

G_BEGIN_DECLS

/* The options against each other (ioh-option-rules.h: --direct with --fadvise, --compress
 * with --decompress, --threads without --compress, an NBD end's options without one) and
 * against the NBD operands (not both; no --direct or --fadvise; reading one needs
 * --length). Reads nothing: ioh_args_parse() calls it. */
gboolean ioh_clash_check_options(const IohArgs *a, GError **error);

/* --compress is for a save (a stream into a file, a device or an NBD export), --decompress
 * for a restore: the operands are looked at (a path that does not exist will be a file),
 * in the libvirt form FD's access mode gives the direction. Opens nothing. */
gboolean ioh_clash_check_direction(const IohArgs *a, GError **error);

/* The direction of @a as ioh_clash_check_direction() sees it (save: a stream into a
 * file, a device or an NBD export). FALSE in the libvirt form when FD is not usable. */
gboolean ioh_clash_direction(const IohArgs *a, IohDirection *ret);

/* The parts of @a against each other, as above. An fd that is not open is not a clash: opening it reports it. */
gboolean ioh_clash_check(const IohArgs *a, GError **error);

/* TRUE when the open fds @in_fd and @out_fd are the same regular file, block device or
 * pipe (the same check as ioh_clash_check, on what was actually opened). */
gboolean ioh_clash_same_data(int in_fd, int out_fd);

G_END_DECLS
