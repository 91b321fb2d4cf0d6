/* ioh-pipe.h - sizing pipes
 *
 * A 64 KiB pipe caps a save at a few Gbit/s; 1 MiB lifts that several times. Every
 * pipe the helper touches is raised to the requested size, capped by
 * /proc/sys/fs/pipe-max-size; when the per-user pipe quota refuses (EPERM) the size
 * is halved until the kernel accepts, and a pipe is never shrunk.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_PIPE_DEFAULT_SIZE (1024 * 1024)

/* /proc/sys/fs/pipe-max-size, or 1 MiB when it cannot be read. */
guint ioh_pipe_max_size(void);

/* Raises pipe @fd towards @want bytes. Returns the size now in force (>= 0), or
 * -errno when @fd is not a pipe or F_GETPIPE_SZ fails. Never fails for EPERM. */
int ioh_pipe_raise(int fd, guint want);

G_END_DECLS
