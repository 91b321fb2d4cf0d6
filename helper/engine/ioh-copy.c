/* ioh-copy.c - the copy engine: chooses the layers of a copy and runs it
 *
 * A copy is a source, the filters IohCopyOptions.filters names, and a sink (ioh-layer.h,
 * docs/engine.md), moved by one strategy. The choice, by what measured fastest on this
 * machine class (ext4 on a virtual disk, 2 cores shared with the producer;
 * benchmarks/results/run.md and docs/benchmarks.md, "The engine"):
 *
 * - A pipe to or from the page cache (buffered, --fadvise) with no filter: splice(2), no
 *   copy through the helper (ioh-strategy-splice.c); it falls back to inline where the
 *   kernel refuses.
 * - A save into the page cache otherwise (a filter, a socket): inline, read then write in
 *   one thread (ioh-strategy-inline.c).
 * - An O_DIRECT source: parallel readers into a ring (ioh-strategy-parallel.c).
 * - A save to NBD: inline, the pipe read straight into the request buffers; a restore
 *   from NBD inline too (its reads are in flight at the server already: a ring measured
 *   slower, docs/benchmarks.md, "Engine A/Bs: NBD").
 * - An O_DIRECT save from a pipe with no filter: io_uring, one thread
 *   (ioh-strategy-uring.c; the ring below where the kernel refuses io_uring).
 * - Everything else (every restore, an O_DIRECT save): a reader thread and a ring
 *   (ioh-strategy-ring.c).
 *
 * io_uring is not used for O_DIRECT reads (threads give the queue). The fault shim
 * (tests/faults/fault-shim.c) sees splice as both a read of its source and a write of
 * its sink, so a rule on write reaches a spliced save as it does a written one; the
 * io_uring strategy asks it about each read and write (ioh-uring.h).
 */
#include "config.h"
#include "ioh-copy.h"
#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-layer.h"
#include "ioh-limits.h"
#include "ioh-pipe.h"
#include "ioh-uring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

void
ioh_copy_options_init(IohCopyOptions *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->mode = IOH_CACHE_BUFFERED;
    opts->buffer_size = IOH_COPY_DEFAULT_BUFFER;
    opts->ring = IOH_COPY_DEFAULT_RING;
    opts->pipe_size = IOH_PIPE_DEFAULT_SIZE;
    opts->fadvise_window = IOH_COPY_DEFAULT_WINDOW;
    opts->progress_interval_us = G_USEC_PER_SEC;
    opts->compress_level = IOH_ZSTD_LEVEL_DEFAULT;
}

/* An end without an fd, moved in requests by its own layers (ioh-nbd.h, ioh-rbd.h). */
static gboolean
is_remote(const IohEnd *end)
{
    return end->kind == IOH_KIND_NBD || end->kind == IOH_KIND_RBD;
}

/* Storage, an NBD export or an RBD image: where the image stays. */
static gboolean
is_image(const IohEnd *end)
{
    return ioh_end_is_storage(end) || is_remote(end);
}

static const char *
direction(const IohEnd *src, const IohEnd *dst)
{
    if (is_image(dst) && !is_image(src)) {
        return "save";
    }
    if (is_image(src) && !is_image(dst)) {
        return "restore";
    }
    return "copy";
}

/* An NBD or RBD end has no page cache to use or bypass: its own mode, not the option's. */
static IohCacheMode
remote_mode(const IohEnd *src, const IohEnd *dst, IohCacheMode mode)
{
    if (src->kind == IOH_KIND_RBD || dst->kind == IOH_KIND_RBD) {
        return IOH_CACHE_RBD;
    }
    return src->kind == IOH_KIND_NBD || dst->kind == IOH_KIND_NBD ? IOH_CACHE_NBD : mode;
}

/* TRUE when @end is a pipe open for @mode (O_RDONLY: reading, O_WRONLY: writing). */
static gboolean
is_pipe_for(const IohEnd *end, int mode)
{
    int got = -1;

    return end->kind == IOH_KIND_PIPE && ioh_fd_access_mode(end->fd, &got, NULL, NULL) &&
           (got == mode || got == O_RDWR);
}

/* splice(2) moves a pipe's pages into the page cache and back without a copy through the
 * helper: a pipe and a storage end without O_DIRECT, and no filter that needs the bytes
 * (a checksum, compression or counting filter takes the read/write path). */
static gboolean
splice_fits(IohCopy *c)
{
    gboolean save = ioh_end_is_storage(c->dst);
    IohEnd *file = save ? c->dst : c->src;
    int mode = -1;

    if (c->opts->filters && c->opts->filters[0]) {
        return FALSE;
    }
    if (!ioh_end_is_storage(file) || file->direct ||
        !ioh_fd_access_mode(file->fd, &mode, NULL, NULL) ||
        mode == (save ? O_RDONLY : O_WRONLY)) {
        return FALSE;
    }
    return save ? is_pipe_for(c->src, O_RDONLY) : is_pipe_for(c->dst, O_WRONLY);
}

/* The strategy, once the ends are prepared (O_DIRECT set or not): see the top. */
static const IohStrategy *
choose_strategy(IohCopy *c)
{
    gboolean src_direct = ioh_end_is_storage(c->src) && c->src->direct;

    if (is_remote(c->dst) || is_remote(c->src)) {
        return &ioh_strategy_inline;    /* NBD, RBD: see the top */
    }

    if (splice_fits(c)) {
        return &ioh_strategy_splice;
    }
    if (ioh_end_is_storage(c->dst) && !c->dst->direct && !src_direct) {
        return &ioh_strategy_inline;
    }
    if (src_direct && CLAMP(c->opts->ring / 2, 1, IOH_MAX_READERS) > 1) {
        return &ioh_strategy_parallel;
    }
#if HAVE_IO_URING
    if (ioh_uring_fits(c)) {
        return &ioh_strategy_uring;
    }
#endif
    return &ioh_strategy_ring;
}

/* The buffers' alignment: a ring of 2 MiB or more starts on a huge page (ioh-ring-sizing.c). */
static gsize
ioh_copy_mem_align(const IohCopy *c)
{
    gsize huge = 2 * 1024 * 1024;

    return c->nslots > 1 && c->slot * c->nslots >= huge ? MAX(c->align, huge) : c->align;
}

/* @size bytes aligned to @align (a power of two), in an anonymous mapping of their own
 * (whole pages; munmap(ret, @size) gives them back): pages nobody has touched, so the
 * ring decides huge or small pages before their first byte (ioh-ring-sizing.c). An allocator
 * may write into what it hands out (ASan fills the first 4 KiB): the first huge page was
 * then small pages in a quarter of the sanitized runs of /budget/huge-pages. NULL when
 * the mapping fails. */
static char *
map_aligned(gsize size, gsize align)
{
    gsize page = (gsize)sysconf(_SC_PAGESIZE);
    gsize extra = align > page ? align - page : 0;
    gsize len;
    char *p, *start;

    if (size > G_MAXSIZE - page - extra) {
        return NULL;
    }
    len = IOH_ALIGN_UP(size, page);
    p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    start = p + (IOH_ALIGN_UP((guintptr)p, align) - (guintptr)p);
    if (start > p) {
        munmap(p, (gsize)(start - p));    /* the slack before the aligned start */
    }
    if (p + len + extra > start + len) {
        munmap(start + len, (gsize)(p + len + extra - (start + len)));    /* and after */
    }
    return start;
}

/* Aligned buffers for the strategy: one for inline, the ring otherwise. */
static gboolean
alloc_buffers(IohCopy *c, GError **error)
{
    c->align = MAX(c->src->direct ? c->src->align : 1, c->dst->direct ? c->dst->align : 1);
    c->align = MAX(c->align, 4096);
    c->slot = IOH_ALIGN_UP(MAX(c->opts->buffer_size, 1), c->align);
    /* splice keeps one buffer for what it leaves to inline (ioh-strategy-splice.c) */
    c->nslots = c->strategy == &ioh_strategy_inline || c->strategy == &ioh_strategy_splice
                ? 1 : MAX(c->opts->ring, 1);
    if (c->slot > G_MAXSIZE / c->nslots ||
        !(c->mem = map_aligned(c->slot * c->nslots, ioh_copy_mem_align(c)))) {
        return ioh_error_set(error, ENOMEM, NULL, NULL, "allocate %u buffers of %zu bytes: %s",
                             c->nslots, c->slot, g_strerror(ENOMEM));
    }
    /* one buffer is the floor; the ring grows within the account (ioh-ring-sizing.c) */
    ioh_mem_floor(c->opts->memory, "ring", c->slot, (guint64)c->slot * c->nslots);
    return TRUE;
}

/* Chooses the layers and prepares the ends; nothing is written before it succeeds. */
static gboolean
assemble(IohCopy *c, GError **error)
{
    c->source = ioh_source_for(c->src);
    c->sink = ioh_sink_for(c->dst);
    c->filters = ioh_filter_chain_new(c->opts, error);
    if (!c->filters || !c->source->prepare(c, error) || !c->sink->prepare(c, error)) {
        return FALSE;
    }
    c->strategy = choose_strategy(c);
    if (!alloc_buffers(c, error)) {
        return FALSE;
    }
    ioh_copy_route_filters(c);
    g_debug("%s in %s mode: %s source %s, %s sink %s, strategy %s, alignment %zu, "
            "buffers of %zu bytes", c->stats->direction, c->stats->mode, c->source->name,
            c->src->name, c->sink->name, c->dst->name, c->strategy->name, c->align, c->slot);
    return TRUE;
}

/* The stream has passed: it must be whole, then durable, then the filters' results. */
static gboolean
finish(IohCopy *c, GError **error)
{
    const IohCopyOptions *opts = c->opts;

    if (opts->has_length && c->in < opts->length) {
        return ioh_error_set(error, EIO, "read", c->src->name, "stream ended after %"
                             G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes",
                             c->in, opts->length);
    }
    if (!ioh_filter_chain_flush(c->filters, error)) {
        return FALSE;
    }
    c->source->finish(c);
    if (!c->sink->finish(c, error)) {
        return FALSE;
    }
    c->stats->synced = c->stats->stored;
    return ioh_filter_chain_finish(c->filters, c->src, c->dst, c->stats, error);
}

/* User and system CPU time of the process, every thread. */
static gint64
process_cpu_us(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) < 0) {
        return 0;
    }
    return (gint64)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * G_USEC_PER_SEC +
           ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* What each layer of @m got, into @stats (--stats). */
static void
report_memory(IohMemAccount *m, IohStats *stats)
{
    stats->has_budget = ioh_mem_account_budget(m, &stats->budget);
    stats->n_memory = ioh_mem_account_layers(m, stats->memory);
}

gboolean
ioh_copy(IohEnd *src, IohEnd *dst, const IohCopyOptions *opts, IohStats *stats,
         GError **error)
{
    /* the layers reach the copy's memory account through its options */
    IohCopyOptions own = *opts;
    IohCopy c = { .src = src, .dst = dst, .opts = &own, .stats = stats };
    gboolean ok;

    gint64 cpu0 = process_cpu_us();

    memset(stats, 0, sizeof(*stats));
    own.memory = ioh_mem_account_new(opts->budget);
    stats->start_us = g_get_monotonic_time();
    stats->mode = ioh_cache_mode_to_string(remote_mode(src, dst, opts->mode));
    stats->direction = direction(src, dst);
    /* Every check that could refuse the copy has passed before a save target opened by
     * path loses its old contents. */
    ok = ioh_error_check_cancellable(opts->cancellable, "copy", NULL, error) &&
         assemble(&c, error) && (opts->no_truncate || ioh_end_apply_truncate(dst, error)) &&
         c.strategy->run(&c, error) && finish(&c, error);
    stats->end_us = g_get_monotonic_time();
    stats->cpu_us = process_cpu_us() - cpu0;
    report_memory(own.memory, stats);
    if (ok) {
        ioh_copy_report_progress(&c, TRUE);
    }
    if (c.mem) {
        munmap(c.mem, c.slot * c.nslots);
    }
    ioh_filter_chain_free(c.filters);
    ioh_mem_account_free(own.memory);
    return ok;
}
