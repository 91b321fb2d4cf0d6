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

/* Creates a pipe with O_CLOEXEC (plus @flags: 0 or O_NONBLOCK) on both ends and raises
 * it towards @size bytes (0: the kernel's default size). On failure sets
 * "create pipe: <cause>" (IOH_ERROR, errno). */
gboolean ioh_pipe_open(int ret_fds[2], int flags, guint size, GError **error);

G_END_DECLS
