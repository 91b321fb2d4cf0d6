/* ioh-age-header.c - the age v1 header, written and read (ioh-age-header.h) */
#include "ioh-age-header.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>

#include "ioh-error.h"
#include "ioh-secmem.h"

#define X25519_LABEL "age-encryption.org/v1/X25519"
#define COLUMNS 64                 /* a stanza body's full line */
#define B64_32 43                  /* 32 bytes, unpadded base64 */

/* ---- age's base64: standard alphabet, no padding, canonical ---- */

static char *
b64_encode(const guint8 *data, gsize len)
{
    char *s = g_base64_encode(data, len);
    char *pad = strchr(s, '=');

    if (pad) {
        *pad = '\0';
    }
    return s;
}

/* @len characters of @text into @out (room for @max): FALSE unless canonical. */
static gboolean
b64_decode(const char *text, gsize len, guint8 *out, gsize max, gsize *ret_len)
{
    g_autofree char *padded = NULL;
    g_autofree guint8 *bytes = NULL;
    g_autofree char *again = NULL;
    gsize n = 0;

    if (len % 4 == 1) {
        return FALSE;
    }
    for (gsize i = 0; i < len; i++) {
        if (!g_ascii_isalnum(text[i]) && text[i] != '+' && text[i] != '/') {
            return FALSE;
        }
    }
    padded = g_malloc(len + 4);     /* @text is not NUL-terminated: no str* on it */
    memcpy(padded, text, len);
    memcpy(padded + len, "===", 3);
    padded[len + (4 - len % 4) % 4] = '\0';
    bytes = g_base64_decode(padded, &n);
    /* the unused bits of the last character must be zero: one text per value */
    again = b64_encode(bytes, n);
    if (n > max || strlen(again) != len || memcmp(again, text, len) != 0) {
        return FALSE;
    }
    memcpy(out, bytes, n);
    *ret_len = n;
    return TRUE;
}

/* ---- writing ---- */

/* The wrapping key of one X25519 stanza: HKDF(shared, share || recipient, label). */
static gboolean
wrap_key(const guint8 shared[32], const guint8 share[32], const guint8 recipient[32],
         guint8 key[32])
{
    guint8 salt[64];

    memcpy(salt, share, 32);
    memcpy(salt + 32, recipient, 32);
    return ioh_age_hkdf(shared, 32, salt, sizeof(salt), X25519_LABEL, key);
}

/* ChaCha20-Poly1305 with a zero nonce: seal (@seal) or open the file key. */
static gboolean
wrap_file_key(const guint8 key[32], gboolean seal, const guint8 *in, guint8 *out)
{
    static const guint8 zero[IOH_AGE_NONCE_LEN];
    g_autoptr(IohAgeAead) a = ioh_age_aead_new(key);

    return a && (seal ? ioh_age_aead_seal(a, zero, in, IOH_AGE_FILE_KEY_LEN, out)
                      : ioh_age_aead_open(a, zero, in, IOH_AGE_FILE_KEY_LEN + 16, out));
}

/* One "-> X25519" stanza for @recipient. @secret: 96 bytes of locked scratch. */
static gboolean
seal_stanza(const guint8 recipient[32], const guint8 file_key[16], guint8 *secret,
            GString *out)
{
    guint8 *eph = secret, *shared = secret + 32, *key = secret + 64;
    guint8 share[32], body[IOH_AGE_FILE_KEY_LEN + 16];
    g_autofree char *s64 = NULL;
    g_autofree char *b64 = NULL;

    if (!ioh_age_random(eph, 32) || !ioh_age_x25519(eph, NULL, share) ||
        !ioh_age_x25519(eph, recipient, shared) || !wrap_key(shared, share, recipient, key) ||
        !wrap_file_key(key, TRUE, file_key, body)) {
        return FALSE;
    }
    s64 = b64_encode(share, sizeof(share));
    b64 = b64_encode(body, sizeof(body));
    g_string_append_printf(out, "-> X25519 %s\n%s\n", s64, b64);
    return TRUE;
}

/* The header's MAC: HMAC-SHA256 with HKDF(file key, no salt, "header"). */
static gboolean
header_mac(const guint8 file_key[16], const void *text, gsize len, guint8 mac[32])
{
    guint8 key[32];
    gboolean ok = ioh_age_hkdf(file_key, IOH_AGE_FILE_KEY_LEN, NULL, 0, "header", key) &&
                  ioh_age_hmac(key, text, len, mac);

    ioh_secmem_wipe(key, sizeof(key));
    return ok;
}

gboolean
ioh_age_header_seal(const IohAgeKeys *keys, const guint8 file_key[16], GString *out)
{
    guint8 *secret = ioh_secmem_alloc(96);
    guint8 mac[32];
    g_autofree char *m64 = NULL;
    gboolean ok = secret != NULL;

    g_string_append(out, IOH_AGE_MAGIC);
    for (guint i = 0; ok && i < keys->n_recipients; i++) {
        ok = seal_stanza(keys->recipients[i], file_key, secret, out);
    }
    ioh_secmem_free(secret, 96);
    g_string_append(out, "---");
    if (!ok || !header_mac(file_key, out->str, out->len, mac)) {
        return FALSE;
    }
    m64 = b64_encode(mac, sizeof(mac));
    g_string_append_printf(out, " %s\n", m64);
    return TRUE;
}

/* ---- reading ---- */

typedef struct {
    char **args;             /* type, then its arguments */
    GByteArray *body;
} Stanza;

static void
stanza_free(gpointer p)
{
    Stanza *st = p;

    g_strfreev(st->args);
    g_byte_array_unref(st->body);
    g_free(st);
}

typedef struct {
    const guint8 *buf;
    gsize len;
    gsize pos;               /* the next line's start */
    const char *file;
    GPtrArray *stanzas;
    gsize mac_end;           /* just after "---" */
    guint8 mac[32];
} Parser;

static IohAgeHeaderResult
malformed(Parser *p, const char *what, GError **error)
{
    ioh_error_set(error, EBADMSG, "decrypt", p->file, "malformed age header: %s", what);
    return IOH_AGE_HEADER_ERROR;
}

/* The next line (without its '\n') in *@line, *@n; MORE when it is not all there. */
static IohAgeHeaderResult
next_line(Parser *p, const char **line, gsize *n, GError **error)
{
    const guint8 *nl = memchr(p->buf + p->pos, '\n', p->len - p->pos);

    if (!nl) {
        return p->len >= IOH_AGE_HEADER_MAX
                   ? malformed(p, "longer than 64 KiB", error) : IOH_AGE_HEADER_MORE;
    }
    *line = (const char *)p->buf + p->pos;
    *n = (gsize)(nl - (p->buf + p->pos));
    p->pos += *n + 1;
    return IOH_AGE_HEADER_DONE;
}

/* A stanza's arguments: non-empty, printable ASCII, one space apart. */
static gboolean
args_valid(char **args)
{
    for (guint i = 0; args[i]; i++) {
        if (!*args[i]) {
            return FALSE;
        }
        for (const char *c = args[i]; *c; c++) {
            if (*c < 33 || *c > 126) {
                return FALSE;
            }
        }
    }
    return args[0] != NULL;
}

/* The body lines after a stanza's "-> " line @line (@n bytes). */
static IohAgeHeaderResult
read_stanza(Parser *p, const char *line, gsize n, GError **error)
{
    g_autofree char *text = g_strndup(line + 3, n - 3);
    Stanza *st = g_new0(Stanza, 1);
    IohAgeHeaderResult r;
    guint8 bytes[COLUMNS];
    gsize got;

    st->args = g_strsplit(text, " ", -1);
    st->body = g_byte_array_new();
    g_ptr_array_add(p->stanzas, st);
    if (p->stanzas->len > IOH_AGE_STANZAS_MAX) {
        return malformed(p, "more than 1024 stanzas", error);
    }
    if (!args_valid(st->args)) {
        return malformed(p, "a stanza's line", error);
    }
    do {
        r = next_line(p, &line, &n, error);
        if (r != IOH_AGE_HEADER_DONE) {
            return r;
        }
        if (n > COLUMNS || !b64_decode(line, n, bytes, sizeof(bytes), &got)) {
            return malformed(p, "a stanza's body", error);
        }
        g_byte_array_append(st->body, bytes, (guint)got);
    } while (n == COLUMNS);
    return IOH_AGE_HEADER_DONE;
}

/* The "--- MAC" line @line. */
static IohAgeHeaderResult
read_footer(Parser *p, const char *line, gsize n, GError **error)
{
    gsize got = 0;

    if (n != 4 + B64_32 || line[3] != ' ' ||
        !b64_decode(line + 4, B64_32, p->mac, sizeof(p->mac), &got) || got != 32) {
        return malformed(p, "the MAC line", error);
    }
    p->mac_end = (gsize)(line + 3 - (const char *)p->buf);
    return IOH_AGE_HEADER_DONE;
}

/* The whole header, syntax only: DONE with its stanzas and MAC in @p. */
static IohAgeHeaderResult
parse(Parser *p, GError **error)
{
    gsize magic = strlen(IOH_AGE_MAGIC);
    const char *line;
    gsize n;
    IohAgeHeaderResult r;

    if (memcmp(p->buf, IOH_AGE_MAGIC, MIN(p->len, magic)) != 0) {
        ioh_error_set(error, memcmp(p->buf, "age-encryption.org/", MIN(p->len, 19)) == 0
                      ? ENOTSUP : EBADMSG, "decrypt", p->file,
                      memcmp(p->buf, "age-encryption.org/", MIN(p->len, 19)) == 0
                      ? "an age format version other than v1" : "not an age image");
        return IOH_AGE_HEADER_ERROR;
    }
    if (p->len < magic) {
        return IOH_AGE_HEADER_MORE;
    }
    for (p->pos = magic;;) {
        r = next_line(p, &line, &n, error);
        if (r != IOH_AGE_HEADER_DONE) {
            return r;
        }
        if (n >= 3 && g_str_has_prefix(line, "-> ")) {
            r = read_stanza(p, line, n, error);
        } else if (n >= 3 && memcmp(line, "---", 3) == 0) {
            return read_footer(p, line, n, error);
        } else {
            r = malformed(p, "a line that is neither a stanza nor the MAC", error);
        }
        if (r != IOH_AGE_HEADER_DONE) {
            return r;
        }
    }
}

/* The file key from X25519 stanza @st with identity @id (public key @pub). */
static gboolean
open_stanza(const Stanza *st, const guint8 id[32], const guint8 pub[32], guint8 *secret,
            guint8 file_key[16])
{
    guint8 share[32], *shared = secret, *key = secret + 32;
    gsize got = 0;

    return b64_decode(st->args[1], strlen(st->args[1]), share, sizeof(share), &got) &&
           got == 32 && ioh_age_x25519(id, share, shared) &&
           wrap_key(shared, share, pub, key) &&
           wrap_file_key(key, FALSE, st->body->data, file_key);
}

/* The X25519 stanzas of @p: their number in *@ret_n, TRUE when one opened. */
static gboolean
find_file_key(Parser *p, const IohAgeKeys *keys, guint8 file_key[16], guint *ret_n,
              GError **error)
{
    guint8 *secret = ioh_secmem_alloc(64);
    guint8 pub[IOH_AGE_IDENTITIES_MAX][32];
    gboolean found = FALSE;

    *ret_n = 0;
    for (guint i = 0; i < keys->n_identities; i++) {
        if (!ioh_age_x25519(keys->identities[i], NULL, pub[i])) {
            memset(pub[i], 0, 32);  /* libcrypto refused the scalar: it opens nothing */
        }
    }
    for (guint s = 0; !found && secret && s < p->stanzas->len; s++) {
        const Stanza *st = p->stanzas->pdata[s];

        if (!g_str_equal(st->args[0], "X25519")) {
            continue;
        }
        ++*ret_n;
        if (g_strv_length(st->args) != 2 || strlen(st->args[1]) != B64_32 ||
            st->body->len != IOH_AGE_FILE_KEY_LEN + 16) {
            ioh_secmem_free(secret, 64);
            return malformed(p, "an X25519 stanza", error) == IOH_AGE_HEADER_DONE;
        }
        for (guint i = 0; !found && i < keys->n_identities; i++) {
            found = open_stanza(st, keys->identities[i], pub[i], secret, file_key);
        }
    }
    ioh_secmem_free(secret, 64);
    return found;
}

IohAgeHeaderResult
ioh_age_header_open(const guint8 *buf, gsize len, const IohAgeKeys *keys, const char *file,
                    guint8 file_key[16], gsize *ret_len, guint *ret_recipients,
                    GError **error)
{
    g_autoptr(GPtrArray) stanzas = g_ptr_array_new_with_free_func(stanza_free);
    Parser p = { buf, len, 0, file, stanzas, 0, { 0 } };
    IohAgeHeaderResult r = parse(&p, error);
    guint8 mac[32];

    if (r != IOH_AGE_HEADER_DONE) {
        return r;
    }
    if (!find_file_key(&p, keys, file_key, ret_recipients, error)) {
        if (error && *error) {
            return IOH_AGE_HEADER_ERROR;
        }
        if (*ret_recipients) {
            ioh_error_set(error, ENOKEY, "decrypt", file, "no identity matches the image's "
                          "%u X25519 recipient%s", *ret_recipients,
                          *ret_recipients == 1 ? "" : "s");
        } else {
            ioh_error_set(error, ENOTSUP, "decrypt", file, "no X25519 recipient in the "
                          "image (a passphrase or another kind of key: not supported)");
        }
        return IOH_AGE_HEADER_ERROR;
    }
    if (!header_mac(file_key, buf, p.mac_end, mac) || CRYPTO_memcmp(mac, p.mac, 32) != 0) {
        ioh_secmem_wipe(file_key, IOH_AGE_FILE_KEY_LEN);
        ioh_error_set(error, EBADMSG, "decrypt", file, "the age header's MAC does not "
                      "match: the header was modified");
        return IOH_AGE_HEADER_ERROR;
    }
    *ret_len = p.pos;
    return IOH_AGE_HEADER_DONE;
}
