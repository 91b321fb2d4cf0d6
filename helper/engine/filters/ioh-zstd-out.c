/* ioh-zstd-out.c - the zstd filter's output buffer, and chunks stored as zstd frames of
 * one raw block each
 *
 * The zstd filter stores a chunk it finds incompressible (random RAM, an encrypted guest)
 * as frames of one raw block each (128 KiB), built here. Still standard zstd frames, each
 * with its checksum: XXH64, eight frames at a time (ioh-xxh64.c). Through the page cache
 * the frames' bytes are not copied: their headers and the caller's bytes go to the sink as
 * pieces of one vectored write (ioh_filter_outv). Into an O_DIRECT sink too, for whole
 * blocks at an aligned address: each block is a piece of its own after one aligned piece
 * (glue()) holding the frame before's checksum, a skippable frame as padding (zstd -dc and
 * libzstd skip it) and the block's headers: one alignment per 128 KiB stored more (3.1% at
 * 4096). The rest (a chunk's partial block) is copied into the aligned output. Not copying
 * is what keeps a compressed save of random RAM near a raw save's speed
 * (benchmarks/results/compress.md); the A/Bs of both paths: docs/benchmarks.md, "Engine
 * A/Bs: Raw frames".
 */
#include "ioh-zstd-out.h"
#include "ioh-cpu.h"
#include "ioh-error.h"
#include "ioh-layer.h"
#include "ioh-xxh64.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ZSTD_OUT_BUFFER ((gsize)1024 * 1024)
#define ZSTD_OUT_DIRECT ((gsize)4 * 1024 * 1024)
#define ZSTD_RAW_BLOCK (128 * 1024)  /* the largest block zstd allows */
#define ZSTD_RAW_FRAMES 8           /* raw frames hashed at once */
#define ZSTD_RAW_HEAD 9             /* a raw frame's bytes before its block's */
#define ZSTD_SKIP_MAGIC 0x184D2A50u /* a skippable frame: magic, 4-byte size, payload */
#define ZSTD_SKIP_HEAD 8

gboolean
ioh_zstd_out_alloc(IohZstdOut *o, const IohFilterOut *out, GError **error)
{
    if (o->buf) {
        return TRUE;
    }
    /* Through the page cache, a buffer that stays in the core's cache; O_DIRECT writes
     * of 4 MiB (faster than 1 MiB at one write in flight: docs/benchmarks.md, "The engine"). */
    o->size = out->align > 1 ? MAX(ZSTD_OUT_DIRECT, out->align + ZSTD_RAW_FRAMES *
                                   (ZSTD_RAW_BLOCK + ZSTD_RAW_HEAD + 4)) : ZSTD_OUT_BUFFER;
    o->size = IOH_ALIGN_UP(o->size, out->align);    /* copy_frames() fits */
    o->nbufs = 1;
    if (ioh_filter_out_behind_on(out)) {
        guint64 more = (guint64)(IOH_ZSTD_OUT_BUFS - 1) * o->size;

        o->nbufs += (guint)((o->memory ? ioh_mem_claim(o->memory, "zstd-out", 0, more,
                                                       o->size, NULL, NULL)
                                       : more) / o->size);
    }
    for (guint i = 0; i < o->nbufs; i++) {
        o->bufs[i] = ioh_filter_out_buffer(out, o->size);
        if (!o->bufs[i]) {
            return ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate %zu "
                                 "bytes", o->size);
        }
    }
    o->cur = 0;
    o->buf = o->bufs[0];
    return TRUE;
}

gboolean
ioh_zstd_out_put(IohZstdOut *o, IohFilterOut *out, gsize len, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    guint next = (o->cur + 1) % o->nbufs;
    gboolean ok;

    if (o->nbufs == 1) {
        ok = ioh_filter_out(out, o->buf, len, error);
        memmove(o->buf, o->buf + len, o->have - len);
    } else {
        ok = ioh_filter_out_behind(out, o->buf, len, &o->tickets[o->cur], error) &&
             ioh_filter_out_wait(out, o->tickets[next], error);
        if (ok) {
            memcpy(o->bufs[next], o->buf + len, o->have - len);
        }
        o->cur = next;
        o->buf = o->bufs[next];
    }
    o->have -= len;
    /* Written behind, this is the time the filter waited for a free buffer, not the
     * writes' own: --compress=auto's model judges the sink by what it costs the filter
     * (the writer thread's time made it compress an unthrottled save and run slower than
     * raw: docs/compression.md) */
    o->out_ns += (g_get_monotonic_time() - t0) * 1000;
    o->out_bytes += len;
    return ok;
}

/* ioh_filter_outv(), timed and counted as ioh_zstd_out_put(). */
static gboolean
put_pieces(IohZstdOut *o, IohFilterOut *out, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    gboolean ok = ioh_filter_outv(out, o->iov, o->niov, error);

    o->out_ns += (g_get_monotonic_time() - t0) * 1000;
    for (int i = 0; i < o->niov; i++) {
        o->out_bytes += o->iov[i].iov_len;
    }
    return ok;
}

/* Hands on the raw frames' pieces gathered so far (unaligned sink). */
static gboolean
flush_pieces(IohZstdOut *o, IohFilterOut *out, GError **error)
{
    gboolean ok = o->niov == 0 || put_pieces(o, out, error);

    o->niov = 0;
    o->nsmall = 0;
    if (o->queued > 0) {    /* what follows the pieces (a checksum) moves to the start */
        memmove(o->buf, o->buf + o->queued, o->have - o->queued);
        o->have -= o->queued;
        o->queued = 0;
    }
    return ok;
}

/* Appends @len bytes of raw frames to the next vectored hand-on: by reference (valid until
 * they are handed on), small ones copied (and joined to the piece before when adjacent). */
static gboolean
emit(IohZstdOut *o, const void *data, gsize len, IohFilterOut *out, GError **error)
{
    gboolean small = len <= IOH_ZSTD_OUT_SMALL;

    if ((o->niov == IOH_ZSTD_OUT_IOV || (small && o->nsmall + len > sizeof(o->small))) &&
        !flush_pieces(o, out, error)) {
        return FALSE;
    }
    if (small) {
        memcpy(o->small + o->nsmall, data, len);
        data = o->small + o->nsmall;
        o->nsmall += len;
        if (o->niov > 0 && o->nsmall > len &&
            (guint8 *)o->iov[o->niov - 1].iov_base + o->iov[o->niov - 1].iov_len == data) {
            o->iov[o->niov - 1].iov_len += len;    /* the small piece before */
            return TRUE;
        }
    }
    o->iov[o->niov++] = (struct iovec){ (void *)data, len };
    return TRUE;
}

/* The checksums of the raw frames of @len bytes at @buf, one per ZSTD_RAW_BLOCK (the last
 * may be shorter): the low 32 bits of their XXH64, little-endian. With @dst, each frame's
 * bytes are copied there on the way (one pass). */
static void
hash_frames(IohZstdOut *o, const guint8 *buf, gsize len, guint8 *const *dst, guint32 *sums)
{
    const guint8 *p[ZSTD_RAW_FRAMES];
    guint64 h[ZSTD_RAW_FRAMES];
    guint n = (guint)(len / ZSTD_RAW_BLOCK);
    gsize rest = len % ZSTD_RAW_BLOCK;
    gint64 t0 = ioh_cpu_thread_ns();

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
    o->cpu_ns += ioh_cpu_thread_ns() - t0;    /* checksums are compression's work */
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
gather_frames(IohZstdOut *o, const guint8 *buf, gsize len, IohFilterOut *out,
              GError **error)
{
    guint32 sums[ZSTD_RAW_FRAMES];
    guint8 h[ZSTD_RAW_HEAD];

    hash_frames(o, buf, len, NULL, sums);
    for (guint i = 0; len > 0; i++) {
        guint32 n = (guint32)MIN(len, (gsize)ZSTD_RAW_BLOCK);

        frame_head(h, n);
        if (!emit(o, h, sizeof(h), out, error) || !emit(o, buf, n, out, error) ||
            !emit(o, &sums[i], 4, out, error)) {
            return FALSE;
        }
        buf += n;
        len -= n;
        o->frames++;
    }
    return TRUE;
}

/* Raw frames of @len <= ZSTD_RAW_FRAMES * ZSTD_RAW_BLOCK bytes, copied into the aligned
 * output buffer (O_DIRECT) in the pass that computes their checksums. Where they would not
 * fit, the buffer's aligned part is handed on first and the rest moved to its start. */
static gboolean
copy_frames(IohZstdOut *o, const guint8 *buf, gsize len, IohFilterOut *out,
            GError **error)
{
    guint nf = (guint)((len + ZSTD_RAW_BLOCK - 1) / ZSTD_RAW_BLOCK);
    gsize need = len + nf * (ZSTD_RAW_HEAD + 4), pos;
    guint8 *dst[ZSTD_RAW_FRAMES];
    guint32 sums[ZSTD_RAW_FRAMES];

    if (o->have + need > o->size) {
        gsize done = IOH_ALIGN_DOWN(o->have, out->align);

        if (done > 0 && !ioh_zstd_out_put(o, out, done, error)) {
            return FALSE;
        }
    }
    for (guint i = 0; i < nf; i++) {
        dst[i] = o->buf + o->have + i * (ZSTD_RAW_BLOCK + ZSTD_RAW_HEAD + 4) +
                 ZSTD_RAW_HEAD;
    }
    hash_frames(o, buf, len, dst, sums);
    for (guint i = 0; i < nf; i++) {
        guint32 n = (guint32)MIN(len - (gsize)i * ZSTD_RAW_BLOCK, (gsize)ZSTD_RAW_BLOCK);

        frame_head(dst[i] - ZSTD_RAW_HEAD, n);
        memcpy(dst[i] + n, &sums[i], 4);
    }
    o->have += need;
    o->frames += nf;
    pos = o->have;
    return pos < o->size || ioh_zstd_out_put(o, out, pos, error);
}

/* O_DIRECT, before an aligned raw block of @n bytes: what the output buffer holds from
 * o->queued on (compressed output, or the last raw frame's checksum), a skippable frame
 * padding it to a multiple of the alignment, and the block's frame and block headers, as
 * one aligned piece that ends where the block starts. */
static gboolean
glue(IohZstdOut *o, guint32 n, IohFilterOut *out, GError **error)
{
    gsize len = IOH_ALIGN_UP(o->have - o->queued + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD,
                             out->align);
    guint8 *p;
    guint32 pad, skip[2];

    if ((o->niov + 2 > IOH_ZSTD_OUT_IOV || o->queued + len + 4 > o->size) &&
        !flush_pieces(o, out, error)) {
        return FALSE;
    }
    len = IOH_ALIGN_UP(o->have - o->queued + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD, out->align);
    if (len + 4 > o->size) {    /* a nearly full buffer: its aligned part goes first */
        gsize done = IOH_ALIGN_DOWN(o->have, out->align);

        if (!ioh_zstd_out_put(o, out, done, error)) {
            return FALSE;
        }
        len = IOH_ALIGN_UP(o->have + ZSTD_SKIP_HEAD + ZSTD_RAW_HEAD, out->align);
    }
    p = o->buf + o->have;
    pad = (guint32)(len - (o->have - o->queued) - ZSTD_SKIP_HEAD - ZSTD_RAW_HEAD);
    skip[0] = GUINT32_TO_LE(ZSTD_SKIP_MAGIC);
    skip[1] = GUINT32_TO_LE(pad);
    memcpy(p, skip, sizeof(skip));    /* p: any byte after compressed output */
    memset(p + ZSTD_SKIP_HEAD, 0, pad);
    frame_head(p + ZSTD_SKIP_HEAD + pad, n);
    o->iov[o->niov++] = (struct iovec){ o->buf + o->queued, len };
    o->queued += len;
    o->have = o->queued;
    return TRUE;
}

/* Raw frames of @len bytes, whole blocks (<= ZSTD_RAW_FRAMES) at an aligned @buf, into an
 * O_DIRECT sink uncopied: each block a piece of its own after its glue(); its checksum
 * stays in the output buffer, the start of the next glue or output. */
static gboolean
direct_frames(IohZstdOut *o, const guint8 *buf, gsize len, IohFilterOut *out,
              GError **error)
{
    guint32 sums[ZSTD_RAW_FRAMES];

    hash_frames(o, buf, len, NULL, sums);
    for (guint i = 0; i < len / ZSTD_RAW_BLOCK; i++) {
        if (!glue(o, ZSTD_RAW_BLOCK, out, error)) {
            return FALSE;
        }
        o->iov[o->niov++] = (struct iovec){ (void *)(buf + (gsize)i * ZSTD_RAW_BLOCK),
                                            ZSTD_RAW_BLOCK };
        memcpy(o->buf + o->have, &sums[i], 4);
        o->have += 4;
        o->frames++;
    }
    return TRUE;
}

/* The bytes of raw frames @buf may go to the sink uncopied: an O_DIRECT sink whose
 * alignment @buf and a block meet. */
static gboolean
direct_uncopied(const IohZstdOut *o, const guint8 *buf, const IohFilterOut *out)
{
    return !o->compact && out->align > 1 && ZSTD_RAW_BLOCK % out->align == 0 &&
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
gboolean
ioh_zstd_out_raw(IohZstdOut *o, const guint8 *buf, gsize len, IohFilterOut *out,
                 GError **error)
{
    if (out->align == 1 && o->have > 0) {
        o->iov[o->niov++] = (struct iovec){ o->buf, o->have };
        o->have = 0;
    }
    for (gsize done = 0; done < len;) {
        gsize part = MIN(len - done, (gsize)ZSTD_RAW_FRAMES * ZSTD_RAW_BLOCK);
        gsize whole = direct_uncopied(o, buf + done, out)
                          ? IOH_ALIGN_DOWN(part, ZSTD_RAW_BLOCK) : 0;

        if (whole > 0 && !direct_frames(o, buf + done, whole, out, error)) {
            return FALSE;
        }
        if (part > whole &&
            !(out->align > 1 ? flush_pieces(o, out, error) &&
                               copy_frames(o, buf + done + whole, part - whole, out, error)
                             : gather_frames(o, buf + done, part, out, error))) {
            return FALSE;
        }
        done += part;
    }
    return flush_pieces(o, out, error);
}

void
ioh_zstd_out_clear(IohZstdOut *o)
{
    if (o) {
        for (guint i = 0; i < o->nbufs; i++) {
            free(o->bufs[i]);
            o->bufs[i] = NULL;
        }
        o->buf = NULL;
    }
}
