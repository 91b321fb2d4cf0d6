/* ioh-filter.c - the chain of filters of one copy (the table is in ioh-layer.c) */
#include "ioh-filter.h"
#include "ioh-error.h"

#include <errno.h>

typedef struct {
    const IohFilterClass *klass;
    gpointer state;
} IohFilter;

struct _IohFilterChain {
    GArray *filters;        /* IohFilter */
};

IohFilterChain *
ioh_filter_chain_new(const IohCopyOptions *opts, GError **error)
{
    g_autoptr(IohFilterChain) chain = g_new0(IohFilterChain, 1);

    chain->filters = g_array_new(FALSE, FALSE, sizeof(IohFilter));
    for (const char *const *n = opts->filters; n && *n; n++) {
        IohFilter f = { .klass = ioh_filter_lookup(*n) };

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
ioh_filter_chain_data(IohFilterChain *chain, const void *buf, gsize len, GError **error)
{
    for (guint i = 0; len > 0 && i < chain->filters->len; i++) {
        IohFilter *f = &g_array_index(chain->filters, IohFilter, i);
        if (!f->klass->data(f->state, buf, len, error)) {
            return FALSE;
        }
    }
    return TRUE;
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
