/* ioh-filter-zstd.c - the transforming filters zstd (compress: --compress=zstd[:LEVEL])
 * and unzstd (decompress: --decompress)
 *
 * zstd compresses with libzstd's multithreaded streaming API: ZSTD_c_nbWorkers threads
 * compress jobs of the stream while the thread that calls the filter reads the source
 * and writes the sink, so compression overlaps the pipe and the disk. The output is one
 * standard zstd frame carrying its content checksum (ZSTD_c_checksumFlag): `zstd -dc`
 * gives back the stream. It is handed on in full buffers, multiples of the sink's
 * alignment (O_DIRECT), and the tail at the end. Incompressible input costs little: at
 * the fast levels zstd gives up on a block quickly and stores it raw (measured in
 * docs/benchmarks.md).
 *
 * unzstd decodes any sequence of zstd frames (the helper's own, or the zstd CLI's) and
 * refuses a corrupt image: a bad block or checksum, or a stream that ends inside a
 * frame (truncated), is EBADMSG naming the file. The bytes decoded before the damage
 * was found have gone to the reader, who must discard them on the helper's failure.
 */
#include "ioh-filter.h"
#include "ioh-error.h"
#include "ioh-layer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define ZSTD_OUT_BUFFER (4 * 1024 * 1024)

typedef struct {
    ZSTD_CCtx *cctx;         /* zstd */
    ZSTD_DCtx *dctx;         /* unzstd */
    guint8 *buf;             /* output, aligned to the sink's alignment */
    gsize size;
    gsize have;              /* zstd: bytes of buf not handed on yet */
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
    if (!z->cctx ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level),
                    "compression level", error) ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1), "checksum",
                    error) ||
        !zstd_check(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_nbWorkers, (int)threads),
                    "threads", error)) {
        if (!z->cctx) {
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
    z->size = IOH_ALIGN_UP((gsize)ZSTD_OUT_BUFFER, out->align);
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

static gboolean
zstd_transform(gpointer data, const guint8 *buf, gsize len, IohFilterOut *out,
               GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { buf, len, 0 };

    return ensure_buffer(z, out, error) && compress(z, &in, ZSTD_e_continue, out, error);
}

/* The end of the frame, then the tail (unaligned: the sink writes it buffered). */
static gboolean
zstd_flush(gpointer data, IohFilterOut *out, GError **error)
{
    Zstd *z = data;
    ZSTD_inBuffer in = { NULL, 0, 0 };

    if (!ensure_buffer(z, out, error) || !compress(z, &in, ZSTD_e_end, out, error)) {
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
    } while (in.pos < in.size || ob.pos == ob.size);
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
    stats->compression_level = z->level;
    stats->compress_cpu_us = z->cpu_ns / 1000 + worker_cpu_us(z->threads);
    g_debug("zstd: %" G_GUINT64_FORMAT " stream bytes, %" G_GUINT64_FORMAT " stored, "
            "%.3f s CPU", stats->bytes, stats->stored,
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
