/* qg-signals.h - SIGINT and SIGTERM cancel qemu-iohelper's job (qg-signals.c)
 *
 * SIGINT and SIGTERM cancel the job (it then undoes itself and we exit 1); a second one
 * kills: the source is removed on the first, and GLib puts back the default action. The
 * sources live in a context of their own, run by a thread of their own, since the job
 * blocks the main thread.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _QgSignalWatch QgSignalWatch;

/* Starts watching SIGINT and SIGTERM (a thread of its own). */
QgSignalWatch *qg_signal_watch_new(void);

/* Cancelled by the first SIGINT or SIGTERM. */
GCancellable *qg_signal_watch_cancellable(const QgSignalWatch *sw);

/* Stops the thread (NULL: nothing). */
void qg_signal_watch_free(QgSignalWatch *sw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgSignalWatch, qg_signal_watch_free)

G_END_DECLS
