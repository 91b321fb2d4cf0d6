/* ioh-conf-age.c - the host's recipients in the config file, and libvirt's form refusing them */
#include "ioh-conf-age.h"

#include <errno.h>
#include <fcntl.h>

#include "ioh-error.h"

/* The keys naming recipients: either makes every save of the host's helpers encrypted. */
static const char *const recipient_keys[] = { "recipients", "recipients-file", NULL };

/* A save for libvirt itself: the PATH FD form with a write-only FD (a read-write FD is
 * refused later) and no status fd. libvirt passes no options; libwrap uses the same form
 * but always with --status-fd, whose result line tells it what was written. */
static gboolean
libvirt_save(const IohArgs *a)
{
    int fl = fcntl(a->fd, F_GETFL);

    return a->libvirt && a->status_fd < 0 && fl >= 0 && (fl & O_ACCMODE) == O_WRONLY;
}

gboolean
ioh_conf_age_wanted(const IohArgs *args)
{
    return libvirt_save(args);
}

/* The first recipients key [iohelper] of @kf holds, NULL if none. */
static const char *
recipient_key(GKeyFile *kf)
{
    for (guint i = 0; recipient_keys[i]; i++) {
        if (g_key_file_has_key(kf, "iohelper", recipient_keys[i], NULL)) {
            return recipient_keys[i];
        }
    }
    return NULL;
}

/* Why libvirt's form refuses the host's recipients rather than write an image libvirt
 * cannot restore: a plain `virsh restore` (and `virsh start` of a managed save) hands the
 * file to QEMU with no helper, and after every save libvirt rewrites the file's first
 * bytes (its header's magic) itself, which would destroy an age header there. */
gboolean
ioh_conf_age_apply(GKeyFile *kf, const char *path, IohArgs *args, GError **error)
{
    const char *key = recipient_key(kf);
    g_autofree char *msg = NULL;

    if (!key || !libvirt_save(args)) {
        return TRUE;
    }
    msg = g_strdup_printf("config file %s: %s is refused for libvirt's saves: libvirt "
                          "restores an image without any helper unless --bypass-cache is "
                          "given, so it could not read an encrypted one (docs/libvirt.md)",
                          path, key);
    g_propagate_error(error, ioh_error_new_literal(EPERM, "config", path, msg));
    return FALSE;
}
