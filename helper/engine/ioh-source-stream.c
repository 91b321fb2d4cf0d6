/* ioh-source-stream.c - the stream source: reads the stream from a pipe (raised to the
 * pipe size), a socket or a character device, as it comes. With a writer thread beside
 * the reader, a read waits in poll() on the stream and the copy's cancel, so that a
 * producer that stays silent cannot hold the copy once the writer has failed. */
#include "ioh-layer.h"
#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

static gboolean
stream_accepts(const IohEnd *end)
{
    (void)end;
    return TRUE;
}

static gboolean
stream_prepare(IohCopy *c, GError **error)
{
    g_autoptr(GError) err = NULL;
    int mode = 0;

    if (c->src->kind == IOH_KIND_PIPE && c->opts->pipe_size > 0) {
        int got = ioh_pipe_raise(c->src->fd, c->opts->pipe_size);
        g_debug("%s: pipe size %d (asked %u)", c->src->name, got, c->opts->pipe_size);
    }
    /* Only an fd open for reading: poll would wait forever for POLLIN on a write-only fd,
     * where read() fails at once with EBADF. */
    (void)error;
    c->poll_src = ioh_fd_access_mode(c->src->fd, &mode, NULL, &err) &&
                  (mode == O_RDONLY || mode == O_RDWR);
    return TRUE;
}

static gssize
stream_read(IohReader *rd, char *buf, gsize len, gint64 pos, GError **error)
{
    IohCopy *c = rd->c;
    gsize have = 0;

    (void)pos;
    while (have < len) {
        gssize n;

        if (c->poll_src && c->cancel &&
            !ioh_copy_wait(c, rd->fd, POLLIN, "read", c->src->name, error)) {
            return -1;
        }
        n = read(rd->fd, buf + have, len - have);
        ioh_copy_count_read(c);
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
    .accepts = stream_accepts,
    .prepare = stream_prepare,
    .read = stream_read,
    .finish = stream_finish,
};
