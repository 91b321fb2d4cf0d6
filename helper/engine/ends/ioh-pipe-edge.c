/* ioh-pipe-edge.c - a pipe source's reader waits for the end of each write into the pipe
 * (ioh-pipe-edge.h)
 *
 * Why: a reader that reads as soon as the pipe is not empty finds the producer still
 * copying its write into it and spins on the pipe's lock meanwhile
 * (`mutex_spin_on_owner`, a quarter of an O_DIRECT save's CPU in perf); the producer
 * wakes the pipe's waiters at the end of each write, after the lock.
 */
#include "ioh-pipe-edge.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

/* A wait for the end of a write into the source pipe gives up after this long (then the
 * reader waits on the pipe as it would without: data no edge announces is never lost). */
#define IOH_PIPE_EDGE_MS 20

gboolean
ioh_pipe_edge_open(IohCopy *c, guint readers, int cancel_fd, IohPipeEdge *edge)
{
    struct epoll_event pipe_ev = { .events = EPOLLIN | EPOLLET };
    struct epoll_event cancel_ev = { .events = EPOLLIN };
    int cap;

    if (readers != 1 || !c->poll_src || c->src->kind != IOH_KIND_PIPE || cancel_fd < 0 ||
        (cap = fcntl(c->src->fd, F_GETPIPE_SZ)) <= 0) {
        return FALSE;
    }
    *edge = (IohPipeEdge){ .fd = epoll_create1(EPOLL_CLOEXEC), .cap = (gsize)cap,
                           .empty = TRUE };
    if (edge->fd >= 0 && epoll_ctl(edge->fd, EPOLL_CTL_ADD, c->src->fd, &pipe_ev) == 0 &&
        epoll_ctl(edge->fd, EPOLL_CTL_ADD, cancel_fd, &cancel_ev) == 0) {
        g_debug("%s: the reader waits for the end of each write into the pipe (%d bytes)",
                c->src->name, cap);
        /* The ring's reader reads the producer's pipe through a relay pipe too, as the
         * io_uring strategy does (ioh-relay.c says why). */
        if (ioh_relay_open(&edge->relay, (gsize)cap)) {
            g_debug("%s: read through a relay pipe", c->src->name);
        }
        return TRUE;
    }
    if (edge->fd >= 0) {
        close(edge->fd);
    }
    return FALSE;
}

void
ioh_pipe_edge_before_read(IohPipeEdge *edge)
{
    struct epoll_event ev[2];

    if (!edge || !edge->empty) {
        return;
    }
    /* EINTR or a timeout: the caller's wait on the pipe comes next either way. */
    (void)epoll_wait(edge->fd, ev, G_N_ELEMENTS(ev), IOH_PIPE_EDGE_MS);
}

void
ioh_pipe_edge_after_read(IohPipeEdge *edge, gssize n, gsize want)
{
    if (edge) {
        /* A read that got less than asked, or asked the pipe's size, emptied it. */
        edge->empty = n >= 0 && ((gsize)n < want || want >= edge->cap);
    }
}

void
ioh_pipe_edge_close(IohPipeEdge *edge)
{
    if (edge) {
        close(edge->fd);
        ioh_relay_close(&edge->relay);
    }
}
