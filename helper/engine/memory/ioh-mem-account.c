/* ioh-mem-account.c - one memory account for every layer of a copy (ioh-mem-account.h) */
#include "ioh-mem-account.h"

#include <string.h>

struct _IohMemAccount {
    IohBudget *budget;       /* NULL: none */
    GMutex lock;             /* the layers grow from the writing thread */
    IohMemLayer layers[IOH_MEM_LAYERS_MAX];
    guint n;
    guint64 taken;           /* bytes this account took from the budget */
};

IohMemAccount *
ioh_mem_account_new(IohBudget *budget)
{
    IohMemAccount *m = g_new0(IohMemAccount, 1);

    m->budget = budget;
    g_mutex_init(&m->lock);
    return m;
}

void
ioh_mem_account_free(IohMemAccount *m)
{
    if (!m) {
        return;
    }
    if (m->budget && m->taken > 0) {
        ioh_budget_give(m->budget, m->taken);
    }
    g_mutex_clear(&m->lock);
    g_free(m);
}

/* The record of @layer, made on its first ask; NULL when the table is full (the layer then
 * keeps to its floor, unrecorded). The lock is held. */
static IohMemLayer *
layer_find(IohMemAccount *m, const char *layer)
{
    for (guint i = 0; i < m->n; i++) {
        if (g_str_equal(m->layers[i].layer, layer)) {
            return &m->layers[i];
        }
    }
    if (m->n == IOH_MEM_LAYERS_MAX) {
        g_warn_if_reached();
        return NULL;
    }
    m->layers[m->n] = (IohMemLayer){ .layer = layer };
    return &m->layers[m->n++];
}

/* Takes up to @bytes from the budget in whole @unit pieces (all of them without a
 * budget). The lock is held. */
static guint64
take(IohMemAccount *m, guint64 bytes, guint64 unit)
{
    guint64 got;

    if (!m->budget) {
        return bytes;
    }
    got = ioh_budget_take(m->budget, bytes, MAX(unit, 1));
    m->taken += got;
    return got;
}

/* Gives @bytes back to the budget. The lock is held. */
static void
give(IohMemAccount *m, guint64 bytes)
{
    bytes = MIN(bytes, m->taken);
    if (m->budget && bytes > 0) {
        ioh_budget_give(m->budget, bytes);
        m->taken -= bytes;
    }
}

static void
layer_hold(IohMemLayer *l, guint64 got)
{
    l->got = got;
    l->peak = MAX(l->peak, got);
}

guint64
ioh_mem_claim(IohMemAccount *m, const char *layer, guint64 floor, guint64 want,
              guint64 unit, IohMemFitFunc fit, gpointer fit_data)
{
    IohMemLayer *l;
    guint64 got, used;

    want = MAX(want, floor);
    g_mutex_lock(&m->lock);
    got = floor + take(m, want - floor, unit);
    used = fit ? CLAMP(fit(got, fit_data), floor, got) : got;
    give(m, got - used);
    l = layer_find(m, layer);
    if (l) {
        l->floor += floor;
        l->want += want;
        l->scaled = l->scaled || used < want;
        layer_hold(l, l->got + used);
    }
    g_debug("memory: %s got %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes (floor %"
            G_GUINT64_FORMAT ")%s", layer, used, want, floor,
            used < want ? ", scaled down" : "");
    g_mutex_unlock(&m->lock);
    return used;
}

void
ioh_mem_floor(IohMemAccount *m, const char *layer, guint64 floor, guint64 want)
{
    IohMemLayer *l;

    g_mutex_lock(&m->lock);
    l = layer_find(m, layer);
    if (l) {
        l->floor = floor;
        l->want = MAX(want, floor);
        layer_hold(l, MAX(l->got, floor));
    }
    g_mutex_unlock(&m->lock);
}

guint64
ioh_mem_grow(IohMemAccount *m, const char *layer, guint64 bytes, guint64 unit)
{
    IohMemLayer *l;
    guint64 got;

    g_mutex_lock(&m->lock);
    got = take(m, bytes, unit);
    l = layer_find(m, layer);
    if (l) {
        l->scaled = l->scaled || got < bytes;
        layer_hold(l, l->got + got);
    }
    g_mutex_unlock(&m->lock);
    return got;
}

void
ioh_mem_shrink(IohMemAccount *m, const char *layer, guint64 bytes)
{
    IohMemLayer *l;

    g_mutex_lock(&m->lock);
    give(m, bytes);
    l = layer_find(m, layer);
    if (l) {
        l->got -= MIN(bytes, l->got - MIN(l->floor, l->got));
    }
    g_mutex_unlock(&m->lock);
}

gboolean
ioh_mem_account_budget(const IohMemAccount *m, guint64 *ret_limit)
{
    *ret_limit = m->budget ? ioh_budget_limit(m->budget) : 0;
    return m->budget != NULL;
}

guint
ioh_mem_account_layers(const IohMemAccount *m, IohMemLayer *ret)
{
    IohMemAccount *mm = (IohMemAccount *)m;    /* the lock only */
    guint n;

    g_mutex_lock(&mm->lock);
    n = m->n;
    memcpy(ret, m->layers, n * sizeof(*ret));
    g_mutex_unlock(&mm->lock);
    return n;
}
