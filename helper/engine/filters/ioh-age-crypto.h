/* ioh-age-crypto.h - the primitives of the age format, from OpenSSL's libcrypto
 *
 * No primitive is written here: each call is libcrypto's (benchmarks/results/
 * crypto-speed.md: the one library we measured with all five of age's primitives, and
 * the fastest ChaCha20-Poly1305 here). Key material passed in stays the caller's; what
 * libcrypto copies of an X25519 scalar goes to its secure heap (locked, undumpable,
 * wiped), set up once by ioh_age_crypto_init().
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_AGE_FILE_KEY_LEN 16
#define IOH_AGE_TAG_LEN 16
#define IOH_AGE_NONCE_LEN 12

/* libcrypto's secure heap (idempotent, thread-safe). */
void ioh_age_crypto_init(void);

/* @len random bytes from libcrypto's CSPRNG. */
gboolean ioh_age_random(guint8 *buf, gsize len);

/* HKDF-SHA256: 32 bytes of @ikm (@ikm_len), @salt (@salt_len, may be 0) and @info. */
gboolean ioh_age_hkdf(const guint8 *ikm, gsize ikm_len, const guint8 *salt, gsize salt_len,
                      const char *info, guint8 out[32]);

/* HMAC-SHA256 of @len bytes of @data with the 32-byte @key. */
gboolean ioh_age_hmac(const guint8 key[32], const void *data, gsize len, guint8 out[32]);

/* X25519: @out = @scalar * @point (FALSE also when the result is all zero, a low-order
 * point); with @point NULL, the base point (the public key of @scalar). */
gboolean ioh_age_x25519(const guint8 scalar[32], const guint8 *point, guint8 out[32]);

/* One ChaCha20-Poly1305 context, reused chunk after chunk (one per thread). */
typedef struct _IohAgeAead IohAgeAead;

IohAgeAead *ioh_age_aead_new(const guint8 key[32]);
void ioh_age_aead_free(IohAgeAead *a);   /* accepts NULL; the key schedule wiped */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohAgeAead, ioh_age_aead_free)

/* Seals @len bytes of @in into @out (@len + 16 bytes: ciphertext then tag) with @nonce;
 * @in and @out may be the same. */
gboolean ioh_age_aead_seal(IohAgeAead *a, const guint8 nonce[12], const guint8 *in,
                           gsize len, guint8 *out);

/* Opens @len (>= 16) bytes of @in (ciphertext then tag) into @out (@len - 16 bytes):
 * FALSE when it does not authenticate (then @out holds nothing usable). */
gboolean ioh_age_aead_open(IohAgeAead *a, const guint8 nonce[12], const guint8 *in,
                           gsize len, guint8 *out);

G_END_DECLS
