/* iohwrap-start.c - the one path of every constructor
 *
 * ioh_wrap_new(), ioh_wrap_new_full(), ioh_wrap_new_with_options() and ioh_wrap_new_uri()
 * check what they were given and come here: a new wrap, started with the helper (spawned,
 * then its ready line awaited: whatever it refuses up front is the constructor's error)
 * or without one (the caller's fd as it is).
 */
#include "config.h"

#include "iohwrap-private.h"

#include <fcntl.h>
#include <unistd.h>

/* How long the helper may take to say "ready" (it reads its config file and checks its
 * ends; nothing it waits for is an outside party): far beyond a loaded machine's start. */
#define READY_TIMEOUT_MS 30000

/* The caller's fd as it was, to put back when the helper (which shares its open file
 * description) refused to start: ioh_wrap_new() then leaves *fd untouched. */
typedef struct {
    int fd;
    int fl;
    off_t pos;
} FdState;

static FdState
fd_state_save(int fd)
{
    FdState st = { fd, -1, -1 };

    if (fd >= 0) {
        st.fl = fcntl(fd, F_GETFL);
        st.pos = lseek(fd, 0, SEEK_CUR);
    }
    return st;
}

static void
fd_state_restore(const FdState *st)
{
    if (st->fl >= 0 && fcntl(st->fd, F_GETFL) != st->fl) {
        (void)fcntl(st->fd, F_SETFL, st->fl);
    }
    if (st->pos >= 0) {
        (void)lseek(st->fd, st->pos, SEEK_SET);
    }
}

/* Waits for the helper's ready line (docs/protocol.md), before the caller hands QEMU
 * anything. A helper that does not start in time is killed. */
static gboolean
await_ready(IohWrap *wrap, const FdState *st, GError **error)
{
    gboolean timed_out = FALSE;

    if (iohw_monitor_wait_ready(wrap->monitor, READY_TIMEOUT_MS, &timed_out)) {
        return TRUE;
    }
    iohw_finish_failed_start(wrap, timed_out, error);
    if (timed_out) {
        g_prefix_error(error, "helper %s for %s did not start within %d s: ", wrap->helper,
                       wrap->path, READY_TIMEOUT_MS / 1000);
    }
    fd_state_restore(st);
    return FALSE;
}

/* The helper, ready: *@fd (the caller's file, closed: the wrap holds its own copy; -1 for
 * a URI) becomes the caller's end of the data pipe. */
static gboolean
start_helper(IohWrap *wrap, int *fd, const IohwPlan *plan, GError **error)
{
    FdState st = fd_state_save(*fd);

    if (!iohw_spawn(wrap, *fd, plan, error) || !await_ready(wrap, &st, error)) {
        return FALSE;
    }
    iohw_progress_watch(wrap);
    if (*fd >= 0) {
        close(*fd);
    }
    *fd = wrap->caller_fd;
    return TRUE;
}

/* The cache bypass, a pollable fd, the checksum and compression are the helper's: asking
 * for any of them spawns it; a URI has no fd the caller could use. */
static gboolean
needs_helper(const IohWrap *wrap, const IohwPlan *plan)
{
    const IohWrapOptions *o = wrap->options;

    return wrap->uri || wrap->stream_fd >= 0 ||
           (plan->flags & (IOH_WRAP_DIRECT | IOH_WRAP_FADVISE | IOH_WRAP_POLLABLE)) != 0 ||
           o->checksum || o->verify_checksum || iohw_options_compressing(o);
}

static IohWrap *
wrap_create(const char *name, const char *uri, int stream_fd, int *fd, const IohwPlan *plan,
            const IohWrapOptions *options, GError **error)
{
    IohWrap *wrap = iohw_wrap_new(name, *fd, plan);
    gboolean ok;

    wrap->uri = g_strdup(uri);
    wrap->stream_fd = stream_fd;
    wrap->options = iohw_options_copy(options);
    ok = needs_helper(wrap, plan) ? start_helper(wrap, fd, plan, error)
                                  : iohw_nohelper_start(wrap, *fd, plan, error);
    if (!ok) {
        /* Nothing runs: the state is NEW, or REAPED after a refused start. */
        iohw_unref(wrap);
        return NULL;
    }
    return wrap;
}

IohWrap *
iohw_wrap_create(const char *name, const char *uri, int *fd, const IohwPlan *plan,
                 const IohWrapOptions *options, GError **error)
{
    return wrap_create(name, uri, -1, fd, plan, options, error);
}

IohWrap *
iohw_wrap_create_stream(const char *name, int stream_fd, int *fd, const IohwPlan *plan,
                        const IohWrapOptions *options, GError **error)
{
    return wrap_create(name, NULL, stream_fd, fd, plan, options, error);
}

IohWrap *
iohw_wrap_create_uri_stream(const char *name, const char *uri, int stream_fd,
                            const IohwPlan *plan, const IohWrapOptions *options,
                            GError **error)
{
    int fd = -1;

    return wrap_create(name, uri, stream_fd, &fd, plan, options, error);
}
