/* ioh-sink-stream.c - the stream sink: writes the stream into a pipe (raised to the pipe
 * size), a socket or a character device. A reader gone away is EPIPE (SIGPIPE is the
 * caller's to ignore); a non-blocking fd handed to us waits in poll() with the copy's
 * cancel. Nothing to make durable. */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

static gboolean
stream_prepare(IohCopy *c, GError **error)
{
    (void)error;
    ioh_stream_raise_pipe(c, c->dst);
    return TRUE;
}

static gboolean
stream_write(IohCopy *c, const char *buf, gsize len, GError **error)
{
    while (len > 0) {
        gssize n = write(c->dst->fd, buf, len);

        c->stats->writes++;
        if (n > 0) {
            buf += n;
            len -= (gsize)n;
        } else if (n == 0) {
            return ioh_error_set_errno(error, EIO, "write", c->dst->name);
        } else if (!ioh_copy_retry(c, errno, c->dst->fd, POLLOUT, "write", c->dst->name,
                                   error)) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
stream_finish(IohCopy *c, GError **error)
{
    (void)c, (void)error;
    return TRUE;
}

const IohSinkClass ioh_sink_stream = {
    .name = "stream",
    .accepts = ioh_stream_accepts_any,
    .prepare = stream_prepare,
    .write = stream_write,
    .finish = stream_finish,
};
