/* ioh-rbd-name.h - RBD image names as text: parsed strictly, and named without options
 *
 * The form is QEMU's (block/rbd.c), the subset iohelper takes:
 *
 *   rbd:POOL/[NAMESPACE/]IMAGE[@SNAP][:conf=PATH][:id=USER][:keyring=PATH]
 *
 * In the core (no librbd) so that the helper, libwrap and qemu-glue read and name an
 * image alike; a pure function, fuzzed by tests/fuzz/fuzz-rbd-name.c. Strict: names of
 * ASCII letters, digits and "._-+", each option once, no QEMU escapes ('\'), no other
 * option (QEMU's key= and password-secret= would put a secret on a command line: refused
 * without quoting them; a keyring file holds the key). An image reaches a message, the
 * protocol, --record or --stats only as ioh_rbd_safe_name(): "rbd:POOL/IMAGE@SNAP",
 * never its options (paths and a user name are not secret, but a name is kept to what
 * identifies the image, uniformly with the NBD URIs).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    char *pool;
    char *ns;          /* NULL: the default namespace */
    char *image;
    char *snap;        /* NULL: the image itself (a snapshot is read-only: restore only) */
    char *conf;        /* conf=: the ceph.conf to read (NULL: librados' default search) */
    char *id;          /* id=: the cephx user without "client." (NULL: admin) */
    char *keyring;     /* keyring=: the keyring file (NULL: the conf's) */
} IohRbdName;

/* TRUE when @spec starts with "rbd:": an RBD image name (valid or not). */
gboolean ioh_rbd_is_name(const char *spec);

/* Parses @spec. FALSE with IOH_ERROR/EINVAL and the cause alone (the caller names the
 * image), e.g. "empty image name", "unknown option 'foo' (conf, id, keyring)"; a
 * value is never quoted. */
gboolean ioh_rbd_name_parse(const char *spec, IohRbdName *ret, GError **error);

void ioh_rbd_name_clear(IohRbdName *name);

/* "rbd:POOL/[NS/]IMAGE[@SNAP]": @name without its options. */
char *ioh_rbd_name_format(const IohRbdName *name);

#define IOH_RBD_UNPARSABLE "(unparsable name)"

/* "rbd:POOL/[NS/]IMAGE[@SNAP]" for a name that parses; "rbd:" IOH_RBD_UNPARSABLE for
 * one that does not; text that is not an RBD name is returned as it is. */
char *ioh_rbd_safe_name(const char *spec);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(IohRbdName, ioh_rbd_name_clear)

G_END_DECLS
