/* ioh-rbd-files.h - the ceph.conf and keyring an RBD connection reads, opened as
 * untrusted files (ioh-untrusted.h)
 *
 * librados opens what it is given by path, blocking and following links: a conf= that is
 * a FIFO hung the helper in open() for ever (no timeout, no SIGTERM), and without conf=
 * its default search ends with "ceph.conf" in the working directory, so that a file
 * planted in /tmp by another user named the monitors (where the VM's memory went, with
 * "auth_client_required = none") and log_file (a file the helper then appended to, as
 * root under libvirt). So the helper opens them itself, checks them, and hands librados
 * /proc/self/fd/N: the file it checked, never a name looked up again.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The conf to read: @conf (the name's conf=) or, without it, the first that exists of
 * $CEPH_CONF, /etc/ceph/ceph.conf and ~/.ceph/ceph.conf (librados' own list without its
 * "$cluster.conf" of the working directory and the daemons' $data_dir/config), opened as
 * a config file (ioh_untrusted_path_parent(), owned by root or the caller, writable by
 * nobody else, regular). Returns its fd, or -1 with *@ret_none TRUE when no default
 * exists (not an error: librados then takes CEPH_ARGS), or -1 with @error set. */
int ioh_rbd_conf_open(const char *conf, gboolean *ret_none, GError **error);

/* The keyring= file, opened as the conf is (a keyring another user can write would make
 * the helper authenticate as whom they chose). Readable by others is not refused: that
 * is `ceph auth get-or-create -o`'s default (docs/rbd.md says chmod 0640). The fd or -1
 * with @error. */
int ioh_rbd_keyring_open(const char *path, GError **error);

/* "/proc/self/fd/FD", the path librados opens for what the helper checked (free it). */
char *ioh_rbd_fd_path(int fd);

G_END_DECLS
