/* ioh-relay.c - the relay pipe of a save from a pipe (ioh-relay.h)
 *
 * Why: a pipe has one lock for both ends, and a read holds it for the whole copy out of
 * the pipe and for freeing each page the producer filled. A producer (QEMU) that comes
 * back with its next write meanwhile spins on that lock (mutex_spin_on_owner) until the
 * read ends: with a reader that reads the pipe itself the producer spent over twice the
 * CPU it spends under the stock helper, which reads only while the producer sleeps on a
 * full pipe (benchmarks/results/cpu-save.md, docs/engine.md). A splice from
 * pipe to pipe moves the pages' references and copies nothing, so it holds the
 * producer's lock only for moments; the copy and the page frees then happen in the
 * relay, a pipe nobody else touches.
 */
#include "ioh-relay.h"
#include "ioh-pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

gboolean
ioh_relay_open(IohRelay *r, gsize size)
{
    const char *env = g_getenv("IOHELPER_URING_RELAY");

    r->fd[0] = r->fd[1] = -1;
    r->held = 0;
    if (env && g_str_equal(env, "off")) {
        return FALSE;
    }
    if (!ioh_pipe_open(r->fd, O_NONBLOCK, (guint)MIN(size, G_MAXUINT), NULL)) {
        r->fd[0] = r->fd[1] = -1;
        return FALSE;
    }
    return TRUE;
}

gssize
ioh_relay_fill(IohRelay *r, int src, gsize len)
{
    ssize_t n;

    do {
        n = splice(src, NULL, r->fd[1], NULL, len, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    r->held += (gsize)n;
    return n;
}

void
ioh_relay_close(IohRelay *r)
{
    if (!r) {
        return;
    }
    for (guint i = 0; i < 2; i++) {
        if (r->fd[i] >= 0) {
            close(r->fd[i]);
            r->fd[i] = -1;
        }
    }
    r->held = 0;
}
