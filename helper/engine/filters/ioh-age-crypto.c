/* ioh-age-crypto.c - age's primitives through OpenSSL 3 libcrypto (ioh-age-crypto.h) */
#include "ioh-age-crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

struct _IohAgeAead {
    EVP_CIPHER_CTX *ctx;
};

void
ioh_age_crypto_init(void)
{
    static gsize once;

    if (g_once_init_enter(&once)) {
        /* 64 KiB locked for libcrypto's copies of the scalars (a few dozen bytes each);
         * without it (RLIMIT_MEMLOCK) libcrypto falls back to the heap */
        if (!CRYPTO_secure_malloc_initialized()) {
            (void)CRYPTO_secure_malloc_init(64 * 1024, 32);
        }
        g_once_init_leave(&once, 1);
    }
}

gboolean
ioh_age_random(guint8 *buf, gsize len)
{
    return RAND_priv_bytes(buf, (int)len) == 1;
}

gboolean
ioh_age_hkdf(const guint8 *ikm, gsize ikm_len, const guint8 *salt, gsize salt_len,
             const char *info, guint8 out[32])
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM p[5], *q = p;
    gboolean ok;

    *q++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len);
    if (salt_len > 0) {
        *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt,
                                                 salt_len);
    }
    *q++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info,
                                             strlen(info));
    *q = OSSL_PARAM_construct_end();
    ok = ctx && EVP_KDF_derive(ctx, out, 32, p) == 1;
    EVP_KDF_CTX_free(ctx);
    EVP_KDF_free(kdf);
    return ok;
}

gboolean
ioh_age_hmac(const guint8 key[32], const void *data, gsize len, guint8 out[32])
{
    unsigned int n = 0;

    return HMAC(EVP_sha256(), key, 32, data, len, out, &n) != NULL && n == 32;
}

/* @scalar * @point with libcrypto's derive. */
static gboolean
x25519_derive(EVP_PKEY *priv, const guint8 *point, guint8 out[32])
{
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, point, 32);
    EVP_PKEY_CTX *ctx = peer ? EVP_PKEY_CTX_new(priv, NULL) : NULL;
    size_t len = 32;
    gboolean ok;

    /* libcrypto refuses an all-zero shared secret (a low-order point), as age asks */
    ok = ctx && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer(ctx, peer) == 1 &&
         EVP_PKEY_derive(ctx, out, &len) == 1 && len == 32;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    return ok;
}

gboolean
ioh_age_x25519(const guint8 scalar[32], const guint8 *point, guint8 out[32])
{
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
    size_t len = 32;
    gboolean ok;

    if (!priv) {
        return FALSE;
    }
    ok = point ? x25519_derive(priv, point, out)
               : EVP_PKEY_get_raw_public_key(priv, out, &len) == 1 && len == 32;
    EVP_PKEY_free(priv);
    return ok;
}

IohAgeAead *
ioh_age_aead_new(const guint8 key[32])
{
    IohAgeAead *a = g_new0(IohAgeAead, 1);

    a->ctx = EVP_CIPHER_CTX_new();
    if (!a->ctx ||
        EVP_CipherInit_ex(a->ctx, EVP_chacha20_poly1305(), NULL, key, NULL, -1) != 1) {
        ioh_age_aead_free(a);
        return NULL;
    }
    return a;
}

void
ioh_age_aead_free(IohAgeAead *a)
{
    if (a) {
        EVP_CIPHER_CTX_free(a->ctx);    /* clears its key schedule */
        g_free(a);
    }
}

gboolean
ioh_age_aead_seal(IohAgeAead *a, const guint8 nonce[12], const guint8 *in, gsize len,
                  guint8 *out)
{
    int n = 0, m = 0;

    return EVP_CipherInit_ex(a->ctx, NULL, NULL, NULL, nonce, 1) == 1 &&
           (len == 0 || EVP_CipherUpdate(a->ctx, out, &n, in, (int)len) == 1) &&
           EVP_CipherFinal_ex(a->ctx, out + n, &m) == 1 &&
           EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG, IOH_AGE_TAG_LEN,
                               out + len) == 1;
}

gboolean
ioh_age_aead_open(IohAgeAead *a, const guint8 nonce[12], const guint8 *in, gsize len,
                  guint8 *out)
{
    gsize clen = len - IOH_AGE_TAG_LEN;
    int n = 0, m = 0;

    if (len < IOH_AGE_TAG_LEN) {
        return FALSE;
    }
    return EVP_CipherInit_ex(a->ctx, NULL, NULL, NULL, nonce, 0) == 1 &&
           EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_TAG, IOH_AGE_TAG_LEN,
                               (void *)(in + clen)) == 1 &&
           (clen == 0 || EVP_CipherUpdate(a->ctx, out, &n, in, (int)clen) == 1) &&
           EVP_CipherFinal_ex(a->ctx, out + n, &m) == 1;
}
