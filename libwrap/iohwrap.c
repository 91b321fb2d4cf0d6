/* iohwrap.c - wrap a save/restore fd behind the iohelper process when needed
 *
 * The public entry points that are not the finish: ioh_wrap_new() and the two that grew
 * out of it (checks, then the one path of every constructor, iohwrap-start.c), the
 * accessors and ioh_wrap_free(). The top of libwrap: the other jobs are in their own
 * files, below this one (iohwrap-private.h draws the layers). What happened is
 * read from the helper's status pipe, the helper protocol (docs/protocol.md); its stderr
 * is kept for a debug message only, and nothing parses it.
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-private.h"


IohWrap *
ioh_wrap_new_with_options(int *fd, const char *path, IohWrapFlags flags,
                          const IohWrapParams *params, const IohWrapOptions *options,
                          GError **error)
{
    IohwPlan plan;

    if (!fd) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_new: fd must not be NULL");
        return NULL;
    }
    /* Everything the helper would refuse, refused now: nothing is touched before. */
    if (!iohw_check_new(*fd, path, flags, params, &plan, error) ||
        !iohw_options_check(options, plan.save, FALSE, error)) {
        return NULL;
    }
    return iohw_wrap_create(path, NULL, fd, &plan, options, error);
}

IohWrap *
ioh_wrap_new_full(int *fd, const char *path, IohWrapFlags flags,
                  const IohWrapParams *params, const char *checksum,
                  const char *verify_checksum, GError **error)
{
    g_autoptr(IohWrapOptions) options = ioh_wrap_options_new();

    if (!fd) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_new: fd must not be NULL");
        return NULL;
    }
    /* The order of the checks of 0.2: the fd and parameters first, then the checksum. */
    if (!iohw_check_new(*fd, path, flags, params, &(IohwPlan){ 0 }, error) ||
        !ioh_wrap_options_set_checksum(options, checksum, error) ||
        !ioh_wrap_options_set_verify_checksum(options, verify_checksum, error)) {
        return NULL;
    }
    return ioh_wrap_new_with_options(fd, path, flags, params, options, error);
}

IohWrap *
ioh_wrap_new(int *fd, const char *path, IohWrapFlags flags, const IohWrapParams *params,
             GError **error)
{
    return ioh_wrap_new_full(fd, path, flags, params, NULL, NULL, error);
}

const char *
ioh_wrap_get_checksum(IohWrap *wrap)
{
    const char *sum = NULL;

    if (wrap) {
        g_mutex_lock(&wrap->lock);
        if (wrap->state == IOHW_STATE_REAPED && !wrap->result) {
            sum = wrap->monitor->checksum;
        }
        g_mutex_unlock(&wrap->lock);
    }
    return sum;
}

/* Whether @wrap (NULL allowed) has a helper, spawned or reaped. */
static gboolean
has_helper(IohWrap *wrap)
{
    gboolean helper = FALSE;

    if (wrap) {
        g_mutex_lock(&wrap->lock);
        helper = iohw_state_has_helper(wrap->state);
        g_mutex_unlock(&wrap->lock);
    }
    return helper;
}

gboolean
ioh_wrap_is_spawned(IohWrap *wrap)
{
    return has_helper(wrap);
}

GPid
ioh_wrap_get_pid(IohWrap *wrap)
{
    return has_helper(wrap) ? wrap->pid : 0;
}

void
ioh_wrap_set_progress_func(IohWrap *wrap, IohWrapProgressFunc func, gpointer user_data,
                           GDestroyNotify notify)
{
    g_autoptr(IohwProgressCb) old = NULL;

    if (!wrap) {
        /* A programmer error, reported as GLib does; the data was handed over all the
         * same, and nothing will hold it: give it back now. */
        if (notify) {
            notify(user_data);
        }
        g_return_if_fail(wrap != NULL);
        return;
    }
    g_mutex_lock(&wrap->lock);
    old = wrap->progress;
    wrap->progress = func || notify ? iohw_progress_cb_new(func, user_data, notify) : NULL;
    wrap->told_written = wrap->told_synced = 0;
    g_mutex_unlock(&wrap->lock);
}

void
ioh_wrap_get_progress(IohWrap *wrap, guint64 *ret_written, guint64 *ret_synced)
{
    guint64 w = 0, s = 0;

    if (wrap) {
        g_mutex_lock(&wrap->lock);
        if (iohw_state_has_helper(wrap->state)) {
            iohw_monitor_read_status(wrap->monitor);
            w = wrap->monitor->written;
            s = wrap->monitor->synced;
        }
        g_mutex_unlock(&wrap->lock);
    }
    if (ret_written) {
        *ret_written = w;
    }
    if (ret_synced) {
        *ret_synced = s;
    }
}

void
ioh_wrap_free(IohWrap *wrap)
{
    g_autoptr(IohwProgressCb) progress = NULL;
    gboolean pending;

    if (!wrap) {
        return;
    }
    g_mutex_lock(&wrap->lock);
    iohw_finish_close_caller_locked(wrap);
    pending = wrap->task != NULL;
    if (wrap->child_source) {
        g_source_destroy(wrap->child_source);
    }
    iohw_finish_abandon_locked(wrap);
    if (wrap->status_source) {
        g_source_destroy(wrap->status_source);
    }
    if (wrap->err_source) {
        g_source_destroy(wrap->err_source);
    }
    progress = g_steal_pointer(&wrap->progress);
    g_mutex_unlock(&wrap->lock);
    if (pending) {
        iohw_finish_complete_task(wrap);
    }
    g_clear_pointer(&progress, iohw_progress_cb_unref);
    iohw_unref(wrap);
}

/* ---- the result's byte counts (0.3) ------------------------------------------------ */

/* The final counters of a successful finish: the stream and the storage side. */
static void
result_bytes(IohWrap *wrap, guint64 *ret_stream, guint64 *ret_stored)
{
    *ret_stream = *ret_stored = 0;
    if (wrap) {
        g_mutex_lock(&wrap->lock);
        if (wrap->state == IOHW_STATE_REAPED && !wrap->result && wrap->monitor->got_result) {
            *ret_stream = wrap->monitor->written;
            *ret_stored = wrap->monitor->stored;
        }
        g_mutex_unlock(&wrap->lock);
    }
}

guint64
ioh_wrap_get_stream_bytes(IohWrap *wrap)
{
    guint64 stream, stored;

    result_bytes(wrap, &stream, &stored);
    return stream;
}

guint64
ioh_wrap_get_stored_bytes(IohWrap *wrap)
{
    guint64 stream, stored;

    result_bytes(wrap, &stream, &stored);
    return stored;
}
