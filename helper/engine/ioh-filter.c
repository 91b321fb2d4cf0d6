/* ioh-filter.c - the filter table and the chain of one copy */
#include "ioh-filter.h"
#include "ioh-error.h"

#include <errno.h>

#define IOH_FILTER(n) extern const IohFilterClass ioh_filter_##n;
#include "ioh-filter-list.h"
#undef IOH_FILTER

static const IohFilterClass *const filter_table[] = {
#define IOH_FILTER(n) &ioh_filter_##n,
#include "ioh-filter-list.h"
#undef IOH_FILTER
};

typedef struct {
    const IohFilterClass *klass;
    gpointer state;
} IohFilter;

struct _IohFilterChain {
    GArray *filters;        /* IohFilter */
};

const IohFilterClass *
ioh_filter_lookup(const char *name)
{
    for (gsize i = 0; i < G_N_ELEMENTS(filter_table); i++) {
        if (g_str_equal(filter_table[i]->name, name)) {
            return filter_table[i];
        }
    }
    return NULL;
}

const char *
ioh_filter_checksum_names(void)
{
    static gsize once;
    static char *names;

    if (g_once_init_enter(&once)) {
        GString *s = g_string_new(NULL);
        for (gsize i = 0; i < G_N_ELEMENTS(filter_table); i++) {
            if (filter_table[i]->checksum) {
                g_string_append_printf(s, "%s%s", s->len ? ", " : "", filter_table[i]->name);
            }
        }
        names = g_string_free(s, FALSE);
        g_once_init_leave(&once, 1);
    }
    return names;
}

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
