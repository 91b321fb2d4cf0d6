/* fuzz-age-header.c - libFuzzer target: the age v1 header parser of a restore
 * (ioh_age_header_open(), helper/engine/filters/ioh-age-header.c)
 *
 * The image is hostile input: whoever can write where images are stored writes it. With
 * one fixed identity, each input is tried as it is, and again with its MAC made right for
 * the fixed file key that make-age-seeds.py's stanzas wrap (so the fuzzer gets past the
 * MAC to the DONE path and the stanza checks). The invariants:
 *  - a refusal is one line "decrypt fuzz.age: ..." in IohError's domain that never
 *    quotes the identity;
 *  - MORE only while the header may still fit (under 64 KiB);
 *  - DONE: the header ends in a newline within the input, holds at least one X25519
 *    stanza, gives the file key the stanza wraps, and every shorter prefix of it is
 *    MORE (the filter feeds the header as it comes: a prefix never refuses nor ends it).
 * There is no C reference parser to compare with (age and rage are Go and Rust);
 * make-age-seeds.py checks its seeds against the age CLI instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ioh-age-crypto.h"
#include "ioh-age-header.h"
#include "ioh-error.h"

/* The same constants as make-age-seeds.py. */
static const guint8 scalar[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                   12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                   23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static const guint8 wrapped_key[16] = { 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
                                        0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f };

static void
check(gboolean ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-age-header: invariant broken: %s\n", what);
        abort();
    }
}

static const IohAgeKeys *
keys(void)
{
    static IohAgeKeys *k;

    if (!k) {
        ioh_age_crypto_init();
        k = ioh_age_keys_new();
        memcpy(k->identities[0], scalar, 32);
        k->n_identities = 1;
    }
    return k;
}

static IohAgeHeaderResult
open_header(const guint8 *buf, gsize len, guint8 file_key[16], gsize *ret_len,
            guint *ret_n, GError **error)
{
    /* a copy of exactly @len bytes: a read past them is ASan's (never NULL, as the
     * filter's buffer is not) */
    g_autofree guint8 *copy = g_malloc(MAX(len, 1));

    memcpy(copy, buf, len);

    return ioh_age_header_open(copy, len, keys(), "fuzz.age", file_key, ret_len, ret_n,
                               error);
}

static void
check_error(const GError *error)
{
    check(error != NULL && error->domain == IOH_ERROR, "an IohError");
    check(strchr(error->message, '\n') == NULL, "one line");
    check(g_str_has_prefix(error->message, "decrypt fuzz.age: "), "names the image");
    check(strstr(error->message, "AGE-SECRET") == NULL, "no key quoted");
}

static void
check_prefix(const guint8 *buf, gsize len)
{
    g_autoptr(GError) error = NULL;
    guint8 fk[16];
    gsize hlen = 0;
    guint n = 0;

    check(open_header(buf, len, fk, &hlen, &n, &error) == IOH_AGE_HEADER_MORE,
          "a prefix of a header is MORE");
    check(error == NULL, "no error on MORE");
}

static void
try_header(const guint8 *buf, gsize len)
{
    g_autoptr(GError) error = NULL;
    guint8 fk[16];
    gsize hlen = 0;
    guint n = 0;

    switch (open_header(buf, len, fk, &hlen, &n, &error)) {
    case IOH_AGE_HEADER_ERROR:
        check_error(error);
        return;
    case IOH_AGE_HEADER_MORE:
        check(error == NULL, "no error on MORE");
        check(len < IOH_AGE_HEADER_MAX, "MORE only under the bound");
        return;
    case IOH_AGE_HEADER_DONE:
        break;
    }
    check(error == NULL, "no error on DONE");
    check(hlen > strlen(IOH_AGE_MAGIC) && hlen <= len && buf[hlen - 1] == '\n',
          "the header ends in a newline within the input");
    check(n >= 1, "an X25519 stanza opened");
    check(memcmp(fk, wrapped_key, 16) == 0, "the wrapped file key");
    check_prefix(buf, hlen - 1);
    check_prefix(buf, hlen / 2);
}

/* The MAC of @buf's first "---" line made right for wrapped_key, in place: FALSE when
 * there is no room for one. */
static gboolean
fix_mac(guint8 *buf, gsize len)
{
    const guint8 *dashes = memmem(buf, len, "\n--- ", 5);
    gsize at;
    guint8 key[32], mac[32];
    g_autofree char *b64 = NULL;

    if (!dashes) {
        return FALSE;
    }
    at = (gsize)(dashes - buf) + 4;     /* just after "---" */
    if (at + 1 + 43 > len) {
        return FALSE;
    }
    check(ioh_age_hkdf(wrapped_key, 16, NULL, 0, "header", key) &&
          ioh_age_hmac(key, buf, at, mac), "libcrypto");
    b64 = g_base64_encode(mac, sizeof(mac));
    memcpy(buf + at + 1, b64, 43);
    return TRUE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree guint8 *fixed = NULL;

    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    try_header(data, size);
    if (size == 0) {
        return 0;
    }
    fixed = g_memdup2(data, size);
    if (fix_mac(fixed, size) && memcmp(fixed, data, size) != 0) {
        try_header(fixed, size);
    }
    return 0;
}
