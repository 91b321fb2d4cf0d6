/* ioh-bech32.h - Bech32 (BIP 173), the encoding of age's keys: "age1..." recipients and
 * "AGE-SECRET-KEY-1..." identities
 *
 * An encoding, not cryptography: a human-readable part, '1', the data in 5-bit groups
 * and a 6-character BCH checksum. age's keys are longer than BIP 173's 90 characters
 * allow in general, so no length limit applies beyond the caller's buffer.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Decodes @s (all lower or all upper case): its human-readable part, lower-cased, into
 * @hrp (room for @hrp_size bytes with the NUL) and its data bytes (8-bit, from the 5-bit
 * groups; the padding bits must be zero) into @data (room for @data_size); their number in
 * *@ret_len. FALSE for anything malformed (mixed case, a bad character or checksum, a
 * non-zero padding, too long). Never quotes @s: the caller words the error. */
gboolean ioh_bech32_decode(const char *s, char *hrp, gsize hrp_size, guint8 *data,
                           gsize data_size, gsize *ret_len);

/* @hrp (lower case) and @len bytes of @data as Bech32, lower case (free it); upper case
 * with @upper. */
char *ioh_bech32_encode(const char *hrp, const guint8 *data, gsize len, gboolean upper);

G_END_DECLS
