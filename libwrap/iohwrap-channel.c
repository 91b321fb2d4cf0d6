/* iohwrap-channel.c - ioh_wrap_new_channel(): one channel of a parallel migration
 *
 * QEMU's multifd opens N+1 connections (the main channel and N channels). A management
 * daemon accepts (save) or makes (restore) them itself, and wraps each with its own
 * helper: the helper reads the connection (save) or writes it (restore) directly, with
 * no pipe of ours between, and writes (reads) its own region of the image file, which
 * ioh_wrap_options_set_region() bounds. Everything after the spawn (progress, finish,
 * errors, checksum, compression) is the file wrap's. docs/channels.md has the image.
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-private.h"

#include <fcntl.h>
#include <sys/stat.h>

static IohWrap *
channel_invalid(GError **error, IohWrapError code, const char *fmt, int fd)
{
    g_set_error(error, IOH_WRAP_ERROR, code, fmt, fd);
    return NULL;
}

/* A connection or a pipe, open in the direction the helper uses it. */
static gboolean
check_stream(int stream_fd, gboolean save, GError **error)
{
    struct stat st;
    int fl;

    if (stream_fd < 0 || fstat(stream_fd, &st) < 0 || (fl = fcntl(stream_fd, F_GETFL)) < 0) {
        channel_invalid(error, IOH_WRAP_ERROR_BADFD,
                        "ioh_wrap_new_channel: stream fd %d is not open", stream_fd);
        return FALSE;
    }
    if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode)) {
        channel_invalid(error, IOH_WRAP_ERROR_BADFD,
                        "ioh_wrap_new_channel: stream fd %d is neither a socket nor a pipe",
                        stream_fd);
        return FALSE;
    }
    if ((fl & O_ACCMODE) == (save ? O_WRONLY : O_RDONLY)) {
        channel_invalid(error, IOH_WRAP_ERROR_BADFD,
                        save ? "ioh_wrap_new_channel: stream fd %d is not open for reading"
                             : "ioh_wrap_new_channel: stream fd %d is not open for writing",
                        stream_fd);
        return FALSE;
    }
    return TRUE;
}

IohWrap *
ioh_wrap_new_channel(int stream_fd, int *fd, const char *path, IohWrapFlags flags,
                     const IohWrapParams *params, const IohWrapOptions *options,
                     GError **error)
{
    IohwPlan plan;

    if (!fd) {
        return channel_invalid(error, IOH_WRAP_ERROR_INVALID,
                               "ioh_wrap_new_channel: fd must not be NULL%.0d", 0);
    }
    if (!iohw_check_new(*fd, path, flags, params, &plan, error) ||
        !iohw_options_check(options, plan.save, FALSE, error) ||
        !check_stream(stream_fd, plan.save, error)) {
        return NULL;
    }
    if (options && options->region && !plan.save) {
        return channel_invalid(error, IOH_WRAP_ERROR_INVALID,
                               "ioh_wrap_new_channel: a region is for a save%.0d", 0);
    }
    return iohw_wrap_create_stream(path, stream_fd, fd, &plan, options, error);
}

IohWrap *
ioh_wrap_new_channel_uri(int stream_fd, const char *uri, gboolean save,
                         const IohWrapParams *params, const IohWrapOptions *options,
                         GError **error)
{
    g_autofree char *name = NULL;
    IohwPlan plan;

    if (!iohw_uri_plan(uri, save, params, options, &plan, &name, error) ||
        !check_stream(stream_fd, save, error)) {
        return NULL;
    }
    return iohw_wrap_create_uri_stream(name, uri, stream_fd, &plan, options, error);
}

gboolean
ioh_wrap_options_set_region(IohWrapOptions *options, guint64 size, GError **error)
{
    if (!options) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_region: options must not be NULL");
        return FALSE;
    }
    if (size > IOH_OFFSET_MAX) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_region: size %" G_GUINT64_FORMAT
                    " is too large (at most %" G_GUINT64_FORMAT ")", size,
                    (guint64)IOH_OFFSET_MAX);
        return FALSE;
    }
    options->region = size;
    return TRUE;
}
