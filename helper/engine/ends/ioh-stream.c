/* ioh-stream.c - a stream end (pipe, socket, char device) before a copy: shared by the
 * stream source and the stream sink, as ioh-storage.c is by the file layers */
#include "ioh-layer.h"
#include "ioh-pipe.h"

gboolean
ioh_stream_accepts_any(const IohEnd *end)
{
    (void)end;
    return TRUE;
}

void
ioh_stream_raise_pipe(IohCopy *c, IohEnd *end)
{
    if (end->kind == IOH_KIND_PIPE && c->opts->pipe_size > 0) {
        int got = ioh_pipe_raise(end->fd, c->opts->pipe_size);
        g_debug("%s: pipe size %d (asked %u)", end->name, got, c->opts->pipe_size);
    }
}
