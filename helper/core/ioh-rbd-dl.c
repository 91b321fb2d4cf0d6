/* ioh-rbd-dl.c - librados and librbd, loaded when an RBD end is first used
 *
 * Why not linked: loading librbd (and the libceph-common it pulls in, its C++ static
 * constructors) made every iohelper 15.6 MiB larger resident (26.5 against 10.9 MiB for
 * --version), RBD end or not: tests/helper/test-memory.c's bound on a helper's memory
 * failed. So the library calls the RBD code makes are defined here, each forwarding to
 * the library's own, found with dlopen()/dlsym() by ioh_rbd_dl_load() (ioh_rbd_connect()
 * calls it first; nothing calls these before a connection). The prototypes are librados.h's
 * and librbd.h's, so a mismatch does not compile. Debian's librbd1 and librados2 are then
 * run-time dependencies of the RBD ends only.
 */
#include "ioh-rbd-connect.h"

#include <dlfcn.h>
#include <errno.h>

#include "ioh-error.h"

/* X(return type, name, parameters, arguments) for every call the RBD code makes; V(...)
 * for those that return nothing. */
#define IOH_RBD_CALLS(X, V)                                                                  \
    X(int, rados_create, (rados_t *c, const char *const id), (c, id))                        \
    X(int, rados_conf_read_file, (rados_t c, const char *path), (c, path))                   \
    X(int, rados_conf_parse_env, (rados_t c, const char *var), (c, var))                     \
    X(int, rados_conf_set, (rados_t c, const char *o, const char *v), (c, o, v))             \
    X(int, rados_connect, (rados_t c), (c))                                                  \
    V(rados_shutdown, (rados_t c), (c))                                                      \
    X(int, rados_ioctx_create, (rados_t c, const char *p, rados_ioctx_t *io), (c, p, io))    \
    V(rados_ioctx_set_namespace, (rados_ioctx_t io, const char *ns), (io, ns))               \
    V(rados_ioctx_destroy, (rados_ioctx_t io), (io))                                         \
    X(int, rados_mon_command, (rados_t c, const char **cmd, size_t n, const char *in,        \
                               size_t inlen, char **out, size_t *outlen, char **outs,        \
                               size_t *outslen),                                             \
      (c, cmd, n, in, inlen, out, outlen, outs, outslen))                                    \
    V(rados_buffer_free, (char *buf), (buf))                                                 \
    X(int, rbd_open, (rados_ioctx_t io, const char *n, rbd_image_t *i, const char *s),       \
      (io, n, i, s))                                                                         \
    X(int, rbd_open_read_only, (rados_ioctx_t io, const char *n, rbd_image_t *i,             \
                                const char *s), (io, n, i, s))                               \
    X(int, rbd_create, (rados_ioctx_t io, const char *n, uint64_t size, int *order),         \
      (io, n, size, order))                                                                  \
    X(int, rbd_close, (rbd_image_t i), (i))                                                  \
    X(int, rbd_stat, (rbd_image_t i, rbd_image_info_t *info, size_t len), (i, info, len))    \
    X(int, rbd_resize, (rbd_image_t i, uint64_t size), (i, size))                            \
    X(int, rbd_metadata_get, (rbd_image_t i, const char *k, char *v, size_t *len),           \
      (i, k, v, len))                                                                        \
    X(int, rbd_metadata_set, (rbd_image_t i, const char *k, const char *v), (i, k, v))       \
    X(int, rbd_metadata_remove, (rbd_image_t i, const char *k), (i, k))                      \
    X(int, rbd_aio_create_completion, (void *arg, rbd_callback_t cb, rbd_completion_t *c),   \
      (arg, cb, c))                                                                          \
    V(rbd_aio_release, (rbd_completion_t c), (c))                                            \
    X(ssize_t, rbd_aio_get_return_value, (rbd_completion_t c), (c))                          \
    X(int, rbd_aio_write, (rbd_image_t i, uint64_t off, size_t len, const char *buf,         \
                           rbd_completion_t c), (i, off, len, buf, c))                       \
    X(int, rbd_aio_read, (rbd_image_t i, uint64_t off, size_t len, char *buf,                \
                          rbd_completion_t c), (i, off, len, buf, c))                        \
    X(int, rbd_aio_flush, (rbd_image_t i, rbd_completion_t c), (i, c))                       \
    X(ssize_t, rbd_write, (rbd_image_t i, uint64_t off, size_t len, const char *buf),        \
      (i, off, len, buf))                                                                    \
    X(ssize_t, rbd_read, (rbd_image_t i, uint64_t off, size_t len, char *buf),               \
      (i, off, len, buf))                                                                    \
    X(int, rbd_flush, (rbd_image_t i), (i))

#define FIELD(ret, name, params, args) ret(*name) params;
#define VFIELD(name, params, args) void(*name) params;
static struct {
    IOH_RBD_CALLS(FIELD, VFIELD)
} lib;

#define FORWARD(ret, name, params, args) \
    ret name params                      \
    {                                    \
        return lib.name args;            \
    }
#define VFORWARD(name, params, args) \
    void name params                 \
    {                                \
        lib.name args;               \
    }
IOH_RBD_CALLS(FORWARD, VFORWARD)

/* Every call found in @rados or @rbd: NULL, or the name of one that is not. */
static const char *
resolve(void *rados, void *rbd)
{
#define FIND(name)                                                                  \
    if (!(*(void **)&lib.name = dlsym(g_str_has_prefix(#name, "rbd_") ? rbd : rados, \
                                      #name))) {                                    \
        return #name;                                                               \
    }
#define XFIND(ret, name, params, args) FIND(name)
#define VFIND(name, params, args) FIND(name)
    IOH_RBD_CALLS(XFIND, VFIND)
    return NULL;
}

gboolean
ioh_rbd_dl_load(const char *name, GError **error)
{
    static GMutex lock;
    static int state;    /* 0: not tried, 1: loaded, -1: failed (why) */
    static char *why;

    g_mutex_lock(&lock);
    if (state == 0) {
        void *rados = dlopen("librados.so.2", RTLD_NOW | RTLD_LOCAL);
        void *rbd = rados ? dlopen("librbd.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
        const char *missing = rbd ? resolve(rados, rbd) : NULL;

        state = rbd && !missing ? 1 : -1;
        why = state > 0 ? NULL
              : missing ? g_strdup_printf("librbd has no %s", missing)
                        : g_strdup_printf("%s (install librbd1)", dlerror());
    }
    g_mutex_unlock(&lock);
    return state > 0 || ioh_error_set(error, ENOSYS, "connect", name, "cannot load librbd: "
                                      "%s", why);
}
