/* ioh-filter.c - the chain of filters of one copy (the table is in ioh-layer.c) */
#include "ioh-filter.h"
#include "ioh-error.h"
#include "ioh-filter-behind.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

typedef struct {
    const IohFilterClass *klass;
    gpointer state;
} IohFilter;

struct _IohFilterChain {
    GArray *filters;        /* IohFilter */
    const char *file;       /* the storage end, for transforming filters' messages */
    gsize align;
    IohFilterSinkFunc sink; /* NULL: the bytes end at the last filter */
    IohFilterSinkvFunc sinkv; /* NULL: sink per piece */
    gpointer sink_data;
    gboolean flushed;       /* a strategy flushed it already (ioh-uring-stage.c) */
    IohFilterBehind *behind; /* writes behind the last filter, or NULL */
};

IohFilterChain *
ioh_filter_chain_new(const IohCopyOptions *opts, GError **error)
{
    g_autoptr(IohFilterChain) chain = g_new0(IohFilterChain, 1);

    chain->filters = g_array_new(FALSE, FALSE, sizeof(IohFilter));
    for (const char *const *n = opts->filters; n && *n; n++) {
        IohFilter f = { .klass = ioh_filter_lookup(*n) };

        g_assert(!f.klass || !f.klass->data != !f.klass->transform);
        if (!f.klass) {
            ioh_error_set(error, EINVAL, NULL, NULL, "filter '%s': no such filter", *n);
            return NULL;
        }
        f.state = f.klass->open(opts, error);
        if (!f.state) {
            return NULL;
        }
        g_array_append_val(chain->filters, f);
        g_debug("filter %s", f.klass->name);
    }
    return g_steal_pointer(&chain);
}

gboolean
ioh_filter_chain_transforms(const IohFilterChain *chain)
{
    for (guint i = 0; chain && i < chain->filters->len; i++) {
        if (g_array_index(chain->filters, IohFilter, i).klass->transform) {
            return TRUE;
        }
    }
    return FALSE;
}

void
ioh_filter_chain_set_sink(IohFilterChain *chain, const char *file, gsize align,
                          IohFilterSinkFunc sink, IohFilterSinkvFunc sinkv,
                          gpointer sink_data)
{
    chain->file = file;
    chain->align = MAX(align, 1);
    chain->sink = sink;
    chain->sinkv = sink ? sinkv : NULL;
    chain->sink_data = sink_data;
}

void
ioh_filter_chain_set_behind(IohFilterChain *chain, const IohFilterBehindSink *sink)
{
    if (!chain->behind) {
        chain->behind = ioh_filter_behind_new(sink);
    } else if (sink->free) {
        sink->free(sink->data);
    }
}

/* Before a synchronous write to the sink: the writes behind it done (they come first). */
static gboolean
chain_settle(IohFilterChain *chain, GError **error)
{
    return !chain->behind || ioh_filter_behind_drain(chain->behind, error);
}

/* Passes @len bytes through the filters from @first on, then to the sink. */
static gboolean
chain_data_from(IohFilterChain *chain, guint first, const void *buf, gsize len,
                GError **error)
{
    if (len == 0) {
        return TRUE;
    }
    for (guint i = first; i < chain->filters->len; i++) {
        IohFilter *f = &g_array_index(chain->filters, IohFilter, i);

        if (f->klass->transform) {
            IohFilterOut out = { .file = chain->file, .align = chain->align,
                                 .chain = chain, .next = i + 1 };
            return f->klass->transform(f->state, buf, len, &out, error);
        }
        if (!f->klass->data(f->state, buf, len, error)) {
            return FALSE;
        }
    }
    return !chain->sink ||
           (chain_settle(chain, error) && chain->sink(chain->sink_data, buf, len, error));
}

gboolean
ioh_filter_out(IohFilterOut *out, const void *buf, gsize len, GError **error)
{
    return chain_data_from(out->chain, out->next, buf, len, error);
}

gboolean
ioh_filter_outv(IohFilterOut *out, const struct iovec *iov, int cnt, GError **error)
{
    IohFilterChain *chain = out->chain;

    if (out->next == chain->filters->len && chain->sinkv) {
        return chain_settle(chain, error) && chain->sinkv(chain->sink_data, iov, cnt, error);
    }
    for (int i = 0; i < cnt; i++) {
        if (!chain_data_from(chain, out->next, iov[i].iov_base, iov[i].iov_len, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
ioh_filter_out_behind_on(const IohFilterOut *out)
{
    return out->chain->behind && out->chain->sink && out->next == out->chain->filters->len;
}

gboolean
ioh_filter_out_behind(IohFilterOut *out, const void *buf, gsize len, guint64 *ret_ticket,
                      GError **error)
{
    *ret_ticket = 0;
    if (!ioh_filter_out_behind_on(out)) {
        return ioh_filter_out(out, buf, len, error);
    }
    return len == 0 || ioh_filter_behind_submit(out->chain->behind, buf, len, ret_ticket,
                                                error);
}

gboolean
ioh_filter_out_wait(IohFilterOut *out, guint64 ticket, GError **error)
{
    return ticket == 0 || ioh_filter_behind_wait(out->chain->behind, ticket, error);
}

gboolean
ioh_filter_chain_data(IohFilterChain *chain, const void *buf, gsize len, GError **error)
{
    return chain_data_from(chain, 0, buf, len, error);
}

gboolean
ioh_filter_chain_flush(IohFilterChain *chain, GError **error)
{
    if (chain->flushed) {
        return TRUE;
    }
    chain->flushed = TRUE;
    for (guint i = 0; i < chain->filters->len; i++) {
        IohFilter *f = &g_array_index(chain->filters, IohFilter, i);
        IohFilterOut out = { .file = chain->file, .align = chain->align,
                             .chain = chain, .next = i + 1 };

        if (f->klass->flush && !f->klass->flush(f->state, &out, error)) {
            return FALSE;
        }
    }
    return chain_settle(chain, error);    /* every byte written before the sink's finish */
}

gboolean
ioh_filter_chain_finish(IohFilterChain *chain, const IohEnd *src, const IohEnd *dst,
                        IohStats *stats, GError **error)
{
    for (guint i = 0; i < chain->filters->len; i++) {
        IohFilter *f = &g_array_index(chain->filters, IohFilter, i);
        if (!f->klass->finish(f->state, src, dst, stats, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

void
ioh_filter_chain_free(IohFilterChain *chain)
{
    if (!chain) {
        return;
    }
    ioh_filter_behind_free(chain->behind);    /* before the filters free its buffers */
    for (guint i = 0; chain->filters && i < chain->filters->len; i++) {
        IohFilter *f = &g_array_index(chain->filters, IohFilter, i);
        if (f->klass->free) {
            f->klass->free(f->state);
        }
    }
    if (chain->filters) {
        g_array_unref(chain->filters);
    }
    g_free(chain);
}

guint8 *
ioh_filter_out_buffer(const IohFilterOut *out, gsize size)
{
    gsize huge = 2 * 1024 * 1024;
    void *p = NULL;

    if (posix_memalign(&p, out->align > 1 ? MAX(huge, out->align) : sizeof(void *),
                       size) != 0) {
        return NULL;
    }
    if (out->align > 1) {
        madvise(p, size, MADV_HUGEPAGE);
    }
    return p;
}
