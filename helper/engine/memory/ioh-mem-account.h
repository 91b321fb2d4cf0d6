/* ioh-mem-account.h - one memory account for every layer of a copy, on top of the host's
 * budget (ioh-budget.h)
 *
 * Every layer that holds memory in proportion to an option (the ring's buffers, zstd's
 * contexts and jobs, the NBD request pool, and the coming encryption filter and RBD end)
 * asks the copy's account for it, by name. Each layer has a floor: what it needs to work
 * at all (the ring's one buffer, one zstd context, one NBD request per connection),
 * granted always and outside the budget, so a copy never fails or waits for lack of
 * budget. What it wants beyond the floor is taken from the budget; a layer that gets less
 * scales itself down (fewer buffers, fewer zstd workers, a smaller window, fewer requests
 * in flight) to what it got. So a helper holds at most its share of the budget plus its
 * layers' floors (plus the program itself), and the account says, per layer, what it
 * asked, what it got and whether it was scaled down (--stats). Without a budget every
 * layer gets what it wants.
 *
 * A new layer plugs in with one call, ioh_mem_claim(), where it sizes itself; a layer
 * that grows and shrinks as it runs (the ring) registers with ioh_mem_floor() and then
 * calls ioh_mem_grow() / ioh_mem_shrink(). Thread-safe.
 */
#pragma once

#include "ioh-budget.h"

G_BEGIN_DECLS

typedef struct _IohMemAccount IohMemAccount;

/* Layers of one copy at most (ring, readers, zstd or unzstd, NBD, encryption, RBD, ...). */
#define IOH_MEM_LAYERS_MAX 8

/* One layer's memory, in bytes. */
typedef struct {
    const char *layer;   /* a static string: "ring", "zstd", "nbd", ... */
    guint64 floor;       /* its floor: outside the budget */
    guint64 want;        /* all it would use with the options as given */
    guint64 got;         /* what it holds now, floor included */
    guint64 peak;        /* the most it held */
    gboolean scaled;     /* it got less than it asked (scaled down) at least once */
} IohMemLayer;

/* An account drawing on @budget (NULL: no budget, every layer gets what it wants), which
 * must outlive it. */
IohMemAccount *ioh_mem_account_new(IohBudget *budget);

/* Gives back everything the layers took from the budget. Accepts NULL. */
void ioh_mem_account_free(IohMemAccount *m);

/* What a layer that sizes itself once uses of @bytes (floor <= @bytes <= want): the
 * bytes of its best shape within them (<= @bytes); it records that shape in @data. */
typedef guint64 (*IohMemFitFunc)(guint64 bytes, gpointer data);

/* The one call of a layer that sizes itself once: @floor bytes always, up to @want
 * (>= @floor) if the budget has room, beyond the floor in whole @unit pieces (0: any
 * bytes). @fit (NULL: the layer uses all it got) picks the layer's shape within what it
 * got; what the shape leaves goes back to the budget. Returns the bytes the layer may use,
 * @floor to @want. A layer claims once (a second claim by the same name adds to it). */
guint64 ioh_mem_claim(IohMemAccount *m, const char *layer, guint64 floor, guint64 want,
                      guint64 unit, IohMemFitFunc fit, gpointer fit_data);

/* A layer that grows as it runs: its @floor (held from now on) and the most it may
 * @want. */
void ioh_mem_floor(IohMemAccount *m, const char *layer, guint64 floor, guint64 want);

/* Takes @bytes more for @layer, in whole @unit pieces: what it got (0: none). */
guint64 ioh_mem_grow(IohMemAccount *m, const char *layer, guint64 bytes, guint64 unit);

/* Gives back @bytes that @layer took with ioh_mem_grow(). */
void ioh_mem_shrink(IohMemAccount *m, const char *layer, guint64 bytes);

/* The budget behind the account: TRUE and its size in *@ret_limit, or FALSE (none). */
gboolean ioh_mem_account_budget(const IohMemAccount *m, guint64 *ret_limit);

/* Copies the layers, in the order they first asked, into @ret (room for
 * IOH_MEM_LAYERS_MAX): how many. */
guint ioh_mem_account_layers(const IohMemAccount *m, IohMemLayer *ret);

G_END_DECLS
