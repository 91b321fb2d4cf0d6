/* qg-signals.c - SIGINT and SIGTERM cancel qemu-iohelper's job (qg-signals.h) */
#include "qg-signals.h"

#include <signal.h>
#include <glib-unix.h>

struct _QgSignalWatch {
    GCancellable *cancellable;
    GMainContext *ctx;
    GMainLoop *loop;
    GThread *thread;
};

static gboolean
on_signal(gpointer data)
{
    g_debug("signal: cancelling the job");
    g_cancellable_cancel(data);
    return G_SOURCE_REMOVE;
}

static gpointer
signal_thread(gpointer data)
{
    QgSignalWatch *sw = data;

    g_main_context_push_thread_default(sw->ctx);
    g_main_loop_run(sw->loop);
    g_main_context_pop_thread_default(sw->ctx);
    return NULL;
}

static void
signal_watch_add(QgSignalWatch *sw, int signum)
{
    g_autoptr(GSource) src = g_unix_signal_source_new(signum);

    g_source_set_callback(src, on_signal, sw->cancellable, NULL);
    g_source_attach(src, sw->ctx);
}

QgSignalWatch *
qg_signal_watch_new(void)
{
    QgSignalWatch *sw = g_new0(QgSignalWatch, 1);

    sw->cancellable = g_cancellable_new();
    sw->ctx = g_main_context_new();
    sw->loop = g_main_loop_new(sw->ctx, FALSE);
    signal_watch_add(sw, SIGINT);
    signal_watch_add(sw, SIGTERM);
    sw->thread = g_thread_new("signals", signal_thread, sw);
    return sw;
}

static gboolean
quit_loop(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_REMOVE;
}

void
qg_signal_watch_free(QgSignalWatch *sw)
{
    if (!sw) {
        return;
    }
    g_main_context_invoke(sw->ctx, quit_loop, sw->loop);
    g_thread_join(sw->thread);
    g_main_loop_unref(sw->loop);
    g_main_context_unref(sw->ctx);
    g_object_unref(sw->cancellable);
    g_free(sw);
}

GCancellable *
qg_signal_watch_cancellable(const QgSignalWatch *sw)
{
    return sw->cancellable;
}
