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
 * handling (raw blocks, but only after trying to compress them) costs too much
 * (docs/benchmarks.md, "zstd compression", "Incompressible data"). So each
 * chunk is probed first: a few samples compressed at level 1 by a separate one-thread
 * context (about 1.5% of the chunk); when they do not shrink below IOH_ZSTD_RAW_RATIO,
 * the zstd frame in progress is ended and the chunk is stored as frames of one raw block
 * each, still standard zstd frames with their checksums, handed on mostly uncopied
 * (ioh-zstd-out.c).
 *
 * --compress=auto (IohCopyOptions.compress_auto) stores each 8 MiB window raw or at the
 * level ioh-zstd-adapt.c chooses from what the filter measures of the window: the time in
 * the sink's writes, blocked in libzstd and waiting for the next chunk, the other threads'
 * CPU time and libzstd's frame progression; the level changes inside the frame (libzstd's
 * workers take it for their next job), raw ends it. Its memory is level 3's.
 *
 * unzstd decodes any sequence of zstd frames (the helper's own, or the zstd CLI's) and
 * refuses a corrupt image: a bad block or checksum, a stream that ends inside a frame
 * (truncated), or one without a zstd frame (empty, or only skippable frames, which zstd
 * -dc would take as an empty stream) is EBADMSG naming the file. A frame whose window is
 * over IOH_ZSTD_WINDOW_LOG_MAX (`zstd --long=31`) is ENOTSUP, saying the window it needs.
 * The bytes decoded before the damage was found have gone to the reader, who must
 * discard them on the helper's failure.
 */
#include "ioh-filter.h"
#include "ioh-cpu.h"
#include "ioh-cpus.h"
#include "ioh-error.h"
#include "ioh-layer.h"
#include "ioh-zstd-adapt.h"
#include "ioh-zstd-out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define ZSTD_STATIC_LINKING_ONLY    /* the parameters, the memory estimates, frame headers */
#include <zstd.h>
#include <zstd_errors.h>

#define ZSTD_PROBE_SAMPLES 4
#define ZSTD_PROBE_SAMPLE 4096
#define ZSTD_PROBE_MIN (64 * 1024)   /* smaller chunks (a stream's tail) are not probed */
#define IOH_ZSTD_RAW_RATIO 0.9       /* samples compressing worse than this: store raw */

typedef struct {
    ZSTD_CCtx *cctx;         /* zstd */
    ZSTD_DCtx *dctx;         /* unzstd */
    ZSTD_CCtx *probe;        /* zstd: one thread, for the samples */
    guint8 *probe_buf;
    gboolean in_frame;       /* zstd: a compressed frame is open */
    gboolean raw;            /* zstd: the last chunk probed was stored raw */
    guint64 frames;          /* zstd: compressed frames written */
    guint64 raw_chunks;      /* zstd: chunks stored raw */
    IohZstdOut o;            /* output, and the raw frames */
    size_t hint;             /* unzstd: ZSTD_decompressStream's last answer (0: between
                              * frames) */
    gboolean any;            /* unzstd: some input came */
    guint64 zframes;         /* unzstd: zstd frames decoded (skippable ones not counted) */
    guint8 head[ZSTD_FRAMEHEADERSIZE_MAX];  /* unzstd: the first bytes of the frame being
                                             * read: its magic and header */
    gsize head_len;
    gboolean head_charged;   /* unzstd: the window of the frame being read is charged */
    guint64 dwindow;         /* unzstd: the largest window charged (ioh_mem_claim) */
    int level;
    IohMemAccount *memory;   /* the copy's account (ioh-mem-account.h) */
    gint64 cpu_ns;           /* of the calling thread inside libzstd */
    GHashTable *threads;     /* the process's threads when the filter opened */
    guint workers;           /* zstd: libzstd's worker threads (0: none) */
    IohAdapt *adapt;         /* zstd, --compress=auto: the choice per window */
    int top;                 /* auto: the highest level a chunk was compressed at */
    gboolean top_set;
    IohAdaptWindow win;      /* auto: the window being measured, and where it started: */
    gint64 win_start, last_end, win_cpu, win_own, win_out_ns;
    guint64 win_out, win_consumed, win_produced;
    guint64 done_consumed;   /* auto: the frames ended so far, their progression */
    guint64 done_produced;
    gint64 blocked_ns;       /* auto: wall time in ZSTD_compressStream2 */
} Zstd;

static void
zstd_free(gpointer data)
{
    Zstd *z = data;

    if (z) {
        ZSTD_freeCCtx(z->cctx);
        ZSTD_freeDCtx(z->dctx);
        ZSTD_freeCCtx(z->probe);
        g_free(z->probe_buf);
        g_free(z->adapt);
        ioh_zstd_out_clear(&z->o);
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

/* Memory (ioh-mem-account.h). A compressing filter holds, besides libzstd's contexts, its
 * output buffer (at most 4 MiB, for an O_DIRECT sink: ioh-zstd-out.c) and the probe's
 * context; libzstd's multithreaded compressor holds, per worker, a context sized by the
 * level's parameters (ZSTD_estimateCCtxSize) and a job's input and output (a job is four
 * windows, at least 1 MiB), and three jobs more of input (zstdmt_compress.c's round
 * buffer). The floor is one context in the calling thread (no worker) with a window of
 * at most 1 MiB, its tables lowered to fit it (ZSTD_estimateCStreamSize): what libzstd
 * needs to compress at the level at all (1.3 MiB at level 1, 2.5 MiB at 3, 19 MiB at 19,
 * plus the filter's own 4.6 MiB). Between that and what --threads asks, the filter takes
 * the most workers that fit, each with the largest window that fits. */
#define ZSTD_OWN_BYTES ((guint64)4 * 1024 * 1024 + ZSTD_estimateCCtxSize(1))
#define ZSTD_FLOOR_WLOG 20

typedef struct {
    int level;
    guint threads;          /* asked */
    int wdef;               /* the level's window log */
    int wmin;               /* the floor's */
    guint workers;          /* the shape chosen: workers (0: none) ... */
    int wlog;               /* ... and window log */
} ZstdShape;

/* The level's parameters with a window of 2^@wlog at most, the tables lowered to it. */
static ZSTD_compressionParameters
zstd_cparams(int level, int wlog)
{
    ZSTD_compressionParameters cp = ZSTD_getCParams(level, 0, 0);
    unsigned cycle = cp.chainLog - (cp.strategy >= ZSTD_btlazy2 ? 1 : 0);

    if (wlog < (int)cp.windowLog) {
        cp.windowLog = (unsigned)wlog;
        cp.hashLog = MIN(cp.hashLog, (unsigned)wlog + 1);
        cp.chainLog -= cycle > (unsigned)wlog ? cycle - (unsigned)wlog : 0;
    }
    return cp;
}

/* The bytes of @workers (0: compressing in the calling thread) at window log @wlog. */
static guint64
zstd_bytes(int level, guint workers, int wlog)
{
    ZSTD_compressionParameters cp = zstd_cparams(level, wlog);
    guint64 job = (guint64)1 << MAX(20, wlog + 2);

    if (workers == 0) {
        return ZSTD_OWN_BYTES + ZSTD_estimateCStreamSize_usingCParams(cp);
    }
    return ZSTD_OWN_BYTES + 3 * job +
           workers * (ZSTD_estimateCCtxSize_usingCParams(cp) + job + ZSTD_compressBound(job));
}

/* IohMemFitFunc: the most workers within @bytes, each with the largest window. */
static guint64
zstd_fit(guint64 bytes, gpointer data)
{
    ZstdShape *s = data;

    for (guint k = s->threads; k > 0; k--) {
        for (int w = s->wdef; w >= s->wmin; w--) {
            if (zstd_bytes(s->level, k, w) <= bytes) {
                s->workers = k;
                s->wlog = w;
                return zstd_bytes(s->level, k, w);
            }
        }
    }
    s->workers = 0;
    for (s->wlog = s->wdef; s->wlog > s->wmin; s->wlog--) {
        if (zstd_bytes(s->level, 0, s->wlog) <= bytes) {
            break;
        }
    }
    return zstd_bytes(s->level, 0, s->wlog);
}

/* Claims the compressor's memory: its shape into @s. */
static void
zstd_claim(const IohCopyOptions *opts, int level, ZstdShape *s)
{
    s->level = level;
    s->threads = opts->threads ? opts->threads : ioh_cpus_usable();
    s->wdef = (int)ZSTD_getCParams(s->level, 0, 0).windowLog;
    s->wmin = MIN(s->wdef, ZSTD_FLOOR_WLOG);
    s->workers = s->threads;
    s->wlog = s->wdef;
    if (opts->memory) {
        ioh_mem_claim(opts->memory, "zstd", zstd_bytes(s->level, 0, s->wmin),
                      zstd_bytes(s->level, s->threads, s->wdef), 0, zstd_fit, s);
    }
}

/* The shape's parameters on the context: workers, and a lowered window. */
static gboolean
zstd_set_shape(Zstd *z, const ZstdShape *s, GError **error)
{
    ZSTD_compressionParameters cp = zstd_cparams(s->level, s->wlog);

    if (!zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_nbWorkers, (int)s->workers),
                    "threads", error)) {
        return FALSE;
    }
    if (s->wlog >= s->wdef) {
        return TRUE;
    }
    return zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_windowLog, (int)cp.windowLog),
                      "window", error) &&
           zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_hashLog, (int)cp.hashLog),
                      "window", error) &&
           zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_chainLog, (int)cp.chainLog),
                      "window", error);
}

static gpointer
zstd_open(const IohCopyOptions *opts, GError **error)
{
    Zstd *z = g_new0(Zstd, 1);
    ZstdShape s;

    z->level = opts->compress_auto ? IOH_ADAPT_LEVEL_MAX : opts->compress_level;
    zstd_claim(opts, z->level, &s);
    z->o.memory = opts->memory;    /* its buffers written behind: layer zstd-out */
    z->threads = ioh_cpu_threads();
    z->cctx = ZSTD_createCCtx();
    z->probe = ZSTD_createCCtx();
    z->probe_buf = g_malloc(ZSTD_compressBound(ZSTD_PROBE_SAMPLE));
    if (!z->cctx || !z->probe ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level),
                    "compression level", error) ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1), "checksum",
                    error) ||
        !zstd_set_shape(z, &s, error)) {
        if (!z->cctx || !z->probe) {
            ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate a context");
        }
        zstd_free(z);
        return NULL;
    }
    z->workers = s.workers;
    if (opts->compress_auto) {
        z->adapt = g_new(IohAdapt, 1);
        ioh_adapt_init(z->adapt, MAX(s.workers, 1), ioh_cpus_usable());
        z->o.compact = TRUE;
    }
    g_debug("zstd: level %d%s, %u worker threads (%u asked), window 2^%d", z->level,
            z->adapt ? " at most (auto)" : "", s.workers, s.threads, s.wlog);
    return z;
}

static gpointer
unzstd_open(const IohCopyOptions *opts, GError **error)
{
    Zstd *z = g_new0(Zstd, 1);

    z->memory = opts->memory;
    z->threads = ioh_cpu_threads();
    z->dctx = ZSTD_createDCtx();
    if (!z->dctx) {
        zstd_free(z);
        ioh_error_set(error, ENOMEM, NULL, NULL, "zstd: cannot allocate a context");
        return NULL;
    }
    if (!zstd_check(ZSTD_DCtx_setParameter(z->dctx, ZSTD_d_windowLogMax,
                                           IOH_ZSTD_WINDOW_LOG_MAX), "window", error)) {
        zstd_free(z);
        return NULL;
    }
    return z;
}

/* Feeds @in to the compressor (@op: continue, or end the frame) and hands on every full
 * output buffer; returns once @in is taken (and, ending, the frame is complete). */
static gboolean
compress(Zstd *z, ZSTD_inBuffer *in, ZSTD_EndDirective op, IohFilterOut *out,
         GError **error)
{
    for (;;) {
        ZSTD_outBuffer ob = { z->o.buf, z->o.size, z->o.have };
        gint64 t0 = ioh_cpu_thread_ns(), w0 = g_get_monotonic_time();
        size_t left = ZSTD_compressStream2(z->cctx, &ob, in, op);

        z->cpu_ns += ioh_cpu_thread_ns() - t0;
        z->blocked_ns += (g_get_monotonic_time() - w0) * 1000;
        if (ZSTD_isError(left)) {
            return ioh_error_set(error, EIO, "compress", out->file, "zstd: %s",
                                 ZSTD_getErrorName(left));
        }
        z->o.have = ob.pos;
        if (z->o.have == z->o.size && !ioh_zstd_out_put(&z->o, out, z->o.size, error)) {
            return FALSE;
        }
        if (op == ZSTD_e_continue ? in->pos == in->size : left == 0) {
            return TRUE;
        }
    }
}

/* Level 1 on @samples samples of @buf (len >= ZSTD_PROBE_MIN): what they came to per
 * byte; the CPU time it took in @ret_ns. */
static double
probe(Zstd *z, const guint8 *buf, gsize len, guint samples, gint64 *ret_ns)
{
    gsize in = 0, got = 0;
    gint64 t0 = ioh_cpu_thread_ns();

    for (guint i = 0; i < samples; i++) {
        gsize off = samples == 1 ? (len - ZSTD_PROBE_SAMPLE) / 2
                                 : (len - ZSTD_PROBE_SAMPLE) / (samples - 1) * i;
        size_t r = ZSTD_compressCCtx(z->probe, z->probe_buf,
                                     ZSTD_compressBound(ZSTD_PROBE_SAMPLE), buf + off,
                                     ZSTD_PROBE_SAMPLE, 1);

        in += ZSTD_PROBE_SAMPLE;
        got += ZSTD_isError(r) ? ZSTD_PROBE_SAMPLE : r;
    }
    *ret_ns = ioh_cpu_thread_ns() - t0;
    z->cpu_ns += *ret_ns;
    return (double)got / (double)in;
}

/* TRUE when samples of @buf do not compress: store it raw. */
static gboolean
incompressible(Zstd *z, const guint8 *buf, gsize len)
{
    gint64 ns;

    if (len < ZSTD_PROBE_MIN) {
        return FALSE;
    }
    /* storing raw already, one sample tells when the data turns compressible */
    z->raw = probe(z, buf, len, z->raw ? 1 : ZSTD_PROBE_SAMPLES, &ns) > IOH_ZSTD_RAW_RATIO;
    return z->raw;
}

/* Ends the compressed frame in progress, if any (or, for an empty stream, writes one
 * empty frame: the image always holds a frame). */
static gboolean
end_frame(Zstd *z, gboolean last, IohFilterOut *out, GError **error)
{
    ZSTD_inBuffer in = { NULL, 0, 0 };

    if (!z->in_frame && !(last && z->frames + z->o.frames == 0)) {
        return TRUE;
    }
    if (!compress(z, &in, ZSTD_e_end, out, error)) {
        return FALSE;
    }
    if (z->adapt) {
        ZSTD_frameProgression fp = ZSTD_getFrameProgression(z->cctx);

        z->done_consumed += fp.consumed;
        z->done_produced += fp.produced;
    }
    z->in_frame = FALSE;
    z->frames++;
    return TRUE;
}

/* ---- --compress=auto: the choice of each window (ioh-zstd-adapt.h) ---- */

static double
seconds(gint64 ns)
{
    return (double)ns / 1e9;
}

static gint64
now_ns(void)
{
    return g_get_monotonic_time() * 1000;
}

static gint64
process_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The stream bytes libzstd compressed so far and what they came to, over every frame. */
static void
progression(Zstd *z, guint64 *ret_consumed, guint64 *ret_produced)
{
    ZSTD_frameProgression fp = { 0 };

    if (z->in_frame) {
        fp = ZSTD_getFrameProgression(z->cctx);
    }
    *ret_consumed = z->done_consumed + fp.consumed;
    *ret_produced = z->done_produced + fp.produced;
}

/* A window starts at @start (ns): the counters as they stand. */
static void
window_start(Zstd *z, gint64 start)
{
    memset(&z->win, 0, sizeof(z->win));
    z->win_start = start;
    z->win_cpu = process_cpu_ns();
    z->win_own = ioh_cpu_thread_ns();
    z->win_out_ns = z->o.out_ns;
    z->win_out = z->o.out_bytes;
    z->blocked_ns = 0;
    progression(z, &z->win_consumed, &z->win_produced);
}

/* The next windows' choice on the compressor: a level (raw needs nothing set). Without
 * workers libzstd takes a new level only with a new frame, so the frame ends first. */
static gboolean
set_choice(Zstd *z, int k, IohFilterOut *out, GError **error)
{
    int level;

    if (k == IOH_ADAPT_RAW) {
        return TRUE;
    }
    level = ioh_adapt_level(k);
    if (level == z->level) {
        return TRUE;
    }
    if (z->workers == 0 && !end_frame(z, FALSE, out, error)) {
        return FALSE;
    }
    z->level = level;
    return zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level),
                      "compression level", error);
}

/* The window is whole at @end (ns): measured, and the next one's choice made. */
static gboolean
window_end(Zstd *z, gint64 end, IohFilterOut *out, GError **error)
{
    IohAdaptWindow *w = &z->win;
    guint64 consumed, produced;
    int k;

    progression(z, &consumed, &produced);
    w->wall = seconds(end - z->win_start);
    w->sink = seconds(z->o.out_ns - z->win_out_ns);
    w->out = z->o.out_bytes - z->win_out;
    w->blocked = seconds(z->blocked_ns);
    w->comp_cpu = seconds((process_cpu_ns() - z->win_cpu) - (ioh_cpu_thread_ns() - z->win_own));
    w->consumed = consumed - z->win_consumed;
    w->produced = produced - z->win_produced;
    w->behind = z->o.nbufs > 1;
    k = ioh_adapt_next(z->adapt, w);
    g_debug("zstd auto: window %s: %.1f ms, sink %.1f ms for %" G_GUINT64_FORMAT " bytes, "
            "blocked %.1f ms, idle %.1f ms, workers' CPU %.1f ms; rates MB/s: sink %.0f, "
            "source %.0f, compressor %.0f; next %s (%s)",
            ioh_adapt_choice_name(z->adapt->last), w->wall * 1e3, w->sink * 1e3, w->out,
            w->blocked * 1e3, w->idle * 1e3, w->comp_cpu * 1e3, z->adapt->est.sink / 1e6,
            z->adapt->est.source / 1e6, z->adapt->est.comp[z->adapt->last] / 1e6,
            ioh_adapt_choice_name(k), ioh_adapt_why_name(z->adapt->why));
    w->in = 0;
    return set_choice(z, k, out, error);
}

/* A raw window's first chunk: level 1 on its samples, for the estimates. */
static void
probe_window(Zstd *z, const guint8 *buf, gsize len)
{
    gint64 ns = 0;

    if (z->win.in == 0 && len >= ZSTD_PROBE_MIN) {
        z->win.probe_ratio = probe(z, buf, len, ZSTD_PROBE_SAMPLES, &ns);
        z->win.probe_speed = ns > 0 ? ZSTD_PROBE_SAMPLES * ZSTD_PROBE_SAMPLE / seconds(ns) : 0;
    }
}

/* One chunk as the window's choice says: raw frames, or compressed at its level (still
 * raw where the chunk's samples do not compress, as with a fixed level). */
static gboolean
auto_store(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out, GError **error)
{
    ZSTD_inBuffer in = { buf, len, 0 };

    if (z->adapt->choice == IOH_ADAPT_RAW) {
        probe_window(z, buf, len);
    } else if (!incompressible(z, buf, len)) {
        z->in_frame = TRUE;
        z->top = z->top_set ? MAX(z->top, z->level) : z->level;
        z->top_set = TRUE;
        return compress(z, &in, ZSTD_e_continue, out, error);
    }
    z->raw_chunks++;
    return end_frame(z, FALSE, out, error) && ioh_zstd_out_raw(&z->o, buf, len, out, error);
}

static gboolean
ioh_zstd_auto_transform(Zstd *z, const guint8 *buf, gsize len, IohFilterOut *out,
                        GError **error)
{
    gint64 now = now_ns();

    if (z->win.in == 0) {
        window_start(z, z->last_end ? z->last_end : now);
    }
    if (z->last_end) {
        z->win.idle += seconds(now - z->last_end);    /* waiting for this chunk */
    }
    if (!auto_store(z, buf, len, out, error)) {
        return FALSE;
    }
    z->win.in += len;
    z->last_end = now_ns();
    return z->win.in < IOH_ADAPT_WINDOW || window_end(z, z->last_end, out, error);
}

static gboolean
zstd_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
               GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { buf, len, 0 };

    if (!ioh_zstd_out_alloc(&z->o, out, error)) {
        return FALSE;
    }
    if (z->adapt) {
        return ioh_zstd_auto_transform(z, buf, len, out, error);
    }
    if (incompressible(z, buf, len)) {
        z->raw_chunks++;
        return end_frame(z, FALSE, out, error) &&
               ioh_zstd_out_raw(&z->o, buf, len, out, error);
    }
    z->in_frame = TRUE;
    return compress(z, &in, ZSTD_e_continue, out, error);
}

/* The end of the frame, then the tail (unaligned: the sink writes it buffered). */
static gboolean
zstd_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Zstd *z = data;

    if (!ioh_zstd_out_alloc(&z->o, out, error) || !end_frame(z, TRUE, out, error)) {
        return FALSE;
    }
    return z->o.have == 0 || ioh_zstd_out_put(&z->o, out, z->o.have, error);
}

/* The decoder's memory: the filter's own, claimed with the first input, then the largest
 * window a frame of the image asks, charged as each frame's header is read and before
 * libzstd allocates it (a later frame may ask more than the first: the image decides, so
 * it is the layer's floor, never scaled down; libzstd refuses a window past
 * ZSTD_d_windowLogMax, and so nothing past it is charged). */
static void
unzstd_charge(Zstd *z)
{
    ZSTD_frameHeader fh;
    int wlog_max = ZSTD_WINDOWLOG_LIMIT_DEFAULT;
    guint64 bytes = 0;

    if (!z->any) {
        bytes = ZSTD_OWN_BYTES;
    }
    if (!z->head_charged && ZSTD_getFrameHeader(&fh, z->head, z->head_len) == 0) {
        z->head_charged = TRUE;
        ZSTD_DCtx_getParameter(z->dctx, ZSTD_d_windowLogMax, &wlog_max);
        if (fh.frameType == ZSTD_frame && fh.windowSize > z->dwindow &&
            fh.windowSize <= ((guint64)1 << wlog_max)) {
            bytes += ZSTD_estimateDStreamSize((size_t)fh.windowSize) -
                     (z->dwindow ? ZSTD_estimateDStreamSize((size_t)z->dwindow) : 0);
            z->dwindow = fh.windowSize;
        }
    }
    if (bytes > 0 && z->memory) {
        ioh_mem_claim(z->memory, "unzstd", bytes, bytes, 0, NULL, NULL);
    }
}

/* Keeps the first bytes of the frame @in continues (a new one when the last call ended
 * one: hint 0), for its magic and, should its window be refused, its header. */
static void
unzstd_keep_head(Zstd *z, const ZSTD_inBuffer *in)
{
    gsize n;

    if (z->hint == 0) {
        z->head_len = 0;
        z->head_charged = FALSE;
    }
    n = MIN(in->size - in->pos, sizeof(z->head) - z->head_len);
    memcpy(z->head + z->head_len, (const guint8 *)in->src + in->pos, n);
    z->head_len += n;
}

/* A frame just ended (hint 0): counts it unless it was a skippable frame. */
static void
unzstd_frame_done(Zstd *z)
{
    guint32 magic = 0;

    memcpy(&magic, z->head, MIN(z->head_len, sizeof(magic)));   /* a frame is longer */
    if ((GUINT32_FROM_LE(magic) & ZSTD_MAGIC_SKIPPABLE_MASK) != ZSTD_MAGIC_SKIPPABLE_START) {
        z->zframes++;
    }
}

/* A window's size as a message says it: whole GiB, else MiB (windows over the limit are
 * multiples of 128 MiB; g_format_size() would put a no-break space in the line). */
static char *
unzstd_window_size(guint64 n)
{
    return n % ((guint64)1 << 30) == 0 ? g_strdup_printf("%" G_GUINT64_FORMAT " GiB", n >> 30)
                                       : g_strdup_printf("%" G_GUINT64_FORMAT " MiB", n >> 20);
}

/* libzstd refused the frame in progress (@r): a window over the limit is unsupported and
 * says what it needs, anything else is a corrupt image. */
static gboolean
unzstd_refuse(Zstd *z, size_t r, const char *file, GError **error)
{
    ZSTD_frameHeader fh;

    if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge &&
        ZSTD_getFrameHeader(&fh, z->head, z->head_len) == 0) {
        g_autofree char *need = unzstd_window_size(fh.windowSize);
        g_autofree char *limit = unzstd_window_size((guint64)1 << IOH_ZSTD_WINDOW_LOG_MAX);
        guint log = g_bit_storage(fh.windowSize - 1);

        return ioh_error_set(error, ENOTSUP, "decompress", file,
                             "unsupported zstd image: a frame needs a %s window (zstd "
                             "--long=%u), over the %s (--long=%d) limit of --decompress",
                             need, log, limit, IOH_ZSTD_WINDOW_LOG_MAX);
    }
    return ioh_error_set(error, EBADMSG, "decompress", file, "corrupt zstd image: %s",
                         ZSTD_getErrorName(r));
}

static gboolean
unzstd_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
                 GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { buf, len, 0 };
    ZSTD_outBuffer ob;

    if (!ioh_zstd_out_alloc(&z->o, out, error)) {
        return FALSE;
    }
    do {
        gint64 t0 = ioh_cpu_thread_ns();
        size_t r;

        ob = (ZSTD_outBuffer){ z->o.buf, z->o.size, 0 };
        unzstd_keep_head(z, &in);
        unzstd_charge(z);
        z->any = TRUE;
        r = ZSTD_decompressStream(z->dctx, &ob, &in);
        z->cpu_ns += ioh_cpu_thread_ns() - t0;
        if (ZSTD_isError(r)) {
            return unzstd_refuse(z, r, out->file, error);
        }
        z->hint = r;
        if (z->hint == 0) {
            unzstd_frame_done(z);
        }
        if (ob.pos > 0 && !ioh_filter_out(out, z->o.buf, ob.pos, error)) {
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

    if (z->hint != 0) {
        return ioh_error_set(error, EBADMSG, "decompress", out->file,
                             "corrupt zstd image: truncated (it ends inside a frame)");
    }
    if (z->zframes == 0) {
        return ioh_error_set(error, EBADMSG, "decompress", out->file,
                             "corrupt zstd image: no zstd frame (%s)",
                             z->any ? "only skippable frames" : "empty");
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
    if (z->adapt) {
        z->adapt->stats.bytes[z->adapt->choice] += z->win.in;    /* the last window */
        ioh_adapt_finish(z->adapt);
        stats->adapt = z->adapt->stats;
        stats->compression_level = z->top_set ? z->top : ioh_adapt_level(1);
    }
    stats->compress_cpu_us = (z->cpu_ns + z->o.cpu_ns) / 1000 +
                             ioh_cpu_new_threads_us(z->threads);
    g_debug("zstd: %" G_GUINT64_FORMAT " stream bytes, %" G_GUINT64_FORMAT " stored, "
            "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT " chunks stored raw, "
            "%.3f s CPU", stats->bytes, stats->stored, z->frames + z->o.frames, z->raw_chunks,
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
