/* ioh-strategy-ring.c - a reader thread fills a ring of buffers while the calling thread
 * writes them (ioh-ring.c): for every restore and for an O_DIRECT save, so that the disk
 * works on one part of the stream while the pipe moves the next (the stock
 * libvirt_iohelper reads, then writes: its disk idles while it reads the pipe). */
#include "ioh-layer.h"
#include "ioh-ring.h"

static gboolean
ring_run(IohCopy *c, GError **error)
{
    IohReader rd = { .c = c, .fd = c->src->fd, .direct = c->src->direct };

    return ioh_ring_run(c, &rd, 1, error);
}

const IohStrategy ioh_strategy_ring = {
    .name = "ring",
    .run = ring_run,
};
