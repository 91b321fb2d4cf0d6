/* ioh-filter-unage.c - filter unage: a restore's image decrypted from the age v1 format
 * with the identities of --identity / --identity-fd; docs/encryption.md
 *
 * The header is collected and parsed strictly, its MAC checked, before any payload
 * (ioh-age-header.c); then the 64 KiB chunks are opened in batches on the stream's threads
 * (ioh-age-stream.c), straight from the caller's buffer while a byte after them is known
 * to come, the rest (at most one chunk) held back to be opened as the last one. A batch
 * goes on only once every chunk of it authenticated; a failure names the chunk and its
 * byte offset in the image. Output in whole alignments of the sink but at the end.
 */
#include "ioh-filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ioh-age-header.h"
#include "ioh-age-stream.h"
#include "ioh-cpus.h"
#include "ioh-error.h"
#include "ioh-secmem.h"

#define BATCH_CHUNKS 32            /* chunks opened per call (fewer under a tight budget) */
#define NONCE_LEN 16

typedef struct {
    const IohAgeKeys *keys;
    guint threads;
    IohMemAccount *memory;
    guint64 base;                  /* where the image starts in the storage end */
    IohAgeStream *stream;
    GByteArray *head;              /* the header and nonce as they come */
    gsize head_len;                /* the header's length with the nonce, once read */
    guint recipients;
    guint8 *pending;               /* at most one chunk held back */
    gsize pending_len;
    guint64 batch;                 /* chunks opened per call, as the budget allows */
    guint8 *out;                   /* the aligned output buffer */
    gsize out_size;
    gsize out_have;
    gsize align;
} Unage;

static void
unage_free(gpointer data)
{
    Unage *u = data;

    if (!u) {
        return;
    }
    ioh_age_stream_free(u->stream);
    g_byte_array_unref(u->head);
    g_free(u->pending);
    free(u->out);
    g_free(u);
}

static gpointer
unage_open(const IohCopyOptions *opts, GError **error)
{
    Unage *u;

    if (!opts->age || opts->age->n_identities == 0) {
        ioh_error_set(error, EINVAL, "decrypt", NULL, "no age identity given");
        return NULL;
    }
    ioh_age_crypto_init();
    u = g_new0(Unage, 1);
    u->keys = opts->age;
    u->threads = opts->threads ? opts->threads : ioh_cpus_usable();
    u->memory = opts->memory;
    u->base = opts->has_offset ? opts->offset : 0;
    u->head = g_byte_array_new();
    u->pending = g_malloc(IOH_AGE_CT_CHUNK);
    return u;
}

/* The output buffer for batches of @chunks. */
static gsize
unage_out_size(const Unage *u, guint64 chunks)
{
    return (u->align + chunks * IOH_AGE_CHUNK + u->align - 1) / u->align * u->align;
}

/* IohMemFitFunc: the largest batch within @bytes (one chunk at the floor). */
static guint64
unage_fit(guint64 bytes, gpointer data)
{
    Unage *u = data;

    u->batch = BATCH_CHUNKS;
    while (u->batch > 1 && unage_out_size(u, u->batch) + IOH_AGE_CT_CHUNK > bytes) {
        u->batch--;
    }
    return unage_out_size(u, u->batch) + IOH_AGE_CT_CHUNK;
}

/* The output buffer, once the sink's alignment is known (its size from the memory
 * account). */
static void
unage_out_alloc(Unage *u, const IohFilterOut *out)
{
    if (u->out) {
        return;
    }
    u->align = MAX(out->align, 1);
    u->batch = BATCH_CHUNKS;
    if (u->memory) {
        ioh_mem_claim(u->memory, "age", unage_out_size(u, 1) + IOH_AGE_CT_CHUNK,
                      unage_out_size(u, BATCH_CHUNKS) + IOH_AGE_CT_CHUNK, 0, unage_fit, u);
    }
    u->out_size = unage_out_size(u, u->batch);
    if (posix_memalign((void **)&u->out, MAX(u->align, 64), u->out_size) != 0) {
        g_error("age: cannot allocate %" G_GSIZE_FORMAT " bytes", u->out_size);
    }
}

/* Hands on what the output buffer holds in whole alignments (@all: everything). */
static gboolean
unage_emit(Unage *u, gboolean all, IohFilterOut *out, GError **error)
{
    gsize n = all ? u->out_have : u->out_have / u->align * u->align;

    if (n == 0) {
        return TRUE;
    }
    if (!ioh_filter_out(out, u->out, n, error)) {
        return FALSE;
    }
    memmove(u->out, u->out + n, u->out_have - n);
    u->out_have -= n;
    return TRUE;
}

/* Opens @len bytes at @in (whole chunks but with @final the last) into the output
 * buffer, and hands on its whole alignments. */
static gboolean
unage_process(Unage *u, const guint8 *in, gsize len, gboolean final, IohFilterOut *out,
              GError **error)
{
    guint64 bad = 0;
    gsize n = 0;

    if (!ioh_age_stream_open(u->stream, in, len, final, u->out + u->out_have, &n, &bad)) {
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, "chunk %" G_GUINT64_FORMAT
                             " at byte %" G_GUINT64_FORMAT " of the image does not "
                             "authenticate: the image is corrupt, truncated or was modified",
                             bad, u->base + u->head_len + bad * IOH_AGE_CT_CHUNK);
    }
    if (final && n == 0 && (bad = ioh_age_stream_chunks(u->stream) - 1) > 0) {
        /* only an empty stream ends in an empty chunk: one was appended */
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, "chunk %" G_GUINT64_FORMAT
                             " at byte %" G_GUINT64_FORMAT " of the image is an empty last "
                             "chunk after others: the image is corrupt", bad,
                             u->base + u->head_len + bad * IOH_AGE_CT_CHUNK);
    }
    u->out_have += n;
    return unage_emit(u, FALSE, out, error);
}

/* The payload bytes @buf (@len): whole chunks opened straight from @buf, batch after
 * batch, while a byte after them is known to come; the rest held back (at most one
 * chunk), to be the last one if nothing follows. */
static gboolean
unage_payload(Unage *u, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    while (len > 0) {
        gsize k;

        if (u->pending_len > 0 || len <= IOH_AGE_CT_CHUNK) {
            gsize n = MIN(IOH_AGE_CT_CHUNK - u->pending_len, len);

            memcpy(u->pending + u->pending_len, buf, n);
            u->pending_len += n;
            buf += n;
            len -= n;
            if (u->pending_len == IOH_AGE_CT_CHUNK && len > 0) {
                if (!unage_process(u, u->pending, IOH_AGE_CT_CHUNK, FALSE, out, error)) {
                    return FALSE;
                }
                u->pending_len = 0;
            }
            continue;
        }
        k = MIN((len - 1) / IOH_AGE_CT_CHUNK, u->batch);
        if (!unage_process(u, buf, k * IOH_AGE_CT_CHUNK, FALSE, out, error)) {
            return FALSE;
        }
        buf += k * IOH_AGE_CT_CHUNK;
        len -= k * IOH_AGE_CT_CHUNK;
    }
    return TRUE;
}

/* The header and nonce collected from @buf (*@ret_used bytes of it taken); once both are
 * read, the stream started and the payload bytes they came with opened. */
static gboolean
unage_header(Unage *u, const guint8 *buf, gsize len, gsize *ret_used, IohFilterOut *out,
             GError **error)
{
    gsize cap = IOH_AGE_HEADER_MAX + NONCE_LEN;
    gsize take = MIN(len, cap - MIN(cap, u->head->len));
    guint8 *file_key = ioh_secmem_alloc(IOH_AGE_FILE_KEY_LEN);
    IohAgeHeaderResult r;
    gsize hdr = 0;

    g_byte_array_append(u->head, buf, (guint)take);
    *ret_used = take;
    r = ioh_age_header_open(u->head->data, u->head->len, u->keys, out->file, file_key, &hdr,
                            &u->recipients, error);
    if (r == IOH_AGE_HEADER_DONE && u->head->len >= hdr + NONCE_LEN) {
        u->stream = ioh_age_stream_new_payload(file_key, u->head->data + hdr, u->threads);
        u->head_len = hdr + NONCE_LEN;
    }
    ioh_secmem_free(file_key, IOH_AGE_FILE_KEY_LEN);
    if (r == IOH_AGE_HEADER_ERROR) {
        return FALSE;
    }
    if (!u->head_len) {
        return TRUE;    /* more to come (the header read again then) */
    }
    if (!u->stream) {
        return ioh_error_set(error, EIO, "decrypt", out->file, "libcrypto failed");
    }
    return unage_payload(u, u->head->data + u->head_len, u->head->len - u->head_len, out,
                         error);
}

static gboolean
unage_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
                GError **error)
{
    Unage *u = data;
    gsize used = 0;

    unage_out_alloc(u, out);
    if (!u->head_len) {
        if (!unage_header(u, buf, len, &used, out, error)) {
            return FALSE;
        }
        if (!u->head_len) {
            return TRUE;
        }
    }
    return unage_payload(u, buf + used, len - used, out, error);
}

/* The last chunk, then everything held. */
static gboolean
unage_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Unage *u = data;

    unage_out_alloc(u, out);
    if (u->pending_len == 0) {
        return ioh_error_set(error, EBADMSG, "decrypt", out->file, u->head_len ?
                             "truncated age image: no payload after the header" :
                             u->head->len ? "truncated age image: it ends in the header" :
                             "empty: not an age image");
    }
    if (!unage_process(u, u->pending, u->pending_len, TRUE, out, error)) {
        return FALSE;
    }
    u->pending_len = 0;
    return unage_emit(u, TRUE, out, error);
}

static gboolean
unage_finish(gpointer data, const IohEnd *src, const IohEnd *dst, IohStats *stats,
             GError **error)
{
    Unage *u = data;

    (void)src, (void)dst, (void)error;
    stats->encryption = "age";
    stats->encryption_recipients = u->recipients;
    g_debug("unage: %" G_GUINT64_FORMAT " chunks opened, %u X25519 recipients",
            ioh_age_stream_chunks(u->stream), u->recipients);
    return TRUE;
}

const IohFilterClass ioh_filter_unage = {
    .name = "unage",
    .open = unage_open,
    .transform = unage_transform,
    .flush = unage_flush,
    .finish = unage_finish,
    .free = unage_free,
};
