/* iohwrap-monitor.c - reading what the helper says: the status pipe and stderr
 *
 * The status pipe carries the helper protocol (docs/protocol.md), read with helper/core's
 * IohProtocolReader: progress lines give the counters, the final line the result or the
 * error with its fields. The helper's stderr is drained so that it never blocks, and its
 * tail kept for a debug message; nothing parses it.
 */
#include "config.h"

#include "iohwrap-private.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-escape.h"
#include "ioh-fd.h"

#define STDERR_KEEP 4096    /* bytes of helper stderr kept for the debug log */

IohwMonitor *
iohw_monitor_new(const char *path, gboolean save, int status_fd, int err_fd)
{
    IohwMonitor *m = g_new0(IohwMonitor, 1);

    m->path = g_strdup(path);
    m->save = save;
    m->status_fd = status_fd;
    m->reader = ioh_protocol_reader_new();
    m->err_fd = err_fd;
    m->err_text = g_string_new(NULL);
    return m;
}

void
iohw_monitor_free(IohwMonitor *m)
{
    if (!m) {
        return;
    }
    ioh_fd_clear(&m->status_fd);
    ioh_fd_clear(&m->err_fd);
    g_clear_pointer(&m->reader, ioh_protocol_reader_free);
    g_clear_error(&m->final_error);
    g_free(m->checksum);
    g_free(m->encryption);
    g_string_free(m->err_text, TRUE);
    g_free(m->path);
    g_free(m);
}

/* One line of the protocol. Counters never go back; nothing counts after the final line
 * (a reader ignores what follows it). */
static void
apply_msg(IohwMonitor *m, const IohProtocolMsg *msg)
{
    g_autoptr(GError) err = NULL;

    if (m->got_final || (msg->kind != IOH_PROTOCOL_PROGRESS &&
                         msg->kind != IOH_PROTOCOL_READY && !ioh_protocol_msg_is_final(msg))) {
        return;
    }
    /* A helper of an older minor version has no ready line: its first progress line
     * says as much. */
    m->got_ready = m->got_ready || msg->kind == IOH_PROTOCOL_READY ||
                   msg->kind == IOH_PROTOCOL_PROGRESS;
    if (msg->kind == IOH_PROTOCOL_READY) {
        return;
    }
    m->written = MAX(m->written, msg->written);
    /* restore: nothing to sync; every byte in the pipe is delivered */
    m->synced = MAX(m->synced, m->save ? msg->synced : msg->written);
    m->stored = MAX(m->stored, msg->stored);
    if (msg->kind == IOH_PROTOCOL_RESULT) {
        m->got_result = TRUE;
        g_free(m->checksum);
        m->checksum = g_strdup(msg->checksum);
        g_free(m->encryption);
        m->encryption = g_strdup(msg->encryption);
    } else if (msg->kind == IOH_PROTOCOL_ERROR) {
        err = ioh_protocol_msg_to_error(msg);
        m->final_error = ioh_error_new_from(IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED, err);
        /* The message is for people: one line, as the helper printed it on stderr. The
         * path field keeps its bytes. */
        ioh_escape_line_in_place(m->final_error->message);
    }
    m->got_final = ioh_protocol_msg_is_final(msg);
}

static void
take_msgs(IohwMonitor *m)
{
    for (;;) {
        g_auto(IohProtocolMsg) msg = { 0 };
        g_autoptr(GError) err = NULL;
        int got = ioh_protocol_reader_next(m->reader, &msg, &err);

        if (got == 0) {
            return;
        }
        if (got < 0) {
            g_debug("helper for %s: status line skipped: %s", m->path, err->message);
            continue;
        }
        apply_msg(m, &msg);
    }
}

/* One read() of a non-blocking pipe: > 0 bytes, 0 when nothing is pending, -1 at its
 * end (end of file, or an error that ends it). */
static gssize
read_some(int fd, char *buf, gsize len)
{
    for (;;) {
        gssize n = read(fd, buf, len);

        if (n > 0) {
            return n;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

static void
end_status(IohwMonitor *m)
{
    g_autoptr(GError) err = NULL;

    m->status_eof = TRUE;
    if (!ioh_protocol_reader_finish(m->reader, &err)) {
        g_debug("helper for %s: %s", m->path, err->message);
    }
}

static void
take_status(IohwMonitor *m, const char *buf, gsize len)
{
    ioh_protocol_reader_feed(m->reader, buf, len);
    take_msgs(m);
}

static void
take_err(IohwMonitor *m, const char *buf, gsize len)
{
    g_string_append_len(m->err_text, buf, (gssize)len);
    if (m->err_text->len > STDERR_KEEP) {
        /* keep the tail: the helper's last line is the one worth a look */
        g_string_erase(m->err_text, 0, (gssize)(m->err_text->len - STDERR_KEEP));
    }
}

/* Hands what is pending on @fd to @take; TRUE once the pipe has ended. */
static gboolean
read_pipe(IohwMonitor *m, int fd, void (*take)(IohwMonitor *, const char *, gsize))
{
    char buf[4096];

    for (;;) {
        gssize n = read_some(fd, buf, sizeof(buf));

        if (n <= 0) {
            return n < 0;
        }
        take(m, buf, (gsize)n);
    }
}

void
iohw_monitor_read_status(IohwMonitor *m)
{
    if (!m->status_eof && read_pipe(m, m->status_fd, take_status)) {
        end_status(m);
    }
}

void
iohw_monitor_read_err(IohwMonitor *m)
{
    if (!m->err_eof && read_pipe(m, m->err_fd, take_err)) {
        m->err_eof = TRUE;
    }
}

/* The pipes not at their end, to poll. */
static nfds_t
open_pipes(const IohwMonitor *m, struct pollfd p[2])
{
    nfds_t n = 0;

    if (!m->status_eof) {
        p[n++] = (struct pollfd){ .fd = m->status_fd, .events = POLLIN };
    }
    if (!m->err_eof) {
        p[n++] = (struct pollfd){ .fd = m->err_fd, .events = POLLIN };
    }
    return n;
}

void
iohw_monitor_read_to_eof(IohwMonitor *m, GMutex *lock)
{
    while (!m->status_eof || !m->err_eof) {
        struct pollfd p[2];
        nfds_t n = open_pipes(m, p);

        g_mutex_unlock(lock);
        if (poll(p, n, -1) < 0 && errno != EINTR) {
            g_mutex_lock(lock);
            return;
        }
        g_mutex_lock(lock);
        iohw_monitor_read_status(m);
        iohw_monitor_read_err(m);
    }
}

gboolean
iohw_monitor_wait_ready(IohwMonitor *m, int timeout_ms, gboolean *ret_timed_out)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

    *ret_timed_out = FALSE;
    for (;;) {
        struct pollfd p[2];
        nfds_t n;
        gint64 left;

        iohw_monitor_read_status(m);
        iohw_monitor_read_err(m);
        if (m->got_final && !m->got_ready) {
            return FALSE;    /* it refused to start, and said why */
        }
        if (m->got_ready || m->status_eof) {
            return TRUE;     /* started, or speaks no protocol: the finish will tell */
        }
        n = open_pipes(m, p);
        left = (deadline - g_get_monotonic_time()) / 1000;
        if (left <= 0 || (poll(p, n, (int)left) < 0 && errno != EINTR)) {
            *ret_timed_out = TRUE;    /* (or poll failed): the helper may be running */
            return FALSE;
        }
    }
}
