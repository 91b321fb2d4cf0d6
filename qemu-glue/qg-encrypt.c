/* qg-encrypt.c - encrypted images: the recipients a save encrypts to, the identity a
 * restore decrypts with, what the header records
 *
 * A save with recipients has the helper encrypt what it stores (after compression) to
 * them, as one age v1 file (libwrap's ioh_wrap_options_add_recipient()); the header
 * (version 3, qg-image.h) records that the stored bytes are age, never a key. A restore
 * of such an image needs an identity, which libwrap hands the helper on an fd: without
 * one the restore is refused before the helper starts and before QEMU gets a byte.
 */
#include "qg-migrate-private.h"

#include <errno.h>

#include "ioh-error.h"

gboolean
qg_mig_encrypt_check(QgImageInfo *info, const QgMigrateOptions *opts, GError **error)
{
    (void)error;
    if ((opts->recipients && *opts->recipients) ||
        (opts->recipients_files && *opts->recipients_files)) {
        g_free(info->encryption);
        info->encryption = g_strdup("age");
    }
    return TRUE;
}

/* Save: every recipient and recipients file. */
static gboolean
qg_mig_encrypt_save(IohWrapOptions *o, const QgMigrateOptions *opts, GError **error)
{
    for (guint i = 0; opts->recipients && opts->recipients[i]; i++) {
        if (!ioh_wrap_options_add_recipient(o, opts->recipients[i], error)) {
            return FALSE;
        }
    }
    for (guint i = 0; opts->recipients_files && opts->recipients_files[i]; i++) {
        if (!ioh_wrap_options_add_recipients_file(o, opts->recipients_files[i], error)) {
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
qg_mig_encrypt_options(IohWrapOptions *o, const QgMigrateOptions *opts,
                       const QgImageInfo *info, gboolean save, const char *path,
                       GError **error)
{
    if (save) {
        return !info->encryption || qg_mig_encrypt_save(o, opts, error);
    }
    return qg_mig_encrypt_restore_check(info, opts, path, error) &&
           (!info->encryption || ioh_wrap_options_set_identity_file(o, opts->identity, error));
}

gboolean
qg_mig_encrypt_restore_check(const QgImageInfo *info, const QgMigrateOptions *opts,
                             const char *path, GError **error)
{
    if (!info->encryption && opts->identity) {
        /* whoever can write the storage can write a plain image (no key needed) where an
         * encrypted one was: an identity says this one must be age, as `age -d` would */
        return ioh_error_set(error, EINVAL, "read", path, "not an encrypted image, but "
                             "--identity was given: refused (a plain image may have "
                             "replaced the encrypted one)");
    }
    if (info->encryption && !opts->identity) {
        return ioh_error_set(error, EINVAL, "read", path, "an age-encrypted image: restore "
                             "it with --identity=FILE (an age identity it was saved to)");
    }
    return TRUE;
}

gboolean
qg_mig_encrypt_result(QgImageInfo *info, IohWrap *wrap, const char *path, GError **error)
{
    const char *enc = ioh_wrap_get_encryption(wrap);

    if (info->encryption && g_strcmp0(enc, info->encryption) != 0) {
        return ioh_error_set(error, EIO, "write", path, "the helper stored the stream "
                             "without encrypting it (an iohelper older than this tool?)");
    }
    if (!info->encryption && enc) {
        /* the host's /etc/iohelper.conf named recipients: the image is theirs */
        info->encryption = g_strdup(enc);
    }
    return TRUE;
}

void
qg_mig_encrypt_stats(const QgImageInfo *info, QgMigrateStats *stats)
{
    stats->encrypted = info->encryption != NULL;
}
