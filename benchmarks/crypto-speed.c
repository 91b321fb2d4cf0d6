/* crypto-speed - the primitives of the age format timed in each library we could use
 * (issue 28): ChaCha20-Poly1305 over 64 KiB chunks, X25519, HKDF-SHA256, HMAC-SHA256 and
 * scrypt at age's work factor (2^18, r 8, p 1), in OpenSSL 3 libcrypto, libsodium and
 * nettle. Prints one tab-separated line per library, primitive and round:
 *   LIBRARY PRIMITIVE UNIT VALUE
 * or "LIBRARY PRIMITIVE - missing" where the library has no such primitive. The report
 * (benchmarks/crypto-speed) takes medians and ranges. Usage: crypto-speed [ROUNDS] [MIB] */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/chacha-poly1305.h>
#include <nettle/curve25519.h>
#include <nettle/hkdf.h>
#include <nettle/hmac.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <sodium.h>

#define CHUNK (64 * 1024)
#define X25519_OPS 2000
#define KDF_OPS 50000
#define HDR_LEN 256        /* an age header with a few stanzas */

static guint8 key[32] = { 1 }, pub[32], nonce[12], tag[16], out32[32];
static guint8 *chunk_in, *chunk_out;
static guint64 mib = 256;

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
emit(const char *lib, const char *prim, const char *unit, double v)
{
    printf("%s\t%s\t%s\t%.3f\n", lib, prim, unit, v);
}

/* ---- OpenSSL libcrypto ---- */

static void
ossl_chacha(void)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    guint64 n = mib * 1024 * 1024 / CHUNK;
    int len;
    double t0 = now();

    EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, NULL);
    for (guint64 i = 0; i < n; i++) {
        nonce[0] = (guint8)i;
        EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, nonce);
        EVP_EncryptUpdate(ctx, chunk_out, &len, chunk_in, CHUNK);
        EVP_EncryptFinal_ex(ctx, chunk_out + len, &len);
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
    }
    emit("openssl", "chacha20-poly1305", "MB/s", n * CHUNK / (now() - t0) / 1e6);
    EVP_CIPHER_CTX_free(ctx);
}

static void
ossl_x25519(void)
{
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, key, 32);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, pub, 32);
    double t0 = now();

    for (int i = 0; i < X25519_OPS; i++) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(priv, NULL);
        size_t len = 32;

        EVP_PKEY_derive_init(ctx);
        EVP_PKEY_derive_set_peer(ctx, peer);
        EVP_PKEY_derive(ctx, out32, &len);
        EVP_PKEY_CTX_free(ctx);
    }
    emit("openssl", "x25519", "ops/s", X25519_OPS / (now() - t0));
    EVP_PKEY_free(priv);
    EVP_PKEY_free(peer);
}

static void
ossl_hkdf(void)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    double t0 = now();

    for (int i = 0; i < KDF_OPS; i++) {
        EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
        OSSL_PARAM p[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, key, 16),
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, nonce, 12),
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, "payload", 7),
            OSSL_PARAM_construct_end(),
        };

        EVP_KDF_derive(ctx, out32, 32, p);
        EVP_KDF_CTX_free(ctx);
    }
    emit("openssl", "hkdf-sha256", "ops/s", KDF_OPS / (now() - t0));
    EVP_KDF_free(kdf);
}

static void
ossl_hmac(void)
{
    unsigned int len;
    double t0 = now();

    for (int i = 0; i < KDF_OPS; i++) {
        HMAC(EVP_sha256(), key, 32, chunk_in, HDR_LEN, out32, &len);
    }
    emit("openssl", "hmac-sha256", "ops/s", KDF_OPS / (now() - t0));
}

static void
ossl_scrypt(void)
{
    double t0 = now();

    EVP_PBE_scrypt("passphrase", 10, key, 16, 1 << 18, 8, 1, 512 << 20, out32, 32);
    emit("openssl", "scrypt-2^18", "s/op", now() - t0);
}

/* ---- libsodium ---- */

static void
sodium_chacha(void)
{
    guint64 n = mib * 1024 * 1024 / CHUNK;
    double t0 = now();

    for (guint64 i = 0; i < n; i++) {
        nonce[0] = (guint8)i;
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(chunk_out, tag, NULL, chunk_in,
                                                           CHUNK, NULL, 0, NULL, nonce, key);
    }
    emit("libsodium", "chacha20-poly1305", "MB/s", n * CHUNK / (now() - t0) / 1e6);
}

static void
sodium_others(void)
{
    double t0 = now();

    for (int i = 0; i < X25519_OPS; i++) {
        if (crypto_scalarmult(out32, key, pub) != 0) {
            return;
        }
    }
    emit("libsodium", "x25519", "ops/s", X25519_OPS / (now() - t0));
    printf("libsodium\thkdf-sha256\t-\tmissing\n");     /* added in 1.0.19 */
    t0 = now();
    for (int i = 0; i < KDF_OPS; i++) {
        crypto_auth_hmacsha256_state st;

        crypto_auth_hmacsha256_init(&st, key, 32);
        crypto_auth_hmacsha256_update(&st, chunk_in, HDR_LEN);
        crypto_auth_hmacsha256_final(&st, out32);
    }
    emit("libsodium", "hmac-sha256", "ops/s", KDF_OPS / (now() - t0));
    t0 = now();
    if (crypto_pwhash_scryptsalsa208sha256_ll((const guint8 *)"passphrase", 10, key, 16,
                                              1 << 18, 8, 1, out32, 32) != 0) {
        return;
    }
    emit("libsodium", "scrypt-2^18", "s/op", now() - t0);
}

/* ---- nettle ---- */

static void
nettle_chacha(void)
{
    struct chacha_poly1305_ctx ctx;
    guint64 n = mib * 1024 * 1024 / CHUNK;
    double t0 = now();

    chacha_poly1305_set_key(&ctx, key);
    for (guint64 i = 0; i < n; i++) {
        nonce[0] = (guint8)i;
        chacha_poly1305_set_nonce(&ctx, nonce);
        chacha_poly1305_encrypt(&ctx, CHUNK, chunk_out, chunk_in);
        chacha_poly1305_digest(&ctx, 16, tag);
    }
    emit("nettle", "chacha20-poly1305", "MB/s", n * CHUNK / (now() - t0) / 1e6);
}

static void
nettle_others(void)
{
    struct hmac_sha256_ctx h;
    guint8 prk[32];
    double t0 = now();

    for (int i = 0; i < X25519_OPS; i++) {
        curve25519_mul(out32, key, pub);
    }
    emit("nettle", "x25519", "ops/s", X25519_OPS / (now() - t0));
    t0 = now();
    for (int i = 0; i < KDF_OPS; i++) {
        hmac_sha256_set_key(&h, 12, nonce);
        hkdf_extract(&h, (nettle_hash_update_func *)hmac_sha256_update,
                     (nettle_hash_digest_func *)hmac_sha256_digest, 32, 16, key, prk);
        hmac_sha256_set_key(&h, 32, prk);
        hkdf_expand(&h, (nettle_hash_update_func *)hmac_sha256_update,
                    (nettle_hash_digest_func *)hmac_sha256_digest, 32, 7,
                    (const guint8 *)"payload", 32, out32);
    }
    emit("nettle", "hkdf-sha256", "ops/s", KDF_OPS / (now() - t0));
    t0 = now();
    for (int i = 0; i < KDF_OPS; i++) {
        hmac_sha256_set_key(&h, 32, key);
        hmac_sha256_update(&h, HDR_LEN, chunk_in);
        hmac_sha256_digest(&h, 32, out32);
    }
    emit("nettle", "hmac-sha256", "ops/s", KDF_OPS / (now() - t0));
    printf("nettle\tscrypt-2^18\t-\tmissing\n");
}

int
main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;

    mib = argc > 2 ? g_ascii_strtoull(argv[2], NULL, 10) : 256;
    if (sodium_init() < 0 || rounds < 1 || mib < 1) {
        fprintf(stderr, "usage: crypto-speed [ROUNDS] [MIB]\n");
        return 2;
    }
    /* a real public key as the peer: a low-order point makes the shared secret zero */
    memset(key, 0x42, sizeof(key));
    if (crypto_scalarmult_base(pub, key) != 0) {
        return 1;
    }
    chunk_in = g_malloc(CHUNK);
    chunk_out = g_malloc(CHUNK + 16);
    memset(chunk_in, 0x5a, CHUNK);
    /* interleaved: one round of every library, then the next */
    for (int r = 0; r < rounds; r++) {
        ossl_chacha(), sodium_chacha(), nettle_chacha();
        ossl_x25519(), ossl_hkdf(), ossl_hmac(), ossl_scrypt();
        sodium_others();
        nettle_others();
        fflush(stdout);
    }
    g_free(chunk_in);
    g_free(chunk_out);
    return 0;
}
