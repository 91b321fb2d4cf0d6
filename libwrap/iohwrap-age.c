/* iohwrap-age.c - encrypted images: the recipients a save encrypts to, the identity a
 * restore decrypts with (IOHWRAP_0.4)
 *
 * Recipients are public keys: they go on the helper's command line (--recipient,
 * --recipients-file). An identity is a secret: it never does, nor the environment. The
 * caller names a file (opened, and checked as ssh checks a private key, at each spawn)
 * or hands an fd; the helper gets the open file as fd 4 and `--identity-fd=4`, and reads
 * it into locked memory. This library never reads a key itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "iohwrap.h"
#include "iohwrap-private.h"
#include "ioh-age-keys.h"
#include "ioh-error.h"
#include "ioh-fd.h"

static gboolean
age_invalid(GError **error, const char *what, const char *why)
{
    g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID, "ioh_wrap_options_%s: %s",
                what, why);
    return FALSE;
}

gboolean
ioh_wrap_options_add_recipient(IohWrapOptions *options, const char *recipient,
                               GError **error)
{
    g_autoptr(IohAgeKeys) probe = ioh_age_keys_new();
    g_autoptr(GError) err = NULL;

    if (!options || !recipient) {
        return age_invalid(error, "add_recipient", "options and recipient must not be NULL");
    }
    /* checked now, as the helper will: a wrap never fails later for a bad argument */
    if (!ioh_age_keys_add_recipient(probe, recipient, "recipient", &err)) {
        return age_invalid(error, "add_recipient", err->message);
    }
    if (!options->recipients) {
        options->recipients = g_ptr_array_new_with_free_func(g_free);
    }
    g_ptr_array_add(options->recipients, g_strdup(recipient));
    return TRUE;
}

gboolean
ioh_wrap_options_add_recipients_file(IohWrapOptions *options, const char *file,
                                     GError **error)
{
    if (!options || !file || !*file) {
        return age_invalid(error, "add_recipients_file",
                           "options must not be NULL, file neither NULL nor empty");
    }
    if (!options->recipients_files) {
        options->recipients_files = g_ptr_array_new_with_free_func(g_free);
    }
    g_ptr_array_add(options->recipients_files, g_strdup(file));
    return TRUE;
}

/* Forgets the identity @options had, file or fd. */
static void
identity_clear(IohWrapOptions *options)
{
    g_clear_pointer(&options->identity_file, g_free);
    ioh_fd_clear(&options->identity_fd);
}

gboolean
ioh_wrap_options_set_identity_file(IohWrapOptions *options, const char *file,
                                   GError **error)
{
    if (!options) {
        return age_invalid(error, "set_identity_file", "options must not be NULL");
    }
    if (file && !*file) {
        return age_invalid(error, "set_identity_file", "file must not be empty");
    }
    identity_clear(options);
    options->identity_file = g_strdup(file);
    return TRUE;
}

gboolean
ioh_wrap_options_set_identity_fd(IohWrapOptions *options, int fd, GError **error)
{
    int copy;

    if (!options) {
        return age_invalid(error, "set_identity_fd", "options must not be NULL");
    }
    copy = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
    if (fd >= 0 && copy < 0) {
        g_autofree char *name = g_strdup_printf("identity fd %d", fd);
        return ioh_error_set_errno(error, errno, "dup", name);
    }
    identity_clear(options);
    options->identity_fd = copy;
    return TRUE;
}

/* A copy of the strings of @from (NULL: NULL). */
static GPtrArray *
strings_copy(const GPtrArray *from)
{
    GPtrArray *to;

    if (!from) {
        return NULL;
    }
    to = g_ptr_array_new_full(from->len, g_free);
    for (guint i = 0; i < from->len; i++) {
        g_ptr_array_add(to, g_strdup(from->pdata[i]));
    }
    return to;
}

void
iohw_age_options_copy(const IohWrapOptions *from, IohWrapOptions *to)
{
    to->recipients = strings_copy(from->recipients);
    to->recipients_files = strings_copy(from->recipients_files);
    to->identity_file = g_strdup(from->identity_file);
    to->identity_fd = from->identity_fd >= 0 ? fcntl(from->identity_fd, F_DUPFD_CLOEXEC, 3)
                                             : -1;
}

const char *
ioh_wrap_get_encryption(IohWrap *wrap)
{
    const char *enc = NULL;

    if (wrap) {
        g_mutex_lock(&wrap->lock);
        if (wrap->state == IOHW_STATE_REAPED && !wrap->result && wrap->monitor &&
            wrap->monitor->got_result) {
            enc = wrap->monitor->encryption;
        }
        g_mutex_unlock(&wrap->lock);
    }
    return enc;
}

void
iohw_age_options_clear(IohWrapOptions *options)
{
    g_clear_pointer(&options->recipients, g_ptr_array_unref);
    g_clear_pointer(&options->recipients_files, g_ptr_array_unref);
    identity_clear(options);
}

gboolean
iohw_age_encrypting(const IohWrapOptions *options)
{
    return (options->recipients && options->recipients->len) ||
           (options->recipients_files && options->recipients_files->len);
}

gboolean
iohw_age_decrypting(const IohWrapOptions *options)
{
    return options->identity_file || options->identity_fd >= 0;
}

void
iohw_age_add_args(const IohWrapOptions *options, GPtrArray *argv)
{
    for (guint i = 0; options->recipients && i < options->recipients->len; i++) {
        g_ptr_array_add(argv, g_strdup_printf("--recipient=%s",
                                              (char *)options->recipients->pdata[i]));
    }
    for (guint i = 0; options->recipients_files && i < options->recipients_files->len; i++) {
        g_ptr_array_add(argv, g_strdup_printf("--recipients-file=%s",
                                              (char *)options->recipients_files->pdata[i]));
    }
    if (iohw_age_decrypting(options)) {
        g_ptr_array_add(argv, g_strdup_printf("--identity-fd=%d", IOHW_IDENTITY_FD));
    }
}

int
iohw_age_identity_open(const IohWrapOptions *options, GError **error)
{
    int fd;

    if (options->identity_file) {
        return ioh_age_keys_open_identity_file(options->identity_file, error);
    }
    if (options->identity_fd < 0) {
        return -1;
    }
    fd = fcntl(options->identity_fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        ioh_error_set_errno(error, errno, "dup", "the identity fd");
    }
    return fd;
}
