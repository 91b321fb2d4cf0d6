/* test-age.c - the age and unage filters (ioh-filter-age.c) in-process, through a filter
 * chain, with the keys' encoding and the STREAM's edges that no CLI can forge:
 * - Bech32 (core/ioh-bech32.c): BIP 173's vectors, and age-keygen's identity and public
 *   key (the public key computed from the identity, encoded, is age-keygen's line);
 * - round trips at the chunk boundaries, input in pieces of 1 byte to 5 MiB, 1, 2 and 4
 *   threads, sinks of alignment 1 and 4096 (every piece but the last whole alignments);
 * - images made here with a known file key: a full last chunk restores; the last flag
 *   stripped, an empty last chunk after a full one, a stanza of another type before ours
 *   (skipped), a header over 64 KiB, over 1024 stanzas, a non-canonical base64 MAC. */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "engine-util.h"
#include "ioh-age-header.h"
#include "ioh-age-keys.h"
#include "ioh-age-stream.h"
#include "ioh-bech32.h"
#include "ioh-error.h"
#include "ioh-filter.h"

#define CHUNK IOH_AGE_CHUNK

static IohAgeKeys *keys;          /* one identity and its recipient */

typedef struct {
    GByteArray *bytes;
    gsize align;
    gboolean unaligned_seen;      /* a piece that is not whole alignments */
    gboolean after_unaligned;     /* ... and one after it (only the tail may be) */
} Sink;

static gboolean
keep_bytes(gpointer data, const void *buf, gsize len, GError **error)
{
    Sink *s = data;

    (void)error;
    s->after_unaligned |= s->unaligned_seen;
    s->unaligned_seen |= len % s->align != 0 || (guintptr)buf % s->align != 0;
    g_byte_array_append(s->bytes, buf, (guint)len);
    return TRUE;
}

/* @len bytes of @in through filter @name in pieces of @piece, @threads, into a sink of
 * alignment @align: the output, or NULL with @error set. */
static GByteArray *
through(const char *name, const guint8 *in, gsize len, gsize piece, guint threads,
        gsize align, GError **error)
{
    const char *filters[] = { name, NULL };
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(IohFilterChain) chain = NULL;
    Sink sink = { out, align, FALSE, FALSE };
    IohCopyOptions opts;
    IohStats stats = { 0 };

    ioh_copy_options_init(&opts);
    opts.filters = filters;
    opts.threads = threads;
    opts.age = keys;
    chain = ioh_filter_chain_new(&opts, error);
    g_assert_nonnull(chain);
    ioh_filter_chain_set_sink(chain, "image", align, keep_bytes, NULL, &sink);
    if (!engt_chain_run(chain, in, len, piece, &stats, error)) {
        return NULL;
    }
    g_assert_false(sink.after_unaligned);
    g_assert_cmpstr(stats.encryption, ==, "age");
    g_assert_cmpuint(stats.encryption_recipients, ==, 1);
    return g_steal_pointer(&out);
}

/* ---- Bech32 ---- */

static void
test_bech32_vectors(void)
{
    static const char *const invalid[] = {
        "A12uEL5L",       /* mixed case */
        "a12uel5m",       /* checksum */
        "1qzzfhee",       /* no human-readable part */
        "a1",             /* too short */
        "pzry9x0s0muk",   /* no separator */
        "a1b2uel5l",      /* 'b' is not in the alphabet */
    };
    char hrp[84];
    guint8 data[64], back[64];
    gsize n;
    g_autofree char *enc = NULL;

    /* BIP 173's valid strings without data, either case */
    for (int i = 0; i < 2; i++) {
        g_assert_true(ioh_bech32_decode(i ? "a12uel5l" : "A12UEL5L", hrp, sizeof(hrp), data,
                                        sizeof(data), &n));
        g_assert_cmpstr(hrp, ==, "a");
        g_assert_cmpuint(n, ==, 0);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(invalid); i++) {
        g_assert_false(ioh_bech32_decode(invalid[i], hrp, sizeof(hrp), data, sizeof(data),
                                         &n));
    }
    for (int i = 0; i < 32; i++) {
        data[i] = (guint8)(i * 37 + 11);
    }
    enc = ioh_bech32_encode("age", data, 32, FALSE);
    g_assert_true(ioh_bech32_decode(enc, hrp, sizeof(hrp), back, sizeof(back), &n));
    g_assert_cmpuint(n, ==, 32);
    g_assert_true(memcmp(back, data, 32) == 0);
    enc[10] = enc[10] == 'q' ? 'p' : 'q';       /* one character changed: refused */
    g_assert_false(ioh_bech32_decode(enc, hrp, sizeof(hrp), back, sizeof(back), &n));
}

/* age-keygen's identity, parsed; its public key computed and encoded: age-keygen's. */
static void
test_bech32_age_keygen(void)
{
    g_autofree char *out = NULL;
    g_autofree char *pub = NULL;
    g_autofree char *enc = NULL;
    g_autoptr(IohAgeKeys) k = ioh_age_keys_new();
    g_autoptr(GError) error = NULL;
    const char *argv[] = { "age-keygen", NULL };
    guint8 point[32];
    g_autofree char *keygen = g_find_program_in_path("age-keygen");
    int status;
    char *p;

    if (!keygen) {
        g_test_skip("age-keygen is not installed (Debian package age)");
        return;
    }
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                               G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                               &out, NULL, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    g_assert_true(ioh_age_keys_parse_identities(k, out, strlen(out), "keygen", &error));
    g_assert_no_error(error);
    g_assert_cmpuint(k->n_identities, ==, 1);
    p = strstr(out, "# public key: ");
    g_assert_nonnull(p);
    pub = g_strndup(p + 14, strcspn(p + 14, "\n"));
    g_assert_true(ioh_age_x25519(k->identities[0], NULL, point));
    enc = ioh_bech32_encode("age", point, 32, FALSE);
    g_assert_cmpstr(enc, ==, pub);
    g_assert_true(ioh_age_keys_add_recipient(k, pub, "test", &error));
    g_assert_true(memcmp(k->recipients[0], point, 32) == 0);
    /* its identity line, upper case, is what encoding the scalar gives */
    g_free(enc);
    enc = ioh_bech32_encode("age-secret-key-", k->identities[0], 32, TRUE);
    g_assert_nonnull(strstr(out, enc));
}

/* ---- round trips ---- */

static void
test_round_trip(void)
{
    static const gsize sizes[] = { 0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK,
                                   3 * CHUNK + 1, 2 * MiB + 5, 9 * MiB + 5 };
    /* 9 chunks + 1: sealed where they lie, then copied from a part-filled batch; 5 MiB:
     * more than a batch in one piece */
    static const gsize pieces[] = { 1, 4093, CHUNK, MiB, 9 * CHUNK + 1, 5 * MiB };
    g_autofree char *rnd = engt_random(9 * MiB + 5, 3);

    for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
        for (gsize p = 0; p < G_N_ELEMENTS(pieces); p++) {
            guint threads = 1u << (p % 3);
            gsize align = p % 2 ? 4096 : 1;
            g_autoptr(GError) error = NULL;
            g_autoptr(GByteArray) img = NULL;
            g_autoptr(GByteArray) back = NULL;

            if (pieces[p] == 1 && sizes[s] > 3 * CHUNK + 1) {
                continue;    /* byte by byte: slow, and nothing new */
            }
            img = through("age", (guint8 *)rnd, sizes[s], pieces[p], threads, align, &error);
            g_assert_no_error(error);
            g_assert_cmpuint(img->len, ==, 184 + sizes[s] +
                             16 * MAX(1, (sizes[s] + CHUNK - 1) / CHUNK));
            back = through("unage", img->data, img->len, pieces[p], 4 / threads, 1, &error);
            g_assert_no_error(error);
            g_assert_cmpuint(back->len, ==, sizes[s]);
            g_assert_true(sizes[s] == 0 || memcmp(back->data, rnd, sizes[s]) == 0);
        }
    }
}

/* ---- images made here with a known file key ---- */

typedef enum {
    FORGE_PLAIN,          /* as age writes it */
    FORGE_STRIPPED,       /* whole chunks, none flagged last */
    FORGE_EMPTY_LAST,     /* whole chunks, then an empty last one */
} Forge;

/* An image of @len bytes of @plain, @extra (stanza text) before our stanza, the MAC
 * recomputed over it. */
static GByteArray *
forge(const char *extra, const guint8 *plain, gsize len, Forge how)
{
    guint8 file_key[16], nonce[16], pkey[32], mac_key[32], mac[32];
    g_autoptr(GString) h = g_string_new(NULL);
    g_autoptr(IohAgeStream) st = NULL;
    GByteArray *img = g_byte_array_new();
    g_autofree char *m64 = NULL;
    g_autofree guint8 *ct = g_malloc(len + 16 * (len / CHUNK + 2));
    gsize n = 0, m = 0;

    g_assert_true(ioh_age_random(file_key, 16) && ioh_age_random(nonce, 16));
    g_assert_true(ioh_age_header_seal(keys, file_key, h));
    g_string_truncate(h, strstr(h->str, "\n---") + 4 - h->str);
    g_string_insert(h, strlen(IOH_AGE_MAGIC), extra);
    g_assert_true(ioh_age_hkdf(file_key, 16, NULL, 0, "header", mac_key));
    g_assert_true(ioh_age_hmac(mac_key, h->str, h->len, mac));
    m64 = g_base64_encode(mac, 32);
    m64[43] = '\0';
    g_string_append_printf(h, " %s\n", m64);
    g_byte_array_append(img, (guint8 *)h->str, (guint)h->len);
    g_byte_array_append(img, nonce, 16);
    g_assert_true(ioh_age_hkdf(file_key, 16, nonce, 16, "payload", pkey));
    st = ioh_age_stream_new(pkey, 2);
    g_assert_true(ioh_age_stream_seal(st, plain, len, how == FORGE_PLAIN, ct, &n));
    if (how == FORGE_EMPTY_LAST) {
        g_assert_true(ioh_age_stream_seal(st, plain, 0, TRUE, ct + n, &m));
    }
    g_byte_array_append(img, ct, (guint)(n + m));
    return img;
}

/* @img restored: the error's message must hold @cause (NULL: it restores to @plain). */
static void
assert_restore(GByteArray *img, const guint8 *plain, gsize len, const char *cause)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) back = through("unage", img->data, img->len, MiB, 2, 1, &error);

    if (!cause) {
        g_assert_no_error(error);
        g_assert_cmpuint(back->len, ==, len);
        g_assert_true(len == 0 || memcmp(back->data, plain, len) == 0);
    } else {
        g_assert_nonnull(error);
        g_test_message("%s", error->message);
        g_assert_nonnull(strstr(error->message, cause));
        g_assert_true(g_str_has_prefix(error->message, "decrypt image: "));
    }
    g_byte_array_unref(img);
}

static void
test_forged(void)
{
    g_autofree char *rnd = engt_random(3 * CHUNK, 4);
    const guint8 *p = (const guint8 *)rnd;
    g_autoptr(GString) many = g_string_new(NULL);
    g_autoptr(GString) big = g_string_new("-> big\n");

    /* a full last chunk, flagged: what age writes for a multiple of 64 KiB */
    assert_restore(forge("", p, 3 * CHUNK, FORGE_PLAIN), p, 3 * CHUNK, NULL);
    assert_restore(forge("", p, 3 * CHUNK, FORGE_STRIPPED), p, 0,
                   "chunk 2 at byte");
    assert_restore(forge("", p, 2 * CHUNK, FORGE_EMPTY_LAST), p, 0,
                   "chunk 2 at byte");
    assert_restore(forge("", p, 0, FORGE_PLAIN), p, 0, NULL);
    /* another type of stanza, skipped (its body two lines: one of 64 columns) */
    assert_restore(forge("-> scrypt c2FsdA 18\n"
                         "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\n"
                         "eA\n", p, CHUNK + 3, FORGE_PLAIN), p, CHUNK + 3, NULL);
    for (int i = 0; i < 1025; i++) {
        g_string_append(many, "-> x\n\n");
    }
    assert_restore(forge(many->str, p, 10, FORGE_PLAIN), p, 0, "more than 1024 stanzas");
    while (big->len < 70000) {
        g_string_append(big, "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\n");
    }
    g_string_append(big, "\n");
    assert_restore(forge(big->str, p, 10, FORGE_PLAIN), p, 0, "longer than 64 KiB");
    assert_restore(forge("-> a  b\n\n", p, 10, FORGE_PLAIN), p, 0, "a stanza's line");
    assert_restore(forge("-> a\nYQ=\n", p, 10, FORGE_PLAIN), p, 0, "a stanza's body");
    assert_restore(forge("-> a\nYR\n", p, 10, FORGE_PLAIN), p, 0, "a stanza's body");
}

int
main(int argc, char **argv)
{
    guint8 point[32];
    int rc;

    g_test_init(&argc, &argv, NULL);
    keys = ioh_age_keys_new();
    ioh_age_crypto_init();
    g_assert_true(ioh_age_random(keys->identities[0], 32));
    keys->n_identities = 1;
    g_assert_true(ioh_age_x25519(keys->identities[0], NULL, point));
    memcpy(keys->recipients[0], point, 32);
    keys->n_recipients = 1;
    g_test_add_func("/age/bech32/bip173-vectors", test_bech32_vectors);
    g_test_add_func("/age/bech32/age-keygen", test_bech32_age_keygen);
    g_test_add_func("/age/round-trip/boundaries-pieces-threads-alignment", test_round_trip);
    g_test_add_func("/age/forged/stream-edges-and-header-bounds", test_forged);
    rc = g_test_run();
    ioh_age_keys_free(keys);
    return rc;
}
