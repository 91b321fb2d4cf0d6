/* ioh-filter-zstd.c - the transforming filters zstd (compress: --compress=zstd[:LEVEL])
 * and unzstd (decompress: --decompress)
 *
 * zstd compresses with libzstd's multithreaded streaming API: ZSTD_c_nbWorkers threads
 * compress jobs of the stream while the thread that calls the filter reads the source
 * and writes the sink, so compression overlaps the pipe and the disk. The output is one
 * standard zstd frame carrying its content checksum (ZSTD_c_checksumFlag): `zstd -dc`
 * gives back the stream. It is handed on in full buffers, multiples of the sink's
 * alignment (O_DIRECT), and the tail at the end.
 *
 * Incompressible input (random RAM, an encrypted guest) must cost little, and zstd's own
 * handling costs too much: measured on 256 MiB of random data piped in, level 1 took 0.59-
 * 0.80 s against 0.38-0.40 s raw (0.3 s of CPU in libzstd; docs/benchmarks.md). So each
 * chunk is probed first: a few samples compressed at level 1 by a separate one-thread
 * context (about 1.5% of the chunk); when they do not shrink below IOH_ZSTD_RAW_RATIO,
 * the zstd frame in progress is ended and the chunk is stored as frames of one raw block
 * each (128 KiB), built here. Still standard zstd frames, each with its checksum: XXH64,
 * eight frames at a time (ioh-xxh64.c). Through the page cache the frames' bytes are not
 * copied: their headers and the caller's bytes go to the sink as pieces of one vectored
 * write (ioh_filter_outv). Into an O_DIRECT sink too, for whole blocks at an aligned
 * address: each block is a piece of its own after one aligned piece (glue()) holding the
 * frame before's checksum, a skippable frame as padding (zstd -dc and libzstd skip it) and
 * the block's headers: one alignment per 128 KiB stored more (3.1% at 4096). The rest (a
 * chunk's partial block) is copied into the aligned output. Measured on 1 GiB of random
 * data piped in, 5 interleaved rounds: --direct 1.44-2.28 s, against 1.92-2.82 s copying.
 * Measured for the pieces through the page cache (512 MiB of random data piped in, interleaved rounds, median of the per-round
 * ratio of raw to compressed throughput) beside other work: buffered 0.85 -> 1.05,
 * --fadvise 0.86 -> 0.93, --direct 0.71 -> 0.76 (the copy and the checksums are in line
 * with its O_DIRECT writes); on a quiet machine both saves through the page cache are as
 * fast as raw before and after, and the helper's CPU drops 15-18% (buffered 0.40 -> 0.34 s,
 * --fadvise 0.43 -> 0.36 s, --direct 0.31 -> 0.27 s; raw 0.33 / 0.34 / 0.21 s).
 *
 * unzstd decodes any sequence of zstd frames (the helper's own, or the zstd CLI's) and
 * refuses a corrupt image: a bad block or checksum, or a stream that ends inside a
 * frame (truncated), is EBADMSG naming the file. The bytes decoded before the damage
 * was found have gone to the reader, who must discard them on the helper's failure.
 */
#include "ioh-filter.h"
#include "ioh-error.h"
#include "ioh-layer.h"
#include "ioh-xxh64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define ZSTD_OUT_BUFFER ((gsize)1024 * 1024)
#define ZSTD_OUT_DIRECT ((gsize)4 * 1024 * 1024)
#define ZSTD_PROBE_SAMPLES 4
#define ZSTD_PROBE_SAMPLE 4096
#define ZSTD_PROBE_MIN (64 * 1024)   /* smaller chunks (a stream's tail) are not probed */
#define IOH_ZSTD_RAW_RATIO 0.9       /* samples compressing worse than this: store raw */
#define ZSTD_RAW_BLOCK (128 * 1024)  /* the largest block zstd allows */
#define ZSTD_RAW_FRAMES 8           /* raw frames hashed at once */
#define ZSTD_RAW_HEAD 9             /* a raw frame's bytes before its block's */
#define ZSTD_IOV 64                 /* pieces of raw frames handed on in one call */
#define ZSTD_SMALL 16               /* pieces up to this long are copied (headers, sums) */
#define ZSTD_SKIP_MAGIC 0x184D2A50u /* a skippable frame: magic, 4-byte size, payload */
#define ZSTD_SKIP_HEAD 8

typedef struct {
    ZSTD_CCtx *cctx;         /* zstd */
    ZSTD_DCtx *dctx;         /* unzstd */
    ZSTD_CCtx *probe;        /* zstd: one thread, for the samples */
    guint8 *probe_buf;
    gboolean in_frame;       /* zstd: a compressed frame is open */
    gboolean raw;            /* zstd: the last chunk probed was stored raw */
    guint64 frames;          /* zstd: frames written */
    guint64 raw_chunks;      /* zstd: chunks stored raw */
    struct iovec iov[ZSTD_IOV];  /* zstd, unaligned sink: raw frames' pieces not handed
                                  * on yet, the caller's bytes by reference */
    int niov;
    guint8 small[ZSTD_IOV * ZSTD_SMALL];  /* ... and the small pieces, copied */
    gsize nsmall;
    guint8 *buf;             /* output, aligned to the sink's alignment */
    gsize size;
    gsize have;              /* zstd: bytes of buf not handed on yet */
    gsize queued;            /* zstd, O_DIRECT: of those, the first ones already in iov */
    size_t hint;             /* unzstd: ZSTD_decompressStream's last answer (0: between
                              * frames) */
    gboolean any;            /* unzstd: some input came */
    int level;
    gint64 cpu_ns;           /* of the calling thread inside libzstd */
    GHashTable *threads;     /* the process's threads when the filter opened */
} Zstd;

static gint64
thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The ids of the process's threads (/proc/self/task). */
static GHashTable *
thread_ids(void)
{
    GHashTable *ids = g_hash_table_new(NULL, NULL);
    g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_hash_table_add(ids, GINT_TO_POINTER(atoi(name)));
    }
    return ids;
}

/* CPU time, in microseconds, of the threads that were not there when the filter opened:
 * libzstd's workers (the engine's own threads have been joined by now). */
static gint64
worker_cpu_us(GHashTable *before)
{
    g_autoptr(GHashTable) now = thread_ids();
    GHashTableIter it;
    gpointer key;
    guint64 ticks = 0;

    g_hash_table_iter_init(&it, now);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        g_autofree char *path = g_strdup_printf("/proc/self/task/%d/stat",
                                                GPOINTER_TO_INT(key));
        g_autofree char *text = NULL;
        const char *p;
        guint64 ut = 0, st = 0;

        if (g_hash_table_contains(before, key) || !g_file_get_contents(path, &text, NULL,
                                                                       NULL) ||
            !(p = strrchr(text, ')'))) {
            continue;
        }
        /* after "pid (comm)": state is field 3, utime 14 and stime 15 */
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %" G_GUINT64_FORMAT
                   " %" G_GUINT64_FORMAT, &ut, &st) == 2) {
            ticks += ut + st;
        }
    }
    return (gint64)(ticks * G_USEC_PER_SEC / (guint64)sysconf(_SC_CLK_TCK));
}

static void
zstd_free(gpointer data)
{
    Zstd *z = data;

    if (z) {
        ZSTD_freeCCtx(z->cctx);
        ZSTD_freeDCtx(z->dctx);
        ZSTD_freeCCtx(z->probe);
        g_free(z->probe_buf);
        free(z->buf);
        if (z->threads) {
            g_hash_table_unref(z->threads);
        }
        g_free(z);
    }
}

static gboolean
zstd_check(size_t r, const char *what, GError **error)
{
    return !ZSTD_isError(r) ||
           ioh_error_set(error, EINVAL, what, NULL, "zstd: %s", ZSTD_getErrorName(r));
}

static gpointer
zstd_open(const IohCopyOptions *opts, GError **error)
{
    Zstd *z = g_new0(Zstd, 1);
    guint threads = opts->threads ? opts->threads : g_get_num_processors();

    z->level = opts->compress_level;
    z->threads = thread_ids();
    z->cctx = ZSTD_createCCtx();
    z->probe = ZSTD_createCCtx();
    z->probe_buf = g_malloc(ZSTD_compressBound(ZSTD_PROBE_SAMPLE));
    if (!z->cctx || !z->probe ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level),
                    "compression level", error) ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1), "checksum",
                    error) ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_nbWorkers, (int)threads),
                    "threads", error)) {
        if (!z->cctx || !z->probe) {
            ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate a context");
        }
        zstd_free(z);
        return NULL;
    }
    g_debug("zstd: level %d, %u worker threads", z->level, threads);
    return z;
}

static gpointer
unzstd_open(const IohCopyOptions *opts, GError **error)
{
    Zstd *z = g_new0(Zstd, 1);

    (void)opts;
    z->threads = thread_ids();
    z->dctx = ZSTD_createDCtx();
    if (!z->dctx) {
        zstd_free(z);
        ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate a context");
        return NULL;
    }
    return z;
}

/* The output buffer, once the sink's alignment is known. */
static gboolean
ensure_buffer(Zstd *z, IohFilterOut *out, GError **error)
{
    if (z->buf) {
        return TRUE;
    }
    /* Through the page cache, a buffer that stays in the core's cache; O_DIRECT writes
     * of 4 MiB (docs/benchmarks.md: 8-10% faster than 1 MiB). */
    z->size = out->align > 1 ? MAX(ZSTD_OUT_DIRECT, out->align + ZSTD_RAW_FRAMES *
                                   (ZSTD_RAW_BLOCK + ZSTD_RAW_HEAD + 4)) : ZSTD_OUT_BUFFER;
    z->size = IOH_ALIGN_UP(z->size, out->align);    /* copy_frames() fits */
    if (posix_memalign((void **)&z->buf, MAX(out->align, sizeof(void *)), z->size) != 0) {
        z->buf = NULL;
        return ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate %zu bytes",
                             z->size);
    }
    return TRUE;
}

/* Feeds @in to the compressor (@op: continue, or end the frame) and hands on every full
 * output buffer; returns once @in is taken (and, ending, the frame is complete). */
static gboolean
compress(Zstd *z, ZSTD_inBuffer *in, ZSTD_EndDirective op, IohFilterOut *out,
         GError **error)
{
    for (;;) {
        ZSTD_outBuffer ob = { z->buf, z->size, z->have };
        gint64 t0 = thread_cpu_ns();
        size_t left = ZSTD_compressStream2(z->cctx, &ob, in, op);

        z->cpu_ns += thread_cpu_ns() - t0;
        if (ZSTD_isError(left)) {
            return ioh_error_set(error, EIO, "compress", out->file, "zstd: %s",
                                 ZSTD_getErrorName(left));
        }
        z->have = ob.pos;
        if (z->have == z->size) {
            if (!ioh_filter_out(out, z->buf, z->size, error)) {
                return FALSE;
            }
            z->have = 0;
        }
        if (op == ZSTD_e_continue ? in->pos == in->size : left == 0) {
            return TRUE;
        }
    }
}

/* TRUE when samples of @buf do not compress: store it raw. */
static gboolean
incompressible(Zstd *z, const guint8 *buf, gsize len)
{
    gsize in = 0, got = 0;
    gint64 t0;

    /* storing raw already, one sample tells when the data turns compressible */
    guint samples = z->raw ? 1 : ZSTD_PROBE_SAMPLES;

    if (len < ZSTD_PROBE_MIN) {
        return FALSE;
    }
    t0 = thread_cpu_ns();
    for (guint i = 0; i < samples; i++) {
        gsize off = samples == 1 ? (len - ZSTD_PROBE_SAMPLE) / 2
                                 : (len - ZSTD_PROBE_SAMPLE) / (samples - 1) * i;
        size_t r = ZSTD_compressCCtx(z->probe, z->probe_buf,
                                     ZSTD_compressBound(ZSTD_PROBE_SAMPLE), buf + off,
                                     ZSTD_PROBE_SAMPLE, 1);

        in += ZSTD_PROBE_SAMPLE;
        got += ZSTD_isError(r) ? ZSTD_PROBE_SAMPLE : r;
    }
    z->cpu_ns += thread_cpu_ns() - t0;
    z->raw = (double)got > IOH_ZSTD_RAW_RATIO * (double)in;
    return z->raw;
}

/* Hands on the raw frames' pieces gathered so far (unaligned sink). */
static gboolean
flush_pieces(Zstd *z, IohFilterOut *out, GError **error)
{
    gboolean ok = z->niov == 0 || ioh_filter_outv(out, z->iov, z->niov, error);

    z->niov = 0;
    z->nsmall = 0;
    if (z->queued > 0) {    /* what follows the pieces (a checksum) moves to the start */
        memmove(z->buf, z->buf + z->queued, z->have - z->queued);
        z->have -= z->queued;
        z->queued = 0;
    }
    return ok;
}

/* Appends @len bytes of raw frames to the next vectored hand-on: by reference (valid until
 * they are handed on), small ones copied (and joined to the piece before when adjacent). */
static gboolean
emit(Zstd *z, const void *data, gsize len, IohFilterOut *out, GError **error)
{
    gboolean small = len <= ZSTD_SMALL;

    if ((z->niov == ZSTD_IOV || (small && z->nsmall + len > sizeof(z->small))) &&
        !flush_pieces(z, out, error)) {
        return FALSE;
    }
    if (small) {
        memcpy(z->small + z->nsmall, data, len);
        data = z->small + z->nsmall;
        z->nsmall += len;
        if (z->niov > 0 && z->nsmall > len &&
            (guint8 *)z->iov[z->niov - 1].iov_base + z->iov[z->niov - 1].iov_len == data) {
            z->iov[z->niov - 1].iov_len += len;    /* the small piece before */
            return TRUE;
        }
    }
    z->iov[z->niov++] = (struct iovec){ (void *)data, len };
    return TRUE;
}

/* The checksums of the raw frames of @len bytes at @buf, one per ZSTD_RAW_BLOCK (the last
 * may be shorter): the low 32 bits of their XXH64, little-endian. With @dst, each frame's
 * bytes are copied there on the way (one pass). */
static void
hash_frames(Zstd *z, const guint8 *buf, gsize len, guint8 *const *dst, guint32 *sums)
{
    const guint8 *p[ZSTD_RAW_FRAMES];
    guint64 h[ZSTD_RAW_FRAMES];
    guint n = (guint)(len / ZSTD_RAW_BLOCK);
    gsize rest = len % ZSTD_RAW_BLOCK;
    gint64 t0 = thread_cpu_ns();

    g_assert(n + (rest ? 1 : 0) <= ZSTD_RAW_FRAMES);
    for (guint i = 0; i < n + (rest ? 1 : 0); i++) {
        p[i] = buf + (gsize)i * ZSTD_RAW_BLOCK;
    }
    ioh_xxh64_many(p, dst, n, ZSTD_RAW_BLOCK, h);
    if (rest) {
        ioh_xxh64_many(p + n, dst ? dst + n : NULL, 1, rest, h + n);
        n++;
    }
    for (guint i = 0; i < n; i++) {
        sums[i] = GUINT32_TO_LE((guint32)h[i]);
    }
    z->cpu_ns += thread_cpu_ns() - t0;    /* the frames' checksums are compression's work */
}

/* The 9 bytes before a raw frame's @n bytes: the frame header, the block header. */
static void
frame_head(guint8 *h, guint32 n)
{
    static const guint8 header[6] = { 0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x38 };
    guint32 bh = n << 3 | 1u;

    memcpy(h, header, sizeof(header));
    h[6] = bh & 0xff;
    h[7] = (bh >> 8) & 0xff;
    h[8] = (bh >> 16) & 0xff;
}

/* Raw frames of @len <= ZSTD_RAW_FRAMES * ZSTD_RAW_BLOCK bytes, as pieces of the next
 * vectored hand-on: the caller's bytes by reference. */
static gboolean
gather_frames(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    guint32 sums[ZSTD_RAW_FRAMES];
    guint8 h[ZSTD_RAW_HEAD];

    hash_frames(z, buf, len, NULL, sums);
    for (guint i = 0; len > 0; i++) {
        guint32 n = (guint32)MIN(len, (gsize)ZSTD_RAW_BLOCK);

        frame_head(h, n);
        if (!emit(z, h, sizeof(h), out, error) || !emit(z, buf, n, out, error) ||
            !emit(z, &sums[i], 4, out, error)) {
            return FALSE;
        }
        buf += n;
        len -= n;
        z->frames++;
    }
    return TRUE;
}

/* Raw frames of @len <= ZSTD_RAW_FRAMES * ZSTD_RAW_BLOCK bytes, copied into the aligned
 * output buffer (O_DIRECT) in the pass that computes their checksums. Where they would not
 * fit, the buffer's aligned part is handed on first and the rest moved to its start. */
static gboolean
copy_frames(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    guint nf = (guint)((len + ZSTD_RAW_BLOCK - 1) / ZSTD_RAW_BLOCK);
    gsize need = len + nf * (ZSTD_RAW_HEAD + 4), pos;
    guint8 *dst[ZSTD_RAW_FRAMES];
    guint32 sums[ZSTD_RAW_FRAMES];

    if (z->have + need > z->size) {
        gsize done = IOH_ALIGN_DOWN(z->have, out->align);

        if (done > 0 && !ioh_filter_out(out, z->buf, done, error)) {
            return FALSE;
        }
        memmove(z->buf, z->buf + done, z->have - done);
        z->have -= done;
    }
    for (guint i = 0; i < nf; i++) {
        dst[i] = z->buf + z->have + i * (ZSTD_RAW_BLOCK + ZSTD_RAW_HEAD + 4) + ZSTD_RAW_HEAD;
    }
    hash_frames(z, buf, len, dst, sums);
    for (guint i = 0; i < nf; i++) {
        guint32 n = (guint32)MIN(len - (gsize)i * ZSTD_RAW_BLOCK, (gsize)ZSTD_RAW_BLOCK);

        frame_head(dst[i] - ZSTD_RAW_HEAD, n);
        memcpy(dst[i] + n, &sums[i], 4);
    }
    z->have += need;
    z->frames += nf;
    pos = z->have;
    if (pos == z->size) {
        z->have = 0;
        return ioh_filter_out(out, z->buf, pos, error);
    }
    return TRUE;
}

/* O_DIRECT, before an aligned raw block of @n bytes: what the output buffer holds from
 * z->queued on (compressed output, or the last raw frame's checksum), a skippable frame
 * padding it to a multiple of the alignment, and the block's frame and block headers, as
 * one aligned piece that ends where the block starts. */
static gboolean
glue(Zstd *z, guint32 n, IohFilterOut *out, GError **error)
{
    gsize len = IOH_ALIGN_UP(z->have - z->queued + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD, out->align);
    guint8 *p;
    guint32 pad, skip[2];

    if ((z->niov + 2 > ZSTD_IOV || z->queued + len + 4 > z->size) &&
        !flush_pieces(z, out, error)) {
        return FALSE;
    }
    len = IOH_ALIGN_UP(z->have - z->queued + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD, out->align);
    if (len + 4 > z->size) {    /* a nearly full buffer: its aligned part goes first */
        gsize done = IOH_ALIGN_DOWN(z->have, out->align);

        if (!ioh_filter_out(out, z->buf, done, error)) {
            return FALSE;
        }
        memmove(z->buf, z->buf + done, z->have - done);
        z->have -= done;
        len = IOH_ALIGN_UP(z->have + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD, out->align);
    }
    p = z->buf + z->have;
    pad = (guint32)(len - (z->have - z->queued) - ZSTD_SKIP_HEAD - ZSTD_RAW_HEAD);
    skip[0] = GUINT32_TO_LE(ZSTD_SKIP_MAGIC);
    skip[1] = GUINT32_TO_LE(pad);
    memcpy(p, skip, sizeof(skip));    /* p: any byte after compressed output */
    memset(p + ZSTD_SKIP_HEAD, 0, pad);
    frame_head(p + ZSTD_SKIP_HEAD + pad, n);
    z->iov[z->niov++] = (struct iovec){ z->buf + z->queued, len };
    z->queued += len;
    z->have = z->queued;
    return TRUE;
}

/* Raw frames of @len bytes, whole blocks (<= ZSTD_RAW_FRAMES) at an aligned @buf, into an
 * O_DIRECT sink uncopied: each block a piece of its own after its glue(); its checksum
 * stays in the output buffer, the start of the next glue or output. */
static gboolean
direct_frames(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    guint32 sums[ZSTD_RAW_FRAMES];

    hash_frames(z, buf, len, NULL, sums);
    for (guint i = 0; i < len / ZSTD_RAW_BLOCK; i++) {
        if (!glue(z, ZSTD_RAW_BLOCK, out, error)) {
            return FALSE;
        }
        z->iov[z->niov++] = (struct iovec){ (void *)(buf + (gsize)i * ZSTD_RAW_BLOCK),
                                            ZSTD_RAW_BLOCK };
        memcpy(z->buf + z->have, &sums[i], 4);
        z->have += 4;
        z->frames++;
    }
    return TRUE;
}

/* The bytes of raw frames @buf may go to the sink uncopied: an O_DIRECT sink whose
 * alignment @buf and a block meet. */
static gboolean
direct_uncopied(const guint8 *buf, const IohFilterOut *out)
{
    return out->align > 1 && ZSTD_RAW_BLOCK % out->align == 0 &&
           (guintptr)buf % out->align == 0;
}

/* @len > 0 bytes as zstd frames of one raw block each (RFC 8878), ZSTD_RAW_BLOCK bytes (the
 * largest block) but the last: the magic number; a frame header descriptor with the
 * content checksum flag and a window descriptor (128 KiB); the block's 3-byte header
 * (last-block bit, type 0 = raw, size) and its bytes; the low 32 bits of their XXH64.
 * Frames of one block, as their checksums are computed many at a time (ioh-xxh64.c).
 * Unaligned, what the output buffer holds goes first, then the frames' pieces in one
 * vectored hand-on: no copy of the bytes. O_DIRECT, aligned whole blocks go uncopied too
 * (direct_frames()), the rest is copied into the output buffer (copy_frames()). */
static gboolean
store_raw(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    if (out->align == 1 && z->have > 0) {
        z->iov[z->niov++] = (struct iovec){ z->buf, z->have };
        z->have = 0;
    }
    for (gsize done = 0; done < len;) {
        gsize part = MIN(len - done, (gsize)ZSTD_RAW_FRAMES * ZSTD_RAW_BLOCK);
        gsize whole = direct_uncopied(buf + done, out) ? IOH_ALIGN_DOWN(part, ZSTD_RAW_BLOCK)
                                                       : 0;

        if (whole > 0 && !direct_frames(z, buf + done, whole, out, error)) {
            return FALSE;
        }
        if (part > whole &&
            !(out->align > 1 ? flush_pieces(z, out, error) &&
                               copy_frames(z, buf + done + whole, part - whole, out, error)
                             : gather_frames(z, buf + done, part, out, error))) {
            return FALSE;
        }
        done += part;
    }
    z->raw_chunks++;
    return flush_pieces(z, out, error);
}

/* Ends the compressed frame in progress, if any (or, for an empty stream, writes one
 * empty frame: the image always holds a frame). */
static gboolean
end_frame(Zstd *z, gboolean last, IohFilterOut *out, GError **error)
{
    ZSTD_inBuffer in = { NULL, 0, 0 };

    if (!z->in_frame && !(last && z->frames == 0)) {
        return TRUE;
    }
    if (!compress(z, &in, ZSTD_e_end, out, error)) {
        return FALSE;
    }
    z->in_frame = FALSE;
    z->frames++;
    return TRUE;
}

static gboolean
zstd_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
               GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { buf, len, 0 };

    if (!ensure_buffer(z, out, error)) {
        return FALSE;
    }
    if (incompressible(z, buf, len)) {
        return end_frame(z, FALSE, out, error) && store_raw(z, buf, len, out, error);
    }
    z->in_frame = TRUE;
    return compress(z, &in, ZSTD_e_continue, out, error);
}

/* The end of the frame, then the tail (unaligned: the sink writes it buffered). */
static gboolean
zstd_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Zstd *z = data;

    if (!ensure_buffer(z, out, error) || !end_frame(z, TRUE, out, error)) {
        return FALSE;
    }
    if (z->have > 0 && !ioh_filter_out(out, z->buf, z->have, error)) {
        return FALSE;
    }
    z->have = 0;
    return TRUE;
}

static gboolean
unzstd_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
                 GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { buf, len, 0 };
    ZSTD_outBuffer ob;

    if (!ensure_buffer(z, out, error)) {
        return FALSE;
    }
    z->any = TRUE;
    do {
        gint64 t0 = thread_cpu_ns();

        ob = (ZSTD_outBuffer){ z->buf, z->size, 0 };
        z->hint = ZSTD_decompressStream(z->dctx, &ob, &in);
        z->cpu_ns += thread_cpu_ns() - t0;
        if (ZSTD_isError(z->hint)) {
            return ioh_error_set(error, EBADMSG, "decompress", out->file,
                                 "corrupt zstd image: %s", ZSTD_getErrorName(z->hint));
        }
        if (ob.pos > 0 && !ioh_filter_out(out, z->buf, ob.pos, error)) {
            return FALSE;
        }
        /* a full buffer may hide more output, unless the frame is complete (hint 0):
         * another call would then start reading the next frame's header */
    } while (in.pos < in.size || (ob.pos == ob.size && z->hint != 0));
    return TRUE;
}

static gboolean
unzstd_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Zstd *z = data;

    if (!z->any) {
        return ioh_error_set(error, EBADMSG, "decompress", out->file,
                             "corrupt zstd image: no zstd frame (empty)");
    }
    if (z->hint != 0) {
        return ioh_error_set(error, EBADMSG, "decompress", out->file,
                             "corrupt zstd image: truncated (it ends inside a frame)");
    }
    return TRUE;
}

static gboolean
zstd_finish(gpointer data, const IohEnd *src, const IohEnd *dst, IohStats *stats,
            GError **error)
{
    Zstd *z = data;

    (void)src, (void)dst, (void)error;
    stats->compression = "zstd";
    stats->has_level = z->cctx != NULL;    /* unzstd cannot know the image's level */
    stats->compression_level = z->level;
    stats->compress_cpu_us = z->cpu_ns / 1000 + worker_cpu_us(z->threads);
    g_debug("zstd: %" G_GUINT64_FORMAT " stream bytes, %" G_GUINT64_FORMAT " stored, "
            "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT " chunks stored raw, "
            "%.3f s CPU", stats->bytes, stats->stored, z->frames, z->raw_chunks,
            (double)stats->compress_cpu_us / G_USEC_PER_SEC);
    return TRUE;
}

const IohFilterClass ioh_filter_zstd = {
    .name = "zstd",
    .open = zstd_open,
    .transform = zstd_transform,
    .flush = zstd_flush,
    .finish = zstd_finish,
    .free = zstd_free,
};

const IohFilterClass ioh_filter_unzstd = {
    .name = "unzstd",
    .open = unzstd_open,
    .transform = unzstd_transform,
    .flush = unzstd_flush,
    .finish = zstd_finish,
    .free = zstd_free,
};
