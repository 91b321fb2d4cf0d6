/* ioh-source-stream.c - the stream source: reads the stream from a pipe (raised to the
 * pipe size), a socket or a character device, as it comes. With a writer thread beside
 * the reader, a read waits in poll() on the stream and the copy's cancel, so that a
 * producer that stays silent cannot hold the copy once the writer has failed. */
#include "ioh-layer.h"
#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-pipe-edge.h"
#include "ioh-relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

static gboolean
stream_prepare(IohCopy *c, GError **error)
{
    g_autoptr(GError) err = NULL;
    int mode = 0;

    ioh_stream_raise_pipe(c, c->src);
    /* Only an fd open for reading: poll would wait forever for POLLIN on a write-only fd,
     * where read() fails at once with EBADF. */
    (void)error;
    c->poll_src = ioh_fd_access_mode(c->src->fd, &mode, NULL, &err) &&
                  (mode == O_RDONLY || mode == O_RDWR);
    return TRUE;
}

/* Through the relay pipe: up to @len bytes of what the relay holds into @buf, after a
 * splice of what the producer's pipe holds when the relay is empty. The bytes read, 0 at
 * the end of the stream, -1 with @error set. */
static gssize
relay_read(IohReader *rd, IohRelay *r, char *buf, gsize len, GError **error)
{
    IohCopy *c = rd->c;

    while (r->held == 0) {
        gssize m;

        ioh_pipe_edge_before_read(c->edge);
        if (c->poll_src && c->cancel &&
            !ioh_copy_wait(c, rd->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
        m = ioh_relay_fill(r, rd->fd, len);
        ioh_copy_count_read(c);
        ioh_pipe_edge_after_read(c->edge, m, len);
        if (m == 0) {
            return 0;
        }
        if (m < 0 && !ioh_copy_retry(c, (int)-m, rd->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
    }
    for (;;) {
        gssize n = read(r->fd[0], buf, MIN(len, r->held));

        if (n > 0) {
            r->held -= (gsize)n;
            return n;
        }
        if (n == 0 || errno != EINTR) {
            /* the relay is ours: it ends only where the splice said it holds bytes */
            ioh_error_set_errno(error, n == 0 ? EIO : errno, "read", c->src->name);
            return -1;
        }
    }
}

static gssize
stream_read(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error)
{
    IohCopy *c = rd->c;
    gsize have = 0;

    (void)pos;
    if (c->edge && c->edge->relay.fd[0] >= 0) {
        while (have < len) {
            gssize n = relay_read(rd, &c->edge->relay, buf + have, len - have, error);

            if (n < 0) {
                return -1;
            }
            if (n == 0) {
                break;
            }
            have += (gsize)n;
        }
        return (gssize)have;
    }
    while (have < len) {
        gssize n;

        ioh_pipe_edge_before_read(c->edge);
        if (c->poll_src && c->cancel &&
            !ioh_copy_wait(c, rd->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
        n = read(rd->fd, buf + have, len - have);
        ioh_copy_count_read(c);
        ioh_pipe_edge_after_read(c->edge, n, len - have);
        if (n > 0) {
            have += (gsize)n;
        } else if (n == 0) {
            break;
        } else if (!ioh_copy_retry(c, errno, rd->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
    }
    return (gssize)have;
}

static void
stream_finish(IohCopy *c)
{
    (void)c;
}

const IohSourceClass ioh_source_stream = {
    .name = "stream",
    .accepts = ioh_stream_accepts_any,
    .prepare = stream_prepare,
    .read = stream_read,
    .finish = stream_finish,
};
