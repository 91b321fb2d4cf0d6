/* ioh-fd.h - file descriptor utilities: flags, full reads and writes, waiting with cancel
 *
 * Errors are IOH_ERROR with errno as the code and name the fd's file in the message
 * ("write /var/lib/x.save: No space left on device"): @name is the path, URI or a word
 * such as "stdout"; NULL gives "fd N".
 *
 * Cancellation: a non-NULL @cancellable is watched through its fd in poll(2), so
 * g_cancellable_cancel() from any thread wakes a waiting call, which then fails with
 * the one "cancelled" (G_IO_ERROR_CANCELLED: ioh_error_is_cancelled()). A call on a blocking fd first waits in poll
 * until the fd is ready, so a pipe or socket that stays silent cannot hold it; one
 * read() or write() on a blocking fd may still block (a write larger than the room in a
 * pipe): use O_NONBLOCK where a cancel must always be prompt.
 */
#pragma once

#include <sys/types.h>
#include <gio/gio.h>

G_BEGIN_DECLS

/* Sets or clears O_NONBLOCK on @fd (an open file description flag: shared with dups). */
gboolean ioh_fd_set_nonblock(int fd, gboolean nonblock, GError **error);

/* Sets or clears FD_CLOEXEC on @fd. */
gboolean ioh_fd_set_cloexec(int fd, gboolean cloexec, GError **error);

/* Waits until @fd is ready for @events (POLLIN, POLLOUT), @cancellable (may be NULL) is
 * cancelled, or @timeout_ms passed (-1: no limit). EINTR is retried with the time left.
 * Returns the fd's revents (> 0; POLLERR, POLLHUP and POLLNVAL count as ready: the next
 * read or write tells what they mean), 0 on timeout, or -1 with @error set (cancelled,
 * or poll's errno). */
int ioh_fd_wait(int fd, short events, GCancellable *cancellable, int timeout_ms,
                GError **error);

/* Reads until @len bytes or end of file, retrying short reads, EINTR and EAGAIN (waiting
 * for POLLIN). Returns the bytes read (fewer than @len only at end of file) or -1 with
 * "read NAME: <cause>". */
gssize ioh_fd_read_full(int fd, void *buf, gsize len, GCancellable *cancellable,
                        const char *name, GError **error);

/* Writes all @len bytes, retrying short writes, EINTR and EAGAIN (waiting for POLLOUT).
 * FALSE with "write NAME: <cause>" (EPIPE when the reader went away: SIGPIPE must be
 * ignored or blocked by the caller). */
gboolean ioh_fd_write_full(int fd, const void *buf, gsize len, GCancellable *cancellable,
                           const char *name, GError **error);

/* What a file of type @mode (st_mode) is, for a message: "a regular file", "a directory",
 * "a block device", "a character device", "a pipe" (anonymous or named: a FIFO),
 * "a socket", "a symbolic link". */
const char *ioh_fd_kind_name(mode_t mode);

/* Closes *@fd when >= 0 and sets it to -1, keeping errno: for cleanup paths whose close
 * result does not matter (a close that can lose data is checked by its caller). */
void ioh_fd_clear(int *fd);

G_END_DECLS
