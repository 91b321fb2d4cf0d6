/* ioh-relay.h - the relay pipe of a save from a pipe (the io_uring strategy's reads and
 * the ring's reader, ioh-source-stream.c): the producer's pipe emptied by a splice into a
 * pipe of the helper's own, read from there (ioh-relay.c) */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    int fd[2];       /* the relay pipe's read and write ends; -1 when there is none */
    gsize held;      /* bytes in it, not read yet */
} IohRelay;

/* Opens the relay pipe, raised towards @size bytes. FALSE when it cannot be had (the
 * pipe quota, IOHELPER_URING_RELAY=off): then the producer's pipe is read directly. */
gboolean ioh_relay_open(IohRelay *r, gsize size);

/* Moves up to @len bytes of pipe @src into the relay without waiting: the bytes moved,
 * 0 at the end of the stream, or -errno (-EAGAIN: @src is empty). */
gssize ioh_relay_fill(IohRelay *r, int src, gsize len);

/* Closes the relay pipe (NULL and a closed one accepted). */
void ioh_relay_close(IohRelay *r);

G_END_DECLS
