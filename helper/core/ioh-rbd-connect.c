/* ioh-rbd-connect.c - connecting to a Ceph cluster, bounded and cancellable
 * (ioh-rbd-connect.h)
 *
 * Why a thread: rados_connect() has no asynchronous form and blocks until the monitors
 * answered or client_mount_timeout passed. Run here, it would hold SIGTERM's cancellation
 * for that long; in a thread, the caller waits in poll() on an eventfd the thread writes
 * and on the cancellable's fd, with a deadline a little past the timeout librados keeps.
 */
#include "ioh-rbd-connect.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-json.h"
#include "ioh-rbd-files.h"

typedef struct {
    rados_t cluster;
    int ret;
    int done;                /* eventfd written when rados_connect() returned */
    int keyring;             /* the keyring= file librados reads in rados_connect(), or -1 */
    gint refs;               /* the caller's and the thread's */
} ConnectJob;

static void
job_unref(ConnectJob *j)
{
    if (!g_atomic_int_dec_and_test(&j->refs)) {
        return;
    }
    /* the last one: the caller abandoned it (or it failed), the handle is nobody's */
    if (j->cluster) {
        rados_shutdown(j->cluster);
    }
    close(j->done);
    if (j->keyring >= 0) {
        close(j->keyring);
    }
    g_free(j);
}

static gpointer
connect_thread(gpointer data)
{
    ConnectJob *j = data;
    guint64 one = 1;

    j->ret = rados_connect(j->cluster);
    if (write(j->done, &one, sizeof(one)) < 0) {
        /* an eventfd counter cannot overflow from one write: nothing to do */
    }
    job_unref(j);
    return NULL;
}

gboolean
ioh_rbd_fail(GError **error, int ret, const char *what, const char *name, guint timeout_s)
{
    int errsv = ret < 0 ? -ret : EIO;

    switch (errsv) {
    case ETIMEDOUT:
        return ioh_error_set(error, errsv, what, name, "the cluster did not answer in %u s "
                             "(--stall-timeout; a full pool or OSD, or an OSD down)",
                             timeout_s ? timeout_s : IOH_RBD_DEFAULT_TIMEOUT_S);
    case EDQUOT:
        return ioh_error_set(error, errsv, what, name, "the pool is at its quota");
    case EACCES:
    case EPERM:
        return ioh_error_set(error, errsv, what, name, "%s (the user's capabilities, or "
                             "its key)", g_strerror(errsv));
    default:
        return ioh_error_set_errno(error, errsv, what, name);
    }
}

/* Sets @key to @value on @cluster; a refusal names the key (never a value). */
static gboolean
conf_set(rados_t cluster, const char *key, const char *value, const char *name,
         GError **error)
{
    int r = rados_conf_set(cluster, key, value);

    return r == 0 || ioh_error_set(error, -r, "connect", name, "cannot set %s: %s", key,
                                   g_strerror(-r));
}

/* A refusal of the conf or keyring file, its own error (it names the file) as cause. */
static gboolean
file_refused(GError **error, const char *name, const char *key, const char *path,
             const GError *err)
{
    return ioh_error_set(error, err->code, "connect", name, "%s=%s: %s", key,
                         path ? path : "(the default)", err->message);
}

/* Reads the name's conf (or the default one) from the fd the helper checked
 * (ioh-rbd-files.h: librados would open a FIFO or the working directory's ceph.conf). */
static gboolean
read_conf(rados_t cluster, const IohRbdName *n, const char *name, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = NULL;
    gboolean none = FALSE;
    int fd = ioh_rbd_conf_open(n->conf, &none, &err);
    int r;

    if (fd < 0) {
        return none || file_refused(error, name, "conf", n->conf, err);
    }
    path = ioh_rbd_fd_path(fd);
    r = rados_conf_read_file(cluster, path);
    close(fd);
    return r == 0 || ioh_error_set(error, -r, "connect", name, "cannot read conf=%s: %s",
                                   n->conf ? n->conf : "(the default)", g_strerror(-r));
}

/* The keyring= file opened and checked, handed to librados as /proc/self/fd/N: the fd
 * in *@ret_fd stays open until rados_connect() read it. */
static gboolean
set_keyring(rados_t cluster, const IohRbdName *n, const char *name, int *ret_fd,
            GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = NULL;

    *ret_fd = n->keyring ? ioh_rbd_keyring_open(n->keyring, &err) : -1;
    if (!n->keyring) {
        return TRUE;
    }
    if (*ret_fd < 0) {
        return file_refused(error, name, "keyring", n->keyring, err);
    }
    path = ioh_rbd_fd_path(*ret_fd);
    return conf_set(cluster, "keyring", path, name, error);
}

/* Zero-copy writes: librbd's default copies every write's buffer (so that a client
 * changing it in flight cannot make the data's CRC mismatch); ours are never touched
 * between rbd_aio_write and its completion (ioh-rbd.c hands a request's buffer out again
 * only once it completed, and a wedged end frees none), and librbd holds an AIO write's
 * completion back until it released the last reference to the caller's memory (its
 * UserBufferDeleter; a writeback cache, off here, would make it copy anyway). So the
 * copy, a memcpy of every byte saved on cores the OSD shares, is skipped (docs/rbd.md,
 * "Measured"). A librbd without the option copies, as before. */
static gboolean
zero_copy_writes(rados_t cluster, const char *name, GError **error)
{
    int r = rados_conf_set(cluster, "rbd_disable_zero_copy_writes", "false");

    return r == 0 || r == -ENOENT ||
           conf_set(cluster, "rbd_disable_zero_copy_writes", "false", name, error);
}

/* The handle's configuration: the name's conf, keyring (its fd in *@ret_keyring, -1
 * without one), the timeouts, no cache, zero-copy writes, no logs on stderr (the helper
 * prints one line). */
static gboolean
configure(rados_t cluster, const IohRbdName *n, guint timeout_s, const char *name,
          int *ret_keyring, GError **error)
{
    g_autofree char *secs = g_strdup_printf("%u", timeout_s);

    *ret_keyring = -1;
    if (!read_conf(cluster, n, name, error)) {
        return FALSE;
    }
    rados_conf_parse_env(cluster, NULL);
    return set_keyring(cluster, n, name, ret_keyring, error) &&
           conf_set(cluster, "client_mount_timeout", secs, name, error) &&
           conf_set(cluster, "rados_mon_op_timeout", secs, name, error) &&
           conf_set(cluster, "rados_osd_op_timeout", secs, name, error) &&
           conf_set(cluster, "rbd_cache", "false", name, error) &&
           zero_copy_writes(cluster, name, error) &&
           conf_set(cluster, "log_to_stderr", "false", name, error) &&
           conf_set(cluster, "err_to_stderr", "false", name, error);
}

/* rados_connect() in a thread, waited for until @timeout_s and a little more (librados
 * keeps client_mount_timeout itself) or @cancellable. */
static gboolean
connect_bounded(rados_t cluster, int keyring, guint timeout_s, GCancellable *cancellable,
                const char *name, GError **error)
{
    ConnectJob *j = g_new0(ConnectJob, 1);
    g_autoptr(GError) err = NULL;
    int ready, ret;

    j->cluster = cluster;
    j->refs = 2;
    j->keyring = keyring;
    j->done = eventfd(0, EFD_CLOEXEC);
    if (j->done < 0) {
        if (keyring >= 0) {
            close(keyring);
        }
        g_free(j);
        return ioh_error_set_errno(error, errno, "connect", name);
    }
    g_thread_unref(g_thread_new("rbd-connect", connect_thread, j));
    ready = ioh_fd_wait(j->done, POLLIN, cancellable, (int)(timeout_s + 5) * 1000, &err);
    if (ready <= 0) {
        /* the thread owns the handle now: it shuts it down when librados returns */
        job_unref(j);
        return ready == 0 ? ioh_rbd_fail(error, -ETIMEDOUT, "connect", name, timeout_s)
               : ioh_error_is_cancelled(err) ? ioh_error_set_cancelled(error, "connect", name)
               : ioh_error_set(error, EIO, "connect", name, "%s", err->message);
    }
    ret = j->ret;
    j->cluster = ret == 0 ? NULL : cluster;    /* on failure the last unref shuts it down */
    job_unref(j);
    return ret == 0 || ioh_rbd_fail(error, ret, "connect", name, timeout_s);
}

static gboolean
open_pool(rados_t cluster, const IohRbdName *n, const char *name, rados_ioctx_t *ret_io,
          GError **error)
{
    int r = rados_ioctx_create(cluster, n->pool, ret_io);

    if (r == -ENOENT) {
        return ioh_error_set(error, ENOENT, "connect", name, "pool %s does not exist",
                             n->pool);
    }
    if (r < 0) {
        return ioh_rbd_fail(error, r, "connect", name, 0);
    }
    rados_ioctx_set_namespace(*ret_io, n->ns);
    return TRUE;
}

gboolean
ioh_rbd_connect(const IohRbdName *n, guint timeout_s, GCancellable *cancellable,
                rados_t *ret_cluster, rados_ioctx_t *ret_io, GError **error)
{
    g_autofree char *name = NULL;
    rados_t cluster = NULL;
    int keyring = -1;
    int r;

    timeout_s = timeout_s ? timeout_s : IOH_RBD_DEFAULT_TIMEOUT_S;
    name = ioh_rbd_name_format(n);
    *ret_cluster = NULL;
    *ret_io = NULL;
    if (!ioh_rbd_dl_load(name, error)) {
        return FALSE;
    }
    r = rados_create(&cluster, n->id);
    if (r < 0) {
        return ioh_rbd_fail(error, r, "connect", name, timeout_s);
    }
    if (!configure(cluster, n, timeout_s, name, &keyring, error)) {
        if (keyring >= 0) {
            close(keyring);
        }
        rados_shutdown(cluster);
        return FALSE;
    }
    /* on failure the thread (or its last reference) has shut the handle down */
    if (!connect_bounded(cluster, keyring, timeout_s, cancellable, name, error)) {
        return FALSE;
    }
    if (!open_pool(cluster, n, name, ret_io, error)) {
        rados_shutdown(cluster);
        return FALSE;
    }
    *ret_cluster = cluster;
    return TRUE;
}

void
ioh_rbd_disconnect(rados_t cluster, rados_ioctx_t io)
{
    if (io) {
        rados_ioctx_destroy(io);
    }
    if (cluster) {
        rados_shutdown(cluster);
    }
}

/* The flags of @pool in the answer of "osd pool ls detail" (a JSON array of pools). */
static char *
pool_flags(const char *json, gsize len, const char *pool)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonNode *root;
    JsonArray *pools;

    if (!json_parser_load_from_data(parser, json, (gssize)len, NULL) ||
        !(root = json_parser_get_root(parser)) || !JSON_NODE_HOLDS_ARRAY(root)) {
        return NULL;
    }
    pools = json_node_get_array(root);
    for (guint i = 0; i < json_array_get_length(pools); i++) {
        JsonNode *node = json_array_get_element(pools, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        const char *name = ioh_json_get_string(o, "pool_name");

        if (name && g_str_equal(name, pool)) {
            return g_strdup(ioh_json_get_string(o, "flags_names"));
        }
    }
    return NULL;
}

char *
ioh_rbd_pool_full(rados_t cluster, const char *pool)
{
    const char *cmd[] = { "{\"prefix\": \"osd pool ls\", \"detail\": \"detail\", "
                          "\"format\": \"json\"}" };
    char *out = NULL, *status = NULL;
    size_t out_len = 0, status_len = 0;
    g_autofree char *flags = NULL;
    g_auto(GStrv) names = NULL;

    if (rados_mon_command(cluster, cmd, 1, "", 0, &out, &out_len, &status, &status_len) < 0) {
        return NULL;
    }
    flags = out ? pool_flags(out, out_len, pool) : NULL;
    rados_buffer_free(out);
    rados_buffer_free(status);
    names = g_strsplit(flags ? flags : "", ",", -1);
    if (g_strv_contains((const char *const *)names, "full_quota")) {
        return g_strdup_printf("the pool %s is at its quota", pool);
    }
    if (g_strv_contains((const char *const *)names, "full")) {
        return g_strdup_printf("the pool %s is full (an OSD reached its full ratio)", pool);
    }
    return NULL;
}
