/* ioh-filter-age.c - filter age: a save's stream encrypted in the age v1 format for its
 * recipients (--recipient, --recipients-file); docs/encryption.md
 *
 * The header (ioh-age-header.c), a 16-byte nonce, then the STREAM of 64 KiB chunks
 * (ioh-age-stream.c). The stream is gathered in batches of 4 MiB (down to one chunk under
 * a tight --memory-budget: the memory account's layer "age"); a full batch is sealed
 * only once a byte after it arrives (else it holds the last chunk, flagged so), and then
 * on the stream's threads while the calling thread hands the batch before it to the sink:
 * with two batches in turn, encryption runs beside the O_DIRECT writes instead of between
 * them. Whole chunks the caller hands on (the ring's buffers, 1-4 MiB) are sealed where
 * they lie, no copy into the batch, and waited for before transform returns (the buffer
 * is the caller's again then); only the chunk held back as maybe the last, and small
 * pieces, are gathered by copy. A batch's output starts where the previous one's tail (less than the sink's
 * alignment) ends, so the sink gets whole alignments from aligned memory but at the end.
 * Sealed batches go into output buffers taken in turn: two when the sink writes each
 * before the filter goes on, up to OUT_BEHIND when it writes behind (ioh_filter_out_behind:
 * an O_DIRECT file), so the next batch seals while the ones before are written.
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

#define BATCH_CHUNKS 64            /* 4 MiB batches: the sink's writes (1 MiB: slower) */
#define NONCE_LEN 16
#define OUT_BEHIND 4               /* output buffers when the sink writes behind */
/* Fewer whole chunks than this in one call are copied into the batch: sealing them where
 * they lie would hand the O_DIRECT sink small writes (a filter before, e.g. zstd, hands
 * on small pieces) */
#define DIRECT_MIN_CHUNKS 8

typedef struct {
    guint8 *in;              /* the batch's plaintext */
    gsize in_len;
    guint8 *out;             /* aligned: the carry (@c bytes), then the sealed batch */
    guint oi;                /* which output buffer @out is */
    gsize c;
    gsize n;                 /* sealed bytes */
    gboolean busy;           /* sealing or sealed, not yet handed on */
} Slot;

typedef struct {
    IohAgeStream *stream;
    GString *header;         /* the header and the nonce: the image's first bytes */
    guint recipients;
    IohMemAccount *memory;
    Slot slot[2];
    guint8 *outs[OUT_BEHIND]; /* output buffers, taken in turn by the slots sealed */
    guint64 ticket[OUT_BEHIND]; /* ... each one's last write behind (0: none) */
    guint nout;              /* how many: 2, or up to OUT_BEHIND writing behind */
    guint next_out;
    gsize batch;             /* bytes a slot gathers: whole chunks, as the budget allows */
    guint cur;               /* the slot being filled */
    guint8 *carry;           /* aligned: what the last hand-on left (< align) */
    gsize carry_len;
    gsize next_c;            /* the carry the next slot sealed will start with */
    gsize align;
} Age;

static void
age_free(gpointer data)
{
    Age *a = data;

    if (!a) {
        return;
    }
    if (a->stream) {
        (void)ioh_age_stream_seal_wait(a->stream);   /* a failed copy: a batch in flight */
        ioh_age_stream_free(a->stream);
    }
    if (a->header) {
        g_string_free(a->header, TRUE);
    }
    for (int i = 0; i < 2; i++) {
        g_free(a->slot[i].in);
    }
    for (guint i = 0; i < a->nout; i++) {
        free(a->outs[i]);
    }
    free(a->carry);
    g_free(a);
}

/* The header for the recipients, a fresh file key (in locked memory, wiped) and nonce. */
static gboolean
age_make_header(Age *a, const IohCopyOptions *opts)
{
    guint8 *file_key = ioh_secmem_alloc(IOH_AGE_FILE_KEY_LEN);
    guint8 nonce[NONCE_LEN];
    gboolean ok = file_key && ioh_age_random(file_key, IOH_AGE_FILE_KEY_LEN) &&
                  ioh_age_header_seal(opts->age, file_key, a->header) &&
                  ioh_age_random(nonce, sizeof(nonce));

    if (ok) {
        /* By default half the CPUs: one core seals faster than a disk writes
         * (ChaCha20-Poly1305 at ~4 GB/s, results/crypto-speed.md), and the producer and
         * the helper's reader and writer need the others; on 2 cores a second sealing
         * thread made --direct saves slower (docs/encryption.md). */
        a->stream = ioh_age_stream_new_payload(file_key, nonce,
                                               opts->threads ? opts->threads
                                               : MAX(1, ioh_cpus_usable() / 2));
        g_string_append_len(a->header, (const char *)nonce, sizeof(nonce));
    }
    ioh_secmem_free(file_key, IOH_AGE_FILE_KEY_LEN);
    return ok && a->stream;
}

static gpointer
age_open(const IohCopyOptions *opts, GError **error)
{
    Age *a;

    if (!opts->age || opts->age->n_recipients == 0) {
        ioh_error_set(error, EINVAL, "encrypt", NULL, "no age recipient given");
        return NULL;
    }
    ioh_age_crypto_init();
    a = g_new0(Age, 1);
    a->recipients = opts->age->n_recipients;
    a->memory = opts->memory;
    a->header = g_string_new(NULL);
    if (!age_make_header(a, opts)) {
        ioh_error_set(error, EIO, "encrypt", NULL, "libcrypto failed to make the header");
        age_free(a);
        return NULL;
    }
    return a;
}

static guint8 *
aligned_alloc_or_die(gsize align, gsize size)
{
    void *p = NULL;

    if (posix_memalign(&p, MAX(align, 64), size) != 0) {
        g_error("age: cannot allocate %" G_GSIZE_FORMAT " bytes", size);
    }
    return p;
}

/* Hands on what the carry holds in whole alignments. */
static gboolean
age_emit_carry(Age *a, IohFilterOut *out, GError **error)
{
    gsize k = a->carry_len / a->align * a->align;

    if (k > 0 && !ioh_filter_out(out, a->carry, k, error)) {
        return FALSE;
    }
    memmove(a->carry, a->carry + k, a->carry_len - k);
    a->carry_len -= k;
    a->next_c = a->carry_len;
    return TRUE;
}

/* A slot's output buffer for batches of @chunks at alignment @align. */
static gsize
age_out_size(guint64 chunks, gsize align)
{
    return (align + chunks * IOH_AGE_CT_CHUNK + align - 1) / align * align;
}

/* The filter's memory with batches of @chunks and @nout output buffers: two slots, the
 * carry. */
static guint64
age_bytes(const Age *a, guint64 chunks, guint nout)
{
    return 2 * chunks * IOH_AGE_CHUNK + nout * age_out_size(chunks, a->align) +
           a->header->len + a->align;
}

/* IohMemFitFunc: the largest batch within @bytes, with as many output buffers as fit
 * (fewer buffers before smaller batches: 4 MiB writes pay; one chunk and two buffers at
 * the floor). */
static guint64
age_fit(guint64 bytes, gpointer data)
{
    Age *a = data;
    guint max = a->nout;

    for (guint64 c = BATCH_CHUNKS; c >= 1; c--) {
        for (guint n = max; n >= 2; n--) {
            if (age_bytes(a, c, n) <= bytes || (c == 1 && n == 2)) {
                a->batch = c * IOH_AGE_CHUNK;
                a->nout = n;
                return age_bytes(a, c, n);
            }
        }
    }
    g_assert_not_reached();
}

/* The buffers, once the sink's alignment is known (their size from the memory
 * account), and the header into the carry. */
static gboolean
age_start(Age *a, IohFilterOut *out, GError **error)
{
    gsize out_size;

    if (a->carry) {
        return TRUE;
    }
    a->align = MAX(out->align, 1);
    a->batch = BATCH_CHUNKS * IOH_AGE_CHUNK;
    a->nout = ioh_filter_out_behind_on(out) ? OUT_BEHIND : 2;
    if (a->memory) {
        ioh_mem_claim(a->memory, "age", age_bytes(a, 1, 2),
                      age_bytes(a, BATCH_CHUNKS, a->nout), 0, age_fit, a);
    }
    out_size = age_out_size(a->batch / IOH_AGE_CHUNK, a->align);
    for (int i = 0; i < 2; i++) {
        a->slot[i].in = g_malloc(a->batch);
    }
    for (guint i = 0; i < a->nout; i++) {
        a->outs[i] = ioh_filter_out_buffer(out, out_size);    /* huge pages */
        if (!a->outs[i]) {
            g_error("age: cannot allocate %" G_GSIZE_FORMAT " bytes", out_size);
        }
    }
    a->carry = aligned_alloc_or_die(a->align, a->header->len + a->align);
    memcpy(a->carry, a->header->str, a->header->len);
    a->carry_len = a->header->len;
    return age_emit_carry(a, out, error);
}

/* Hands on slot @s (sealed) after the carry: whole alignments, or all of it (@all). */
static gboolean
age_emit(Age *a, Slot *s, gboolean all, IohFilterOut *out, GError **error)
{
    gsize total = s->c + s->n;
    gsize k = all ? total : total / a->align * a->align;

    g_assert(a->carry_len == s->c);
    memcpy(s->out, a->carry, s->c);
    if (k > 0 && !ioh_filter_out_behind(out, s->out, k, &a->ticket[s->oi], error)) {
        return FALSE;
    }
    a->carry_len = total - k;
    memcpy(a->carry, s->out + k, a->carry_len);
    s->busy = FALSE;
    s->in_len = 0;
    return TRUE;
}

/* Fails the copy for libcrypto. */
static gboolean
age_crypto_error(IohFilterOut *out, GError **error)
{
    return ioh_error_set(error, EIO, "encrypt", out->file, "libcrypto failed to encrypt a "
                         "chunk");
}

/* Gives slot @s the next output buffer, once its write behind is done. */
static gboolean
age_take_out(Age *a, Slot *s, IohFilterOut *out, GError **error)
{
    s->oi = a->next_out;
    a->next_out = (a->next_out + 1) % a->nout;
    s->out = a->outs[s->oi];
    return ioh_filter_out_wait(out, a->ticket[s->oi], error);
}

/* Seals the current slot (the last chunks with @final: in this thread too, to the end),
 * then hands on the other one, sealed while this one filled. */
static gboolean
age_launch(Age *a, gboolean final, IohFilterOut *out, GError **error)
{
    Slot *s = &a->slot[a->cur], *prev = &a->slot[a->cur ^ 1];

    if (!ioh_age_stream_seal_wait(a->stream)) {
        return age_crypto_error(out, error);
    }
    if (!age_take_out(a, s, out, error)) {
        return FALSE;
    }
    s->c = a->next_c;
    ioh_age_stream_seal_start(a->stream, s->in, s->in_len, final, s->out + s->c, &s->n,
                              !final);
    s->busy = TRUE;
    a->next_c = (s->c + s->n) % a->align;
    a->cur ^= 1;
    return !prev->busy || age_emit(a, prev, FALSE, out, error);
}

/* Where the sink writes behind: whether slot @s's gathered chunks and @k more fit in the
 * output buffer of the sealed slot @prev, after what it holds, to go in the same write. */
static gboolean
age_fits_after(const Age *a, const Slot *s, const Slot *prev, gsize k)
{
    gsize chunks = s->in_len / IOH_AGE_CHUNK + k;

    return prev->busy && prev->c + prev->n + chunks * IOH_AGE_CT_CHUNK <=
                         age_out_size(a->batch / IOH_AGE_CHUNK, a->align);
}

/* Seals slot @s's gathered chunks and @k chunks of @buf after what the sealed slot @prev
 * holds, on this thread; hands @prev on once a call of @k more would not fit. The ring
 * hands on each 1 MiB buffer as soon as it is filled when the sealing keeps up: without
 * this, each was an O_DIRECT write of its own (1-2 MiB with the writer's coalescing), and
 * the save was bound by those writes (docs/engine.md, "Sealed on the reading thread"). */
static gboolean
age_append_direct(Age *a, Slot *s, Slot *prev, const guint8 *buf, gsize k,
                  IohFilterOut *out, GError **error)
{
    guint8 *at = prev->out + prev->c + prev->n;
    gsize held = 0, n = 0;

    if ((s->in_len > 0 && !ioh_age_stream_seal(a->stream, s->in, s->in_len, FALSE, at,
                                                &held)) ||
        !ioh_age_stream_seal(a->stream, buf, k * IOH_AGE_CHUNK, FALSE, at + held, &n)) {
        return age_crypto_error(out, error);
    }
    prev->n += held + n;
    s->in_len = 0;
    a->next_c = (prev->c + prev->n) % a->align;
    return age_fits_after(a, s, prev, k) || age_emit(a, prev, FALSE, out, error);
}

/* Seals the current slot's whole chunks, then @k chunks of @buf right after them, with no
 * copy of @buf: on the stream's threads while the other slot goes to the sink, and all
 * sealed before the return, as @buf is the caller's. Where the sink writes behind, the
 * other slot is queued first and this thread seals (a part, with more threads): waking a
 * sealing thread for each of the ring's buffers left the sealing idle between them. */
static gboolean
age_launch_direct(Age *a, const guint8 *buf, gsize k, IohFilterOut *out, GError **error)
{
    Slot *s = &a->slot[a->cur], *prev = &a->slot[a->cur ^ 1];
    gboolean behind = ioh_filter_out_behind_on(out);
    gsize held = 0, n = 0;
    gboolean ok;

    if (!ioh_age_stream_seal_wait(a->stream)) {
        return age_crypto_error(out, error);
    }
    if (behind && age_fits_after(a, s, prev, k)) {
        return age_append_direct(a, s, prev, buf, k, out, error);
    }
    if (behind && prev->busy && !age_emit(a, prev, FALSE, out, error)) {
        return FALSE;
    }
    if (!age_take_out(a, s, out, error)) {
        return FALSE;
    }
    s->c = a->next_c;
    if (s->in_len > 0 && !ioh_age_stream_seal(a->stream, s->in, s->in_len, FALSE,
                                              s->out + s->c, &held)) {
        return age_crypto_error(out, error);
    }
    ioh_age_stream_seal_start(a->stream, buf, k * IOH_AGE_CHUNK, FALSE,
                              s->out + s->c + held, &n, !behind);
    s->n = held + n;
    s->busy = TRUE;
    a->next_c = (s->c + s->n) % a->align;
    a->cur ^= 1;
    ok = !prev->busy || age_emit(a, prev, FALSE, out, error);
    if (!ioh_age_stream_seal_wait(a->stream)) {    /* even after a failure: @buf goes */
        return ok && age_crypto_error(out, error);
    }
    return ok;
}

/* Whole chunks of @len bytes that age_launch_direct() can seal where they are, for
 * slot @s: a byte after the last (it is not the stream's), room in the slot's output,
 * and enough of them to be worth a batch of their own (else they are copied). */
static gsize
age_direct_chunks(const Age *a, const Slot *s, gsize len)
{
    gsize room = (a->batch - s->in_len) / IOH_AGE_CHUNK;
    gsize k = MIN((len - 1) / IOH_AGE_CHUNK, room);

    return s->in_len % IOH_AGE_CHUNK == 0 && k >= DIRECT_MIN_CHUNKS ? k : 0;
}

static gboolean
age_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
              GError **error)
{
    Age *a = data;

    if (!age_start(a, out, error)) {
        return FALSE;
    }
    while (len > 0) {
        Slot *s = &a->slot[a->cur];
        gsize k = age_direct_chunks(a, s, len);
        gsize n = MIN(a->batch - s->in_len, len);

        if (k > 0) {
            if (!age_launch_direct(a, buf, k, out, error)) {
                return FALSE;
            }
            buf += k * IOH_AGE_CHUNK;
            len -= k * IOH_AGE_CHUNK;
            continue;
        }
        memcpy(s->in + s->in_len, buf, n);
        s->in_len += n;
        buf += n;
        len -= n;
        /* a full batch with a byte after it holds no last chunk */
        if (s->in_len == a->batch && len > 0 && !age_launch(a, FALSE, out, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The last batch (one empty chunk for an empty stream), then everything held. */
static gboolean
age_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Age *a = data;
    Slot *last;

    if (!age_start(a, out, error)) {
        return FALSE;
    }
    last = &a->slot[a->cur];
    if (!age_launch(a, TRUE, out, error)) {
        return FALSE;
    }
    if (!ioh_age_stream_seal_wait(a->stream)) {
        return age_crypto_error(out, error);
    }
    return age_emit(a, last, TRUE, out, error);
}

static gboolean
age_finish(gpointer data, const IohEnd *src, const IohEnd *dst, IohStats *stats,
           GError **error)
{
    Age *a = data;

    (void)src, (void)dst, (void)error;
    stats->encryption = "age";
    stats->encryption_recipients = a->recipients;
    g_debug("age: %" G_GUINT64_FORMAT " chunks sealed, %u recipients",
            ioh_age_stream_chunks(a->stream), a->recipients);
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
