/* iohwrap-uri.c - ioh_wrap_new_uri(): a wrap whose other end is a URI, not a file
 *
 * An NBD export (nbd://, nbds://, nbd+unix://, ...) or an RBD image (rbd:POOL/IMAGE...)
 * has no fd the caller could open: the helper connects to it itself (iohelper takes the
 * URI or name as IN or OUT, through its environment), and the wrap hands back the
 * caller's end of the data pipe as for a file. Everything after the spawn (progress,
 * finish, errors, checksum) is the file wrap's. The wrap's path, which every message
 * uses, is the URI without its secrets (ioh_nbd_safe_name(), as the helper's), or the
 * image's name without its options (ioh_rbd_safe_name()).
 */
#include "config.h"

#include "iohwrap.h"
#include "iohwrap-private.h"

#include "ioh-nbd-uri.h"
#include "ioh-rbd-name.h"

/* The helper's --connections and --stall-timeout bounds (helper/cli/ioh-args.c). */
#define URI_CONNECTIONS_MAX 16
#define URI_STALL_TIMEOUT_MAX 86400

static IohWrap *
uri_invalid(GError **error, const char *msg)
{
    g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID, "ioh_wrap_new_uri: %s", msg);
    return NULL;
}

/* An RBD image's name parses (the helper would refuse it as a usage error); connections
 * are NBD's. A restore needs no length: the image records the stream's. */
static gboolean
rbd_plan_check(const char *name, const IohWrapOptions *options, GError **error)
{
    g_auto(IohRbdName) parsed = { 0 };
    g_autoptr(GError) err = NULL;

    if (!ioh_rbd_name_parse(name, &parsed, &err)) {
        g_autofree char *msg = g_strdup_printf("not a valid RBD image name: %s", err->message);
        uri_invalid(error, msg);
        return FALSE;
    }
    if (options && options->connections) {
        uri_invalid(error, "connections apply to an NBD URI, not to an RBD image");
        return FALSE;
    }
    return TRUE;
}

/* What ioh_wrap_new_uri() goes on with: the values checked, no fd to look at. */
static gboolean
uri_plan(const char *uri, gboolean save, const IohWrapParams *params,
         const IohWrapOptions *options, IohwPlan *ret_plan, GError **error)
{
    static const IohWrapParams defaults = { 0 };
    gboolean rbd = uri && ioh_rbd_is_name(uri);

    if (!uri || (!ioh_nbd_is_uri(uri) && !rbd)) {
        uri_invalid(error, "not an NBD URI (nbd://, nbds://, nbd+unix://, nbd+vsock://) or "
                           "an RBD image (rbd:POOL/IMAGE)");
        return FALSE;
    }
    if (rbd && !rbd_plan_check(uri, options, error)) {
        return FALSE;
    }
    if (!params) {
        params = &defaults;
    }
    if (!iohw_check_params(params, error) || !iohw_options_check(options, save, TRUE, error)) {
        return FALSE;
    }
    if (params->offset + params->length > IOH_OFFSET_MAX) {
        uri_invalid(error, "offset + length ends past the largest offset the helper takes");
        return FALSE;
    }
    if (!save && !params->length && !rbd) {
        uri_invalid(error, "a restore from a URI needs params->length (an export has a "
                           "fixed size, larger than the stream)");
        return FALSE;
    }
    *ret_plan = (IohwPlan){
        .save = save,
        .mode = IOH_CACHE_BUFFERED,
        .offset = params->offset,
        .length = params->length,
        .start = params->offset,
        .interval_ms = ioh_limits_status_interval(params->progress_interval_ms),
    };
    return TRUE;
}

gboolean
iohw_uri_plan(const char *uri, gboolean save, const IohWrapParams *params,
              const IohWrapOptions *options, IohwPlan *ret_plan, char **ret_name,
              GError **error)
{
    if (!uri_plan(uri, save, params, options, ret_plan, error)) {
        return FALSE;
    }
    *ret_name = ioh_rbd_is_name(uri) ? ioh_rbd_safe_name(uri) : ioh_nbd_safe_name(uri);
    return TRUE;
}

IohWrap *
ioh_wrap_new_uri(const char *uri, gboolean save, int *ret_fd, const IohWrapParams *params,
                 const IohWrapOptions *options, GError **error)
{
    g_autofree char *name = NULL;
    IohWrap *wrap;
    IohwPlan plan;
    int fd = -1;

    if (!ret_fd) {
        return uri_invalid(error, "ret_fd must not be NULL");
    }
    if (!iohw_uri_plan(uri, save, params, options, &plan, &name, error)) {
        return NULL;
    }
    wrap = iohw_wrap_create(name, uri, &fd, &plan, options, error);
    if (wrap) {
        *ret_fd = fd;
    }
    return wrap;
}

gboolean
ioh_wrap_options_set_connections(IohWrapOptions *options, guint connections,
                                 GError **error)
{
    if (!options) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_connections: options must not be NULL");
        return FALSE;
    }
    if (connections > URI_CONNECTIONS_MAX) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_connections: %u connections is out of range "
                    "(1 to %d, or 0 for the helper's default)", connections,
                    URI_CONNECTIONS_MAX);
        return FALSE;
    }
    options->connections = connections;
    return TRUE;
}

gboolean
ioh_wrap_options_set_stall_timeout(IohWrapOptions *options, guint seconds, GError **error)
{
    if (!options || seconds > URI_STALL_TIMEOUT_MAX) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID,
                    "ioh_wrap_options_set_stall_timeout: %s", !options
                        ? "options must not be NULL"
                        : "seconds is out of range (1 to 86400, or 0 for none)");
        return FALSE;
    }
    options->stall_timeout = seconds;
    return TRUE;
}
