/* ioh-pipe-edge.h - a pipe source read by a ring's reader thread waits for the end of
 * each write into the pipe (ioh-pipe-edge.c)
 *
 * An epoll fd that wakes at the end of each write into the pipe (edge-triggered), so that
 * a read after one that emptied the pipe waits for the producer's write to end instead of
 * spinning on the pipe's lock while the producer copies into it. The ring opens it for
 * its one reader of a pipe (c->edge) and closes it; the stream source calls it around
 * each read. It is a hint only: the reader's own wait on the pipe follows, so bytes that
 * no edge announces are never lost.
 */
#pragma once

#include "ioh-layer.h"
#include "ioh-relay.h"

G_BEGIN_DECLS

struct _IohPipeEdge {
    int fd;                  /* epoll: the pipe (EPOLLET) and the copy's cancel */
    gsize cap;               /* the pipe's size: a read of that much empties it */
    gboolean empty;          /* the last read left the pipe empty */
    IohRelay relay;          /* the pipe's bytes spliced into a pipe of our own, read from
                              * there (ioh-relay.h); relay.fd[0] -1: none */
};

/* Sets up @edge for @c's source when it is a pipe read by one of @readers (1) that waits
 * with the copy's cancel (@cancel_fd). FALSE when there is no such pipe, or epoll or
 * F_GETPIPE_SZ failed: the reader then waits as it always did. */
gboolean ioh_pipe_edge_open(IohCopy *c, guint readers, int cancel_fd, IohPipeEdge *edge);

/* Before a read of the pipe: after a read that emptied it, waits for the end of the
 * producer's next write, the cancel, or a short timeout. @edge NULL: returns at once. */
void ioh_pipe_edge_before_read(IohPipeEdge *edge);

/* After a read that asked @want bytes and got @n (< 0: failed): notes whether it emptied
 * the pipe. @edge NULL: nothing. */
void ioh_pipe_edge_after_read(IohPipeEdge *edge, gssize n, gsize want);

/* Closes @edge's epoll fd (NULL: nothing). */
void ioh_pipe_edge_close(IohPipeEdge *edge);

G_END_DECLS
