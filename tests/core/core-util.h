/* core-util.h - plumbing of the core's tests: pipes and threads that act on them later */
#pragma once

#include <gio/gio.h>

#include "ioh-test.h"

G_BEGIN_DECLS

/* A pipe, both ends O_CLOEXEC, @nonblock on both ends, F_SETPIPE_SZ @size (0: default). */
void coret_pipe(int fds[2], gboolean nonblock, int size);

/* Writes into @fd (non-blocking) until the pipe is full; returns the bytes written. */
gsize coret_fill(int fd);

/* Starts a thread that sleeps @delay_ms, then reads @fd until end of file into a buffer
 * that coret_drain_join() returns (and closes @fd). */
typedef struct CoretDrain CoretDrain;
CoretDrain *coret_drain_start(int fd, guint delay_ms);
GByteArray *coret_drain_join(CoretDrain *d);

/* Starts a thread that sleeps @delay_ms, then writes @len bytes of @data into @fd in
 * pieces of 1, 2, ... 4093 bytes (whatever makes short reads likely), then closes @fd.
 * Join with ioht_pump_join(). */
IohtPump *coret_feed_start(int fd, const guint8 *data, gsize len, guint delay_ms);

/* Cancels @c from another thread after @delay_ms. Join the returned thread. */
GThread *coret_cancel_later(GCancellable *c, guint delay_ms);

/* @len bytes of deterministic pseudo-random data. */
guint8 *coret_random(gsize len, guint32 seed);

/* Resident memory of this process, bytes (from /proc/self/status). */
guint64 coret_rss(void);

G_END_DECLS
