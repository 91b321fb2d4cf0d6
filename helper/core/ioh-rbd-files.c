/* ioh-rbd-files.c - the ceph.conf and keyring of an RBD connection, as untrusted files
 * (ioh-rbd-files.h says why) */
#include "ioh-rbd-files.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-untrusted.h"

/* @path as a config file: every directory and link on the way trusted (as the helper's
 * own config file, helper/cli/ioh-conf.c), the file regular, owned by root or us and
 * writable by nobody else. */
static int
open_config_file(const char *path, GError **error)
{
    g_autofree char *name = NULL;
    int dirfd = ioh_untrusted_path_parent(path, &name, error);
    int fd;

    if (dirfd < 0) {
        return -1;
    }
    fd = ioh_untrusted_open(dirfd, name, O_RDONLY, IOH_UNTRUSTED_TRUSTED_OWNER, error);
    close(dirfd);
    return fd;
}

int
ioh_rbd_conf_open(const char *conf, gboolean *ret_none, GError **error)
{
    const char *env = g_getenv("CEPH_CONF");
    g_autofree char *home = g_build_filename(g_get_home_dir(), ".ceph", "ceph.conf", NULL);
    const char *defaults[] = { env && *env ? env : NULL, "/etc/ceph/ceph.conf", home };

    *ret_none = FALSE;
    if (conf) {
        return open_config_file(conf, error);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(defaults); i++) {
        g_autoptr(GError) err = NULL;
        int fd = defaults[i] ? open_config_file(defaults[i], &err) : -1;

        if (fd >= 0) {
            return fd;
        }
        if (err && !g_error_matches(err, IOH_ERROR, ENOENT)) {
            g_propagate_error(error, g_steal_pointer(&err));
            return -1;
        }
    }
    *ret_none = TRUE;
    return -1;
}

int
ioh_rbd_keyring_open(const char *path, GError **error)
{
    return open_config_file(path, error);
}

char *
ioh_rbd_fd_path(int fd)
{
    return g_strdup_printf("/proc/self/fd/%d", fd);
}
