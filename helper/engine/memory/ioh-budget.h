/* ioh-budget.h - a memory budget for buffers, shared by every helper on the host
 *
 * Each helper that holds more than its floor (one buffer, outside the budget: a helper
 * always has it, so a save never fails or waits for lack of budget) records what it holds
 * beyond it in a lease file, DIR/PID.lease ("PID STARTTIME BYTES"), DIR being
 * $IOHELPER_RUNDIR or /run/iohelper. Every change is made under flock() of DIR/lock, after
 * summing the other leases: so the leases together never exceed the budget, and all the
 * helpers' buffers together never exceed the budget plus one floor per helper. A lease
 * whose process is gone (or whose pid now names another process: the start time of
 * /proc/PID/stat differs) is ignored and removed by the next helper that looks, so a
 * helper killed by SIGKILL leaks nothing. When DIR cannot be used, a helper takes nothing
 * beyond its floor. The budget is shared fairly: a helper's lease stays from its first
 * take to ioh_budget_free() (at 0 bytes when it holds nothing), so the live leases count
 * the helpers using the budget, and a take grants at most the fair share, budget / live
 * helpers rounded up to whole pieces.
 *
 * DIR is shared by every user (mode 1777), so nothing in it is trusted (ioh-untrusted.h).
 * DIR itself is used only when it is not a symbolic link, is owned by root or by us and,
 * if others can write it, is sticky. DIR/lock is made by the first helper (O_EXCL, then
 * 0666); one found there is only opened, never changed, and serves only when it is a
 * regular file of one link: anything else planted as the lock (a FIFO, a link, a device)
 * leaves every helper to its floor until it is removed, never hangs one. Leases and marks
 * are read as untrusted files of one link and at most 128 bytes; an entry under such a
 * name that is not a live lease, whether a dead one or no lease at all (a FIFO, a
 * symbolic or hard link, a huge file, text that does not parse), counts for nothing and
 * is removed by name (unlinkat: never the file a link points to, nor a directory), which
 * in a sticky DIR only its owner or root can do: others' are ignored each time. A lease
 * is three decimal numbers (anything else is no lease) and the sum of the leases
 * saturates, never wraps. A DIR of more than 512 entries (each costs an open under the
 * lock, and another user can plant entries no helper can remove) is not used.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _IohBudget IohBudget;

#define IOH_BUDGET_RUNDIR "/run/iohelper"

/* A budget of @limit bytes for buffers beyond the floor, shared through @rundir (NULL:
 * $IOHELPER_RUNDIR, else IOH_BUDGET_RUNDIR). Holds nothing yet; never fails. */
IohBudget *ioh_budget_new(guint64 limit, const char *rundir);

/* Takes up to @want more bytes, in whole @unit pieces, up to this helper's fair share:
 * returns how many it got (0 when the budget has no room, this helper holds its share or
 * the lease directory cannot be used). The first call counts this helper in, even for
 * nothing (@want 0). */
guint64 ioh_budget_take(IohBudget *b, guint64 want, guint64 unit);

/* Gives back @bytes of what this helper holds. */
void ioh_budget_give(IohBudget *b, guint64 bytes);

/* What this helper holds. */
guint64 ioh_budget_held(const IohBudget *b);

/* The budget's size, as given to ioh_budget_new(). */
guint64 ioh_budget_limit(const IohBudget *b);

/* The sum of the live leases of @rundir (NULL as above), dead ones removed; for tests
 * and benchmarks. -1 when the directory cannot be read. */
gint64 ioh_budget_sum(const char *rundir);

/* --fadvise saves mark themselves in the same directory (DIR/PID.fadvise, a lease of no
 * bytes, dead ones ignored and removed likewise) so that each can scale its drop-behind
 * window to how many run at once. @join: marks this process first. The live marks of
 * @rundir (NULL as above), at least 1 (ours, when the directory cannot be used). */
guint ioh_budget_fadvise_saves(const char *rundir, gboolean join);

/* Removes this process's mark. */
void ioh_budget_fadvise_leave(const char *rundir);

/* Gives back everything and counts this helper out (the lease file is removed). Accepts
 * NULL. */
void ioh_budget_free(IohBudget *b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohBudget, ioh_budget_free)

G_END_DECLS
