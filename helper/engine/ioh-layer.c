/* ioh-layer.c - the tables of registered layers (ioh-layer-list.h) and their lookup */
#include "ioh-layer.h"

#define IOH_SOURCE(n) extern const IohSourceClass ioh_source_##n;
#define IOH_SINK(n) extern const IohSinkClass ioh_sink_##n;
#define IOH_FILTER(n) extern const IohFilterClass ioh_filter_##n;
#include "ioh-layer-list.h"
#undef IOH_SOURCE
#undef IOH_SINK
#undef IOH_FILTER

#define IOH_SOURCE(n) &ioh_source_##n,
#define IOH_SINK(n)
#define IOH_FILTER(n)
static const IohSourceClass *const source_table[] = {
#include "ioh-layer-list.h"
};
#undef IOH_SOURCE
#undef IOH_SINK
#undef IOH_FILTER

#define IOH_SOURCE(n)
#define IOH_SINK(n) &ioh_sink_##n,
#define IOH_FILTER(n)
static const IohSinkClass *const sink_table[] = {
#include "ioh-layer-list.h"
};
#undef IOH_SOURCE
#undef IOH_SINK
#undef IOH_FILTER

#define IOH_SOURCE(n)
#define IOH_SINK(n)
#define IOH_FILTER(n) &ioh_filter_##n,
static const IohFilterClass *const filter_table[] = {
#include "ioh-layer-list.h"
};
#undef IOH_SOURCE
#undef IOH_SINK
#undef IOH_FILTER

const IohSourceClass *
ioh_source_for(const IohEnd *end)
{
    for (gsize i = 0; i < G_N_ELEMENTS(source_table); i++) {
        if (source_table[i]->accepts(end)) {
            return source_table[i];
        }
    }
    return NULL;
}

const IohSinkClass *
ioh_sink_for(const IohEnd *end)
{
    for (gsize i = 0; i < G_N_ELEMENTS(sink_table); i++) {
        if (sink_table[i]->accepts(end)) {
            return sink_table[i];
        }
    }
    return NULL;
}

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
ioh_filter_checksum_lookup(const char *name)
{
    const IohFilterClass *f = ioh_filter_lookup(name);

    return f && f->checksum ? f->name : NULL;
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
