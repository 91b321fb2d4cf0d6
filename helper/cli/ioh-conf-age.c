/* ioh-conf-age.c - the host's recipients in the config file: applied to every save that
 * names none, refused for libvirt's own saves */
#include "ioh-conf-age.h"

#include <errno.h>

#include "ioh-age-keys.h"
#include "ioh-clash.h"
#include "ioh-error.h"

/* Whether this run is a save (a stream into a file, a device or an NBD export). */
static gboolean
is_save(const IohArgs *a)
{
    IohDirection d;

    return ioh_clash_direction(a, &d) && d == IOH_DIRECTION_SAVE;
}

/* A save for libvirt itself: the PATH FD form without a status fd. libvirt passes no
 * options; libwrap uses the same form but always with --status-fd, whose result line
 * tells it what was written ("encryption"). */
static gboolean
libvirt_save(const IohArgs *a)
{
    return a->libvirt && a->status_fd < 0 && is_save(a);
}

gboolean
ioh_conf_age_wanted(const IohArgs *args)
{
    return !args->encrypt && is_save(args);
}

/* The first recipients key [iohelper] of @kf holds, NULL if none. */
static const char *
recipient_key(GKeyFile *kf)
{
    static const char *const keys[] = { "recipients", "recipients-file", NULL };

    for (guint i = 0; keys[i]; i++) {
        if (g_key_file_has_key(kf, "iohelper", keys[i], NULL)) {
            return keys[i];
        }
    }
    return NULL;
}

/* Why libvirt's form refuses the host's recipients rather than write an image libvirt
 * cannot restore: a plain `virsh restore` (and `virsh start` of a managed save) hands the
 * file to QEMU with no helper, and after every save libvirt rewrites the file's first
 * bytes (its header's magic) itself, which would destroy an age header there. */
static gboolean
refuse_libvirt(const char *path, const char *key, GError **error)
{
    g_autofree char *msg = g_strdup_printf("config file %s: %s is refused for libvirt's "
                                           "saves: libvirt restores an image without any "
                                           "helper unless --bypass-cache is given, so it "
                                           "could not read an encrypted one "
                                           "(docs/libvirt.md)", path, key);

    g_propagate_error(error, ioh_error_new_literal(EPERM, "config", path, msg));
    return FALSE;
}

/* The host's recipients file @file into @keys, read as the config file @path itself is
 * (ioh_age_keys_read_host_recipients()): the error names both. */
static gboolean
take_recipients_file(IohAgeKeys *keys, const char *file, const char *path, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *msg = NULL;

    if (ioh_age_keys_read_host_recipients(keys, file, &err)) {
        return TRUE;
    }
    msg = g_strdup_printf("config file %s: recipients-file %s: %s", path, file, err->message);
    g_propagate_error(error, ioh_error_new_literal(ioh_error_get_errno(err), "config", path,
                                                  msg));
    return FALSE;
}

/* recipients= (a list: age1...;age1...) and recipients-file= into @a, as --recipient
 * would. An error names the config file, never a key. */
static gboolean
take_recipients(GKeyFile *kf, const char *path, IohArgs *a, GError **error)
{
    g_auto(GStrv) list = g_key_file_get_string_list(kf, "iohelper", "recipients", NULL, NULL);
    g_autofree char *file = g_key_file_get_string(kf, "iohelper", "recipients-file", NULL);
    g_autofree char *where = g_strdup_printf("config file %s: recipients", path);

    if (!a->age) {
        a->age = ioh_age_keys_new();
    }
    for (guint i = 0; list && list[i]; i++) {
        g_strstrip(list[i]);
        if (*list[i] && !ioh_age_keys_add_recipient(a->age, list[i], where, error)) {
            return FALSE;
        }
    }
    if (file && *g_strstrip(file) && !take_recipients_file(a->age, file, path, error)) {
        return FALSE;
    }
    a->encrypt = TRUE;
    ioh_args_update_filters(a);
    return TRUE;
}

gboolean
ioh_conf_age_apply(GKeyFile *kf, const char *path, IohArgs *args, GError **error)
{
    const char *key = recipient_key(kf);

    if (!key || args->encrypt || !is_save(args)) {
        return TRUE;    /* the command line's recipients win, as its budget does */
    }
    if (libvirt_save(args)) {
        return refuse_libvirt(path, key, error);
    }
    return take_recipients(kf, path, args, error);
}
