/* ioh-age-keys.h - the keys of an age-encrypted save: recipients (public) and identities
 * (secret), as the command line and libwrap give them
 *
 *   recipient   "age1..."               an X25519 public key (Bech32, lower case)
 *   identity    "AGE-SECRET-KEY-1..."   an X25519 secret scalar (Bech32, upper case)
 *
 * A recipients file is age's: one recipient a line, '#' comments, blank lines; an
 * identity file is age-keygen's: identity lines, '#' comments, blank lines. Other kinds
 * of key (ssh-ed25519, age plugins, scrypt) are refused by name. The identities' scalars
 * are held in ioh-secmem.h memory (locked, never in a core dump, wiped when freed), and
 * an identity's text is read into such memory too, never into the heap; no message ever
 * quotes a key, public or secret (a line is named by its number).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_AGE_KEY_LEN 32
#define IOH_AGE_RECIPIENTS_MAX 256   /* a header over 64 KiB is refused on a restore */
#define IOH_AGE_IDENTITIES_MAX 64
#define IOH_AGE_KEY_FILE_MAX (1024 * 1024)  /* the bound of a recipients file */
#define IOH_AGE_IDENTITY_FILE_MAX (64 * 1024) /* ... of an identity file (locked memory) */

typedef struct {
    guint n_recipients;
    guint8 recipients[IOH_AGE_RECIPIENTS_MAX][IOH_AGE_KEY_LEN];
    guint n_identities;
    guint8 (*identities)[IOH_AGE_KEY_LEN];  /* in secure memory (ioh-secmem.h) */
} IohAgeKeys;

IohAgeKeys *ioh_age_keys_new(void);
void ioh_age_keys_free(IohAgeKeys *keys);    /* wipes the identities; accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohAgeKeys, ioh_age_keys_free)

/* Adds the recipient @text ("age1..."). @where names it in an error ("--recipient", or
 * "FILE line N"): EINVAL "<where>: not an age X25519 recipient (age1...)", E2BIG past
 * IOH_AGE_RECIPIENTS_MAX. */
gboolean ioh_age_keys_add_recipient(IohAgeKeys *keys, const char *text, const char *where,
                                    GError **error);

/* Adds every recipient of the recipients file @file (read through ioh-untrusted.h:
 * no symbolic link, a regular file, at most IOH_AGE_KEY_FILE_MAX bytes). A file without
 * any is refused. */
gboolean ioh_age_keys_read_recipients(IohAgeKeys *keys, const char *file, GError **error);

/* The same for the host's recipients file @file (absolute), named by the config file:
 * read as the config file is (ioh_untrusted_path_parent(), IOH_UNTRUSTED_TRUSTED_OWNER),
 * since a user who could write it or a directory on its path could add a recipient of
 * their own to every save on the host. */
gboolean ioh_age_keys_read_host_recipients(IohAgeKeys *keys, const char *file,
                                           GError **error);

/* Adds every identity of the identity file @file (ioh-untrusted.h's rules; refused, EPERM,
 * when group or others may read or write it, as ssh refuses a loose key). */
gboolean ioh_age_keys_read_identity_file(IohAgeKeys *keys, const char *file,
                                         GError **error);

/* Opens the identity file @file as ioh_age_keys_read_identity_file() does, without
 * reading it: the fd (O_CLOEXEC) or -1 with @error set. For libwrap, which hands the
 * helper the open file rather than its name. */
int ioh_age_keys_open_identity_file(const char *file, GError **error);

/* The same from the inherited fd @fd (read to its end, then closed): libwrap's way, the
 * key never in argv or the environment. */
gboolean ioh_age_keys_read_identity_fd(IohAgeKeys *keys, int fd, GError **error);

/* Adds the identities of @len bytes of identity-file @text (@name for errors). */
gboolean ioh_age_keys_parse_identities(IohAgeKeys *keys, const char *text, gsize len,
                                       const char *name, GError **error);

G_END_DECLS
