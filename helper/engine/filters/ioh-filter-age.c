/* ioh-filter-age.c - filters age and unage: the stream encrypted in the age v1 format on
 * a save (--recipient), decrypted on a restore (--identity); docs/encryption.md
 *
 * age: the header (ioh-age-header.c) for the recipients, a 16-byte nonce, then the STREAM
 * of 64 KiB chunks (ioh-age-stream.c). A chunk is sealed only once the byte after it is
 * known to come (else it is the last), so the filter holds back at most one chunk; the
 * rest of each call is sealed straight from the caller's buffer, several chunks at a time
 * over --threads threads. unage: the header parsed strictly and its MAC checked before
 * any payload; then chunks opened the same way, each delivered only once it authenticated
 * (a failure names the chunk's byte offset in the image). What either hands on goes
 * through one aligned output buffer, in multiples of the sink's alignment (O_DIRECT)
 * but the stream's tail.
 */
#include "ioh-filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ioh-age-header.h"
#include "ioh-age-stream.h"
#include "ioh-error.h"
#include "ioh-secmem.h"

#define BATCH_CHUNKS 32            /* chunks sealed or opened per call of the stream */
#define PAYLOAD_NONCE 16
#define SECRET_BYTES (IOH_AGE_FILE_KEY_LEN + 32)

typedef struct {
    gboolean encrypt;
    const IohAgeKeys *keys;
    guint threads;
    IohMemAccount *memory;
    guint64 base;                  /* where the image starts in the storage end */
    guint8 *secret;                /* locked: the file key, then the payload key */
    IohAgeStream *stream;
    GString *header;               /* age: the header to write first */
    GByteArray *head;              /* unage: the header and nonce as they come */
    gsize head_len;                /* unage: the header's length (with the nonce), once read */
    guint recipients;
    guint8 *pending;               /* at most one chunk (plain or cipher) held back */
    gsize pending_len;
    guint8 *out;                   /* the aligned output buffer */
    gsize out_size;
    gsize out_have;
    gsize align;
} Age;

static void
age_free(gpointer data)
{
    Age *a = data;

    if (!a) {
        return;
    }
    ioh_age_stream_free(a->stream);
    ioh_secmem_free(a->secret, SECRET_BYTES);
    if (a->header) {
        g_string_free(a->header, TRUE);
    }
    if (a->head) {
        g_byte_array_unref(a->head);
    }
    g_free(a->pending);
    free(a->out);
    g_free(a);
}

/* The payload key from the file key and @nonce, and the stream with it. */
static gboolean
age_start_stream(Age *a, const guint8 nonce[PAYLOAD_NONCE])
{
    guint8 *payload_key = a->secret + IOH_AGE_FILE_KEY_LEN;

    if (!ioh_age_hkdf(a->secret, IOH_AGE_FILE_KEY_LEN, nonce, PAYLOAD_NONCE, "payload",
                      payload_key)) {
        return FALSE;
    }
    a->stream = ioh_age_stream_new(payload_key, a->threads);
    /* the file key and payload key live on in the contexts only */
    ioh_secmem_wipe(a->secret, SECRET_BYTES);
    return a->stream != NULL;
}

static Age *
age_new(const IohCopyOptions *opts, gboolean encrypt, GError **error)
{
    Age *a = g_new0(Age, 1);

    ioh_age_crypto_init();
    a->encrypt = encrypt;
    a->keys = opts->age;
    a->threads = opts->threads ? opts->threads : g_get_num_processors();
    a->memory = opts->memory;
    a->base = opts->has_offset ? opts->offset : 0;
    a->secret = ioh_secmem_alloc(SECRET_BYTES);
    a->pending = g_malloc(IOH_AGE_CT_CHUNK);
    if (!a->secret) {
        ioh_error_set_errno(error, errno, "encrypt", NULL);
        age_free(a);
        return NULL;
    }
    return a;
}

static gpointer
age_open(const IohCopyOptions *opts, GError **error)
{
    guint8 nonce[PAYLOAD_NONCE];
    Age *a;

    if (!opts->age || opts->age->n_recipients == 0) {
        ioh_error_set(error, EINVAL, "encrypt", NULL, "no age recipient given");
        return NULL;
    }
    a = age_new(opts, TRUE, error);
    if (!a) {
        return NULL;
    }
    a->recipients = opts->age->n_recipients;
    a->header = g_string_new(NULL);
    if (!ioh_age_random(a->secret, IOH_AGE_FILE_KEY_LEN) ||
        !ioh_age_header_seal(a->keys, a->secret, a->header) ||
        !ioh_age_random(nonce, sizeof(nonce)) || !age_start_stream(a, nonce)) {
        ioh_error_set(error, EIO, "encrypt", NULL, "libcrypto failed to make the header");
        age_free(a);
        return NULL;
    }
    g_string_append_len(a->header, (const char *)nonce, sizeof(nonce));
    return a;
}

static gpointer
unage_open(const IohCopyOptions *opts, GError **error)
{
    Age *a;

    if (!opts->age || opts->age->n_identities == 0) {
        ioh_error_set(error, EINVAL, "decrypt", NULL, "no age identity given");
        return NULL;
    }
    a = age_new(opts, FALSE, error);
    if (a) {
        a->head = g_byte_array_new();
    }
    return a;
}

/* The output buffer, once the sink's alignment is known; the header first (age). */
static void
age_out_alloc(Age *a, const IohFilterOut *out)
{
    gsize hdr = a->header ? a->header->len : 0;

    if (a->out) {
        return;
    }
    a->align = MAX(out->align, 1);
    a->out_size = (hdr + a->align + BATCH_CHUNKS * IOH_AGE_CT_CHUNK + a->align - 1) /
                  a->align * a->align;
    if (a->memory) {
        ioh_mem_claim(a->memory, "age", a->out_size + IOH_AGE_CT_CHUNK,
                      a->out_size + IOH_AGE_CT_CHUNK, 0, NULL, NULL);
    }
    if (posix_memalign((void **)&a->out, MAX(a->align, 64), a->out_size) != 0) {
        g_error("age: cannot allocate %" G_GSIZE_FORMAT " bytes", a->out_size);
    }
    if (hdr) {
        memcpy(a->out, a->header->str, hdr);
        a->out_have = hdr;
    }
}

/* Hands on what the output buffer holds in whole alignments (@all: everything). */
static gboolean
age_emit(Age *a, gboolean all, IohFilterOut *out, GError **error)
{
    gsize n = all ? a->out_have : a->out_have / a->align * a->align;

    if (n == 0) {
        return TRUE;
    }
    if (!ioh_filter_out(out, a->out, n, error)) {
        return FALSE;
    }
    memmove(a->out, a->out + n, a->out_have - n);
    a->out_have -= n;
    return TRUE;
}

/* Seals (age) or opens (unage) @len bytes at @in, whole chunks but with @final the last,
 * into the output buffer, and hands on its whole alignments. */
static gboolean
age_process(Age *a, const guint8 *in, gsize len, gboolean final, IohFilterOut *out,
            GError **error)
{
    guint64 first = ioh_age_stream_chunks(a->stream), bad = 0;

    gsize n = 0;

    if (a->encrypt) {
        if (!ioh_age_stream_seal(a->stream, in, len, final, a->out + a->out_have, &n)) {
            return ioh_error_set(error, EIO, "encrypt", out->file, "libcrypto failed to "
                                 "encrypt chunk %" G_GUINT64_FORMAT, first);
        }
    } else if (!ioh_age_stream_open(a->stream, in, len, final, a->out + a->out_have, &n,
                                    &bad)) {
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, "chunk %" G_GUINT64_FORMAT
                             " at byte %" G_GUINT64_FORMAT " of the image does not "
                             "authenticate: the image is corrupt, truncated or was modified",
                             bad, a->base + a->head_len + bad * IOH_AGE_CT_CHUNK);
    } else if (final && n == 0 && (bad = ioh_age_stream_chunks(a->stream) - 1) > 0) {
        /* only an empty stream ends in an empty chunk: one was appended */
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, "chunk %" G_GUINT64_FORMAT
                             " at byte %" G_GUINT64_FORMAT " of the image is an empty last "
                             "chunk after others: the image is corrupt", bad,
                             a->base + a->head_len + bad * IOH_AGE_CT_CHUNK);
    }
    a->out_have += n;
    return age_emit(a, FALSE, out, error);
}

/* The payload bytes @buf (@len), in chunks of @unit: whole ones sealed or opened straight
 * from @buf, batch after batch, while a byte after them is known to come; the rest held
 * back (at most one chunk), to be the last one if nothing follows. */
static gboolean
age_payload(Age *a, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    gsize unit = a->encrypt ? IOH_AGE_CHUNK : IOH_AGE_CT_CHUNK;

    while (len > 0) {
        if (a->pending_len > 0 || len <= unit) {
            gsize n = MIN(unit - a->pending_len, len);

            memcpy(a->pending + a->pending_len, buf, n);
            a->pending_len += n;
            buf += n;
            len -= n;
            if (a->pending_len == unit && len > 0) {
                if (!age_process(a, a->pending, unit, FALSE, out, error)) {
                    return FALSE;
                }
                a->pending_len = 0;
            }
            continue;
        }
        gsize k = MIN((len - 1) / unit, BATCH_CHUNKS);

        if (!age_process(a, buf, k * unit, FALSE, out, error)) {
            return FALSE;
        }
        buf += k * unit;
        len -= k * unit;
    }
    return TRUE;
}

static gboolean
age_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
              GError **error)
{
    Age *a = data;

    age_out_alloc(a, out);
    return age_payload(a, buf, len, out, error);
}

/* The last chunk (an empty one for an empty stream), then everything held. */
static gboolean
age_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Age *a = data;

    age_out_alloc(a, out);
    if (!a->encrypt && a->pending_len == 0) {
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, a->head_len ?
                             "truncated age image: no payload after the header" :
                             a->head->len ? "truncated age image: it ends in the header" :
                             "empty: not an age image");
    }
    if (!age_process(a, a->pending, a->pending_len, TRUE, out, error)) {
        return FALSE;
    }
    a->pending_len = 0;
    return age_emit(a, TRUE, out, error);
}

/* unage: the header and nonce collected from @buf (what of @buf follows them: *@ret_used
 * bytes taken); TRUE once both are read. */
static gboolean
unage_header(Age *a, const guint8 *buf, gsize len, gsize *ret_used, IohFilterOut *out,
             GError **error)
{
    gsize cap = IOH_AGE_HEADER_MAX + PAYLOAD_NONCE;
    gsize take = MIN(len, cap - MIN(cap, a->head->len));
    gsize hdr = 0;

    g_byte_array_append(a->head, buf, (guint)take);
    *ret_used = take;
    switch (ioh_age_header_open(a->head->data, a->head->len, a->keys, out->file, a->secret,
                                &hdr, &a->recipients, error)) {
    case IOH_AGE_HEADER_ERROR:
        return FALSE;
    case IOH_AGE_HEADER_MORE:
        return TRUE;
    case IOH_AGE_HEADER_DONE:
    default:
        break;
    }
    if (a->head->len < hdr + PAYLOAD_NONCE) {
        ioh_secmem_wipe(a->secret, SECRET_BYTES);   /* opened again with more bytes */
        return TRUE;
    }
    if (!age_start_stream(a, a->head->data + hdr)) {
        return ioh_error_set(error, EIO, "decrypt", out->file, "libcrypto failed");
    }
    a->head_len = hdr + PAYLOAD_NONCE;
    return age_payload(a, a->head->data + a->head_len, a->head->len - a->head_len, out,
                       error);
}

static gboolean
unage_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
                GError **error)
{
    Age *a = data;
    gsize used = 0;

    age_out_alloc(a, out);
    if (!a->head_len) {
        if (!unage_header(a, buf, len, &used, out, error)) {
            return FALSE;
        }
        if (!a->head_len) {
            return TRUE;
        }
    }
    return age_payload(a, buf + used, len - used, out, error);
}

static gboolean
age_finish(gpointer data, const IohEnd *src, const IohEnd *dst, IohStats *stats,
           GError **error)
{
    Age *a = data;

    (void)src, (void)dst, (void)error;
    stats->encryption = "age";
    stats->encryption_recipients = a->recipients;
    g_debug("age: %" G_GUINT64_FORMAT " chunks %s, %u recipients",
            ioh_age_stream_chunks(a->stream), a->encrypt ? "sealed" : "opened",
            a->recipients);
    return TRUE;
}

const IohFilterClass ioh_filter_age = {
    .name = "age",
    .open = age_open,
    .transform = age_transform,
    .flush = age_flush,
    .finish = age_finish,
    .free = age_free,
};

const IohFilterClass ioh_filter_unage = {
    .name = "unage",
    .open = unage_open,
    .transform = unage_transform,
    .flush = age_flush,
    .finish = age_finish,
    .free = age_free,
};
