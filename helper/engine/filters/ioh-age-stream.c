/* ioh-age-stream.c - age's STREAM over 64 KiB chunks, in parallel (ioh-age-stream.h) */
#include "ioh-age-stream.h"

#include <string.h>

#include "ioh-age-crypto.h"
#include "ioh-secmem.h"

/* One thread's contiguous share of a call's chunks. */
typedef struct {
    IohAgeStream *s;
    guint part;              /* which thread's context */
    gboolean seal;
    const guint8 *in;        /* its first chunk */
    guint8 *out;
    guint64 first;           /* the stream index of its first chunk */
    guint64 n;               /* chunks */
    gsize last_len;          /* the input bytes of its last chunk */
    gboolean final;          /* its last chunk is the stream's */
    gboolean ok;
    guint64 bad;             /* the first chunk that did not authenticate */
} Part;

struct _IohAgeStream {
    guint threads;
    IohAgeAead **aead;       /* one per thread */
    GThreadPool *pool;       /* one worker per thread */
    Part *parts;             /* the call in progress, one per thread */
    guint n_parts;
    GMutex lock;
    GCond done;
    guint pending;           /* parts not yet done */
    guint64 chunks;
};

static void
part_nonce(guint64 index, gboolean last, guint8 nonce[IOH_AGE_NONCE_LEN])
{
    memset(nonce, 0, IOH_AGE_NONCE_LEN);
    for (int i = 10; i >= 3; i--, index >>= 8) {
        nonce[i] = (guint8)index;   /* 11 bytes big-endian: the top 3 stay 0 */
    }
    nonce[11] = last ? 1 : 0;
}

static void
part_run(Part *p)
{
    IohAgeAead *a = p->s->aead[p->part];

    p->ok = TRUE;
    for (guint64 i = 0; i < p->n; i++) {
        gboolean last = p->final && i == p->n - 1;
        gsize in_len = i == p->n - 1 ? p->last_len
                                     : (p->seal ? IOH_AGE_CHUNK : IOH_AGE_CT_CHUNK);
        guint8 nonce[IOH_AGE_NONCE_LEN];
        const guint8 *in = p->in + i * (p->seal ? IOH_AGE_CHUNK : IOH_AGE_CT_CHUNK);
        guint8 *out = p->out + i * (p->seal ? IOH_AGE_CT_CHUNK : IOH_AGE_CHUNK);

        part_nonce(p->first + i, last, nonce);
        if (p->seal ? !ioh_age_aead_seal(a, nonce, in, in_len, out)
                    : !ioh_age_aead_open(a, nonce, in, in_len, out)) {
            p->ok = FALSE;
            p->bad = p->first + i;
            return;
        }
    }
}

static void
worker(gpointer data, gpointer user_data)
{
    Part *p = data;
    IohAgeStream *s = user_data;

    part_run(p);
    g_mutex_lock(&s->lock);
    if (--s->pending == 0) {
        g_cond_signal(&s->done);
    }
    g_mutex_unlock(&s->lock);
}

IohAgeStream *
ioh_age_stream_new(const guint8 payload_key[32], guint threads)
{
    IohAgeStream *s = g_new0(IohAgeStream, 1);

    s->threads = MAX(threads, 1);
    s->aead = g_new0(IohAgeAead *, s->threads);
    g_mutex_init(&s->lock);
    g_cond_init(&s->done);
    for (guint i = 0; i < s->threads; i++) {
        s->aead[i] = ioh_age_aead_new(payload_key);
        if (!s->aead[i]) {
            ioh_age_stream_free(s);
            return NULL;
        }
    }
    s->parts = g_new0(Part, s->threads);
    s->pool = g_thread_pool_new(worker, s, (int)s->threads, TRUE, NULL);
    return s;
}

void
ioh_age_stream_free(IohAgeStream *s)
{
    if (!s) {
        return;
    }
    if (s->pool) {
        g_thread_pool_free(s->pool, FALSE, TRUE);
    }
    g_free(s->parts);
    for (guint i = 0; i < s->threads; i++) {
        ioh_age_aead_free(s->aead[i]);
    }
    g_free(s->aead);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->done);
    g_free(s);
}

/* Splits @n chunks (the last @last_len input bytes) over the threads and starts them:
 * all on the pool (@async), or the first part in the calling thread. */
static void
start_parts(IohAgeStream *s, gboolean seal, const guint8 *in, guint64 n, gsize last_len,
            gboolean final, guint8 *out, gboolean async)
{
    gsize in_step = seal ? IOH_AGE_CHUNK : IOH_AGE_CT_CHUNK;
    gsize out_step = seal ? IOH_AGE_CT_CHUNK : IOH_AGE_CHUNK;
    Part *p = s->parts;
    guint64 at = 0;

    s->n_parts = (guint)MIN((guint64)s->threads, n);
    s->pending = async ? s->n_parts : s->n_parts - 1;
    for (guint j = 0; j < s->n_parts; j++) {
        guint64 cnt = n / s->n_parts + (j < n % s->n_parts ? 1 : 0);
        gboolean tail = j == s->n_parts - 1;

        p[j] = (Part){ s, j, seal, in + at * in_step, out + at * out_step, s->chunks + at,
                       cnt, tail ? last_len : in_step, tail && final, FALSE, 0 };
        at += cnt;
        if (async || j > 0) {
            g_thread_pool_push(s->pool, &p[j], NULL);
        }
    }
    s->chunks += n;
    if (!async) {
        part_run(&p[0]);
    }
}

/* Waits for the parts started: the first chunk that failed in *@ret_bad. */
static gboolean
wait_parts(IohAgeStream *s, guint64 *ret_bad)
{
    gboolean ok = TRUE;

    g_mutex_lock(&s->lock);
    while (s->pending > 0) {
        g_cond_wait(&s->done, &s->lock);
    }
    g_mutex_unlock(&s->lock);
    for (guint j = 0; j < s->n_parts && ok; j++) {
        ok = s->parts[j].ok;
        *ret_bad = s->parts[j].bad;
    }
    s->n_parts = 0;
    return ok;
}

/* The chunks of @len bytes of plaintext, and what sealing them makes. */
static guint64
seal_chunks(gsize len, gboolean final, gsize *ret_len)
{
    guint64 n = len == 0 ? 1 : (len + IOH_AGE_CHUNK - 1) / IOH_AGE_CHUNK;

    g_assert(final || (len > 0 && len % IOH_AGE_CHUNK == 0));
    *ret_len = len + (gsize)n * IOH_AGE_TAG_LEN;
    return n;
}

gboolean
ioh_age_stream_seal(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                    guint8 *out, gsize *ret_len)
{
    guint64 bad = 0;

    ioh_age_stream_seal_start(s, in, len, final, out, ret_len, FALSE);
    return wait_parts(s, &bad);
}

void
ioh_age_stream_seal_start(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                          guint8 *out, gsize *ret_len, gboolean async)
{
    guint64 n = seal_chunks(len, final, ret_len);

    g_assert(s->n_parts == 0);
    start_parts(s, TRUE, in, n, len - (gsize)(n - 1) * IOH_AGE_CHUNK, final, out, async);
}

gboolean
ioh_age_stream_seal_wait(IohAgeStream *s)
{
    guint64 bad = 0;

    return s->n_parts == 0 || wait_parts(s, &bad);
}

gboolean
ioh_age_stream_open(IohAgeStream *s, const guint8 *in, gsize len, gboolean final,
                    guint8 *out, gsize *ret_len, guint64 *ret_bad)
{
    guint64 n = (len + IOH_AGE_CT_CHUNK - 1) / IOH_AGE_CT_CHUNK;
    gsize last_len = len - (gsize)(n - 1) * IOH_AGE_CT_CHUNK;

    g_assert(n > 0 && (final || len % IOH_AGE_CT_CHUNK == 0));
    if (last_len < IOH_AGE_TAG_LEN) {
        *ret_bad = s->chunks + n - 1;
        return FALSE;
    }
    start_parts(s, FALSE, in, n, last_len, final, out, FALSE);
    if (!wait_parts(s, ret_bad)) {
        return FALSE;
    }
    *ret_len = len - (gsize)n * IOH_AGE_TAG_LEN;
    return TRUE;
}

guint64
ioh_age_stream_chunks(const IohAgeStream *s)
{
    return s->chunks;
}

IohAgeStream *
ioh_age_stream_new_payload(const guint8 file_key[16], const guint8 nonce[16],
                           guint threads)
{
    guint8 *key = ioh_secmem_alloc(32);
    IohAgeStream *s = NULL;

    if (key && ioh_age_hkdf(file_key, IOH_AGE_FILE_KEY_LEN, nonce, 16, "payload", key)) {
        s = ioh_age_stream_new(key, threads);
    }
    ioh_secmem_free(key, 32);
    return s;
}
