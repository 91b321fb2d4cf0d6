/* ioh-age-header.h - the age v1 header: written for X25519 recipients, read strictly
 *
 *   age-encryption.org/v1
 *   -> X25519 <ephemeral share, unpadded base64>
 *   <the 16-byte file key wrapped for one recipient, unpadded base64>
 *   --- <HMAC-SHA256 of the header through "---", unpadded base64>
 *
 * (C2SP age.md.) A header longer than IOH_AGE_HEADER_MAX or with more than
 * IOH_AGE_STANZAS_MAX stanzas is refused; stanzas of other types (scrypt, ssh-ed25519,
 * plugins) are skipped when an X25519 one opens with one of the identities.
 */
#pragma once

#include <glib.h>

#include "ioh-age-keys.h"
#include "ioh-age-crypto.h"

G_BEGIN_DECLS

#define IOH_AGE_HEADER_MAX (64 * 1024)
#define IOH_AGE_STANZAS_MAX 1024
#define IOH_AGE_MAGIC "age-encryption.org/v1\n"

/* Appends to @out the header for @keys' recipients and @file_key, a new ephemeral X25519
 * key per recipient (its scalar in locked memory, wiped). FALSE: libcrypto failed. */
gboolean ioh_age_header_seal(const IohAgeKeys *keys, const guint8 file_key[16],
                             GString *out);

typedef enum {
    IOH_AGE_HEADER_MORE,     /* incomplete: call again with more bytes */
    IOH_AGE_HEADER_DONE,     /* the file key found and the MAC checked */
    IOH_AGE_HEADER_ERROR,    /* refused: @error set */
} IohAgeHeaderResult;

/* Reads the header at the start of @buf (@len bytes so far): on DONE its length in
 * *@ret_len, the file key in @file_key (opened with one of @keys' identities) and the
 * X25519 stanzas in *@ret_recipients. Errors (EBADMSG: not age or malformed, ENOTSUP:
 * another version or only a passphrase, ENOKEY: no identity matches) name @file. */
IohAgeHeaderResult ioh_age_header_open(const guint8 *buf, gsize len,
                                       const IohAgeKeys *keys, const char *file,
                                       guint8 file_key[16], gsize *ret_len,
                                       guint *ret_recipients, GError **error);

G_END_DECLS
