/* ioh-nbd-adapt.c - how many NBD connections and requests pay (ioh-nbd-adapt.h)
 *
 * Why a climb and not a fixed default: more connections pay only where the server or
 * the link limits each connection (nbdkit's rate filter: several times one connection);
 * to an unthrottled local server they cost (nbdkit file: more worker threads writing one
 * file, its inode lock contended, a fifth more server CPU), and a deep queue costs as
 * much on some servers as it gains on others (benchmarks/results/nbd.md). Only the
 * measured rate can tell, so each step is tried for a window and kept only if it pays.
 * Requests go first: they cost no connection, and a server limited per connection shows
 * no gain from them, which moves the climb on to connections after one window.
 */
#include "ioh-nbd-adapt.h"

static gboolean
can_grow_reqs(const IohNbdAdapt *a)
{
    return !a->fixed_reqs && a->best.reqs < a->max.reqs;
}

static gboolean
can_grow_conns(const IohNbdAdapt *a)
{
    return !a->fixed_conns && a->best.conns < a->max.conns;
}

/* The first phase that can climb from a->best, else settled. */
static IohNbdAdaptPhase
first_phase(const IohNbdAdapt *a)
{
    return can_grow_reqs(a) ? IOH_NBD_ADAPT_REQS
         : can_grow_conns(a) ? IOH_NBD_ADAPT_CONNS : IOH_NBD_ADAPT_SETTLED;
}

void
ioh_nbd_adapt_init(IohNbdAdapt *a, IohNbdShape start, IohNbdShape max,
                   gboolean fixed_conns, gboolean fixed_reqs)
{
    *a = (IohNbdAdapt){ .cur = start, .best = start, .max = max,
                        .fixed_conns = fixed_conns || max.conns <= start.conns,
                        .fixed_reqs = fixed_reqs || max.reqs <= start.reqs,
                        .waited_min = IOH_NBD_ADAPT_WAITED_MIN };
    a->why_reqs = fixed_reqs ? IOH_NBD_WHY_FIXED
                : a->fixed_reqs ? IOH_NBD_WHY_MOST : IOH_NBD_WHY_UNTRIED;
    a->why_conns = fixed_conns ? IOH_NBD_WHY_FIXED
                 : a->fixed_conns ? IOH_NBD_WHY_MOST : IOH_NBD_WHY_UNTRIED;
    a->phase = first_phase(a);
}

gboolean
ioh_nbd_adapt_is_fixed(const IohNbdAdapt *a)
{
    return a->fixed_conns && a->fixed_reqs;
}

/* Sets a->cur to the next shape to try from a->best, moving on a phase when this one
 * cannot climb further; settled: a->best. */
static void
next_step(IohNbdAdapt *a)
{
    if (a->phase == IOH_NBD_ADAPT_REQS && !can_grow_reqs(a)) {
        a->why_reqs = a->fixed_reqs ? a->why_reqs : IOH_NBD_WHY_MOST;
        a->phase = IOH_NBD_ADAPT_CONNS;
    }
    if (a->phase == IOH_NBD_ADAPT_CONNS && !can_grow_conns(a)) {
        a->why_conns = a->fixed_conns ? a->why_conns : IOH_NBD_WHY_MOST;
        a->phase = IOH_NBD_ADAPT_SETTLED;
    }
    if (a->phase == IOH_NBD_ADAPT_CONNS && a->best.conns == 1 &&
        a->waited_windows < IOH_NBD_ADAPT_WAITED_WINDOWS) {
        /* not waiting for the server window after window: not even a second connection
         * is tried (once connections paid, the climb goes on as the waits shrink with
         * them) */
        a->why_conns = IOH_NBD_WHY_BUSY;
        a->phase = IOH_NBD_ADAPT_SETTLED;
    }
    a->cur = a->best;
    if (a->phase == IOH_NBD_ADAPT_REQS) {
        a->cur.reqs = MIN(a->best.reqs * 2, a->max.reqs);
    } else if (a->phase == IOH_NBD_ADAPT_CONNS) {
        a->cur.conns = MIN(a->best.conns * 2, a->max.conns);
    }
}

/* The step just measured did not pay (@gain): back to the best, on to the next phase. */
static void
step_failed(IohNbdAdapt *a, double gain)
{
    int pct = (int)(gain * 100.0 + (gain < 0 ? -0.5 : 0.5));

    if (a->phase == IOH_NBD_ADAPT_REQS) {
        a->why_reqs = IOH_NBD_WHY_NO_GAIN;
        a->gain_reqs_pct = pct;
        a->phase = IOH_NBD_ADAPT_CONNS;
    } else {
        a->why_conns = IOH_NBD_WHY_NO_GAIN;
        a->gain_conns_pct = pct;
        a->phase = IOH_NBD_ADAPT_SETTLED;
    }
}

/* Settled: a rate away from the best for IOH_NBD_ADAPT_PATIENCE windows in a row (the
 * server or the link changed) starts a new climb from the current shape; so does a copy
 * that left connections untried because it did not wait for the server, once it waits
 * window after window: a producer starved early (a guest's stream starts slow, a busy
 * host) can deliver about what one limited connection takes, so the rate need not move. */
static void
settled_window(IohNbdAdapt *a, double rate)
{
    if (a->why_conns == IOH_NBD_WHY_BUSY &&
        a->waited_windows >= IOH_NBD_ADAPT_WAITED_WINDOWS) {
        a->why_conns = IOH_NBD_WHY_UNTRIED;
        a->off_windows = 0;
        a->best = a->cur;
        a->best_rate = rate;
        a->phase = IOH_NBD_ADAPT_CONNS;
        a->climbs++;
        return;
    }
    gboolean off = rate < a->best_rate * (1.0 - IOH_NBD_ADAPT_MOVE) ||
                   rate > a->best_rate * (1.0 + IOH_NBD_ADAPT_MOVE);

    a->off_windows = off ? a->off_windows + 1 : 0;
    if (a->off_windows < IOH_NBD_ADAPT_PATIENCE) {
        return;
    }
    a->off_windows = 0;
    a->best = a->cur;
    a->best_rate = rate;
    a->phase = first_phase(a);
    if (a->phase != IOH_NBD_ADAPT_SETTLED) {
        a->climbs++;
    }
}

/* The gain the step being tried must show to pay (ioh-nbd-adapt.h). */
static double
step_gain(const IohNbdAdapt *a)
{
    return a->phase == IOH_NBD_ADAPT_CONNS ? IOH_NBD_ADAPT_GAIN_CONNS : IOH_NBD_ADAPT_GAIN;
}

gboolean
ioh_nbd_adapt_window(IohNbdAdapt *a, double rate, double waited)
{
    IohNbdShape old = a->cur;

    a->waited = waited;
    /* the copy's first window is not a rate: the server's buffers fill at once, and a
     * rate limiter starts with a full bucket (nbdkit's rate filter made one connection
     * look nearly twice as fast as its limit, and every step after it a loss) */
    if (a->windows++ == 0) {
        return FALSE;
    }
    a->waited_windows = waited >= a->waited_min ? a->waited_windows + 1 : 0;
    if (a->phase == IOH_NBD_ADAPT_SETTLED) {
        settled_window(a, rate);
    } else if (a->best_rate <= 0.0) {
        if (a->phase == IOH_NBD_ADAPT_CONNS && a->waited_windows > 0 &&
            a->waited_windows < IOH_NBD_ADAPT_WAITED_WINDOWS) {
            return FALSE;           /* connections next: one more window must wait */
        }
        a->best = a->cur;           /* the baseline */
        a->best_rate = rate;
    } else if (rate < a->best_rate * (1.0 + step_gain(a))) {
        step_failed(a, (a->confirming ? (a->trial_rate + rate) / 2 : rate) / a->best_rate - 1.0);
        a->confirming = FALSE;
    } else if (!a->confirming) {
        a->confirming = TRUE;       /* paid once: once more at the same shape */
        a->trial_rate = rate;
        return FALSE;
    } else {
        a->confirming = FALSE;      /* paid twice in a row: kept */
        a->best = a->cur;
        a->best_rate = (a->trial_rate + rate) / 2;
    }
    next_step(a);
    return old.conns != a->cur.conns || old.reqs != a->cur.reqs;
}

void
ioh_nbd_adapt_refused(IohNbdAdapt *a)
{
    a->why_conns = IOH_NBD_WHY_FAILED;
    a->max.conns = a->best.conns;
    a->fixed_conns = TRUE;
    a->phase = IOH_NBD_ADAPT_SETTLED;
    a->cur = a->best;
}

/* One dimension's why: @what "request"/"connection", @next the shape tried. */
static void
append_why(GString *t, IohNbdWhy why, const char *what, guint next, int pct)
{
    switch (why) {
    case IOH_NBD_WHY_FIXED:
        g_string_append_printf(t, "%ss fixed by --%ss", what, what);
        break;
    case IOH_NBD_WHY_MOST:
        g_string_append_printf(t, "%ss at the most", what);
        break;
    case IOH_NBD_WHY_NO_GAIN:
        g_string_append_printf(t, "%u %ss %+d %%: did not pay", next, what, pct);
        break;
    case IOH_NBD_WHY_FAILED:
        g_string_append_printf(t, "a further %s failed to open", what);
        break;
    case IOH_NBD_WHY_BUSY:
        g_string_append_printf(t, "more %ss not tried: the copy waited for the server %d %% "
                               "of the time, the pipe or the CPU limits", what, pct);
        break;
    case IOH_NBD_WHY_UNTRIED:
    default:
        g_string_append_printf(t, "more %ss: not settled (a short copy)", what);
        break;
    }
}

char *
ioh_nbd_adapt_describe(const IohNbdAdapt *a)
{
    GString *t = g_string_new(NULL);
    guint c = a->cur.conns, r = a->cur.reqs;

    g_string_append_printf(t, "%u connection%s, %u request%s each (", c, c == 1 ? "" : "s",
                           r, r == 1 ? "" : "s");
    if (a->why_reqs == IOH_NBD_WHY_FIXED && a->why_conns == IOH_NBD_WHY_FIXED) {
        g_string_append(t, "as given");
    } else {
        g_string_append(t, "adaptive: ");
        append_why(t, a->why_reqs, "request", MIN(a->best.reqs * 2, a->max.reqs),
                   a->gain_reqs_pct);
        g_string_append(t, "; ");
        if (a->max.conns <= 1 && a->why_conns == IOH_NBD_WHY_MOST) {
            g_string_append(t, "one connection: the server does not advertise multi-conn");
        } else {
            append_why(t, a->why_conns, "connection", MIN(a->best.conns * 2, a->max.conns),
                       a->why_conns == IOH_NBD_WHY_BUSY ? (int)(a->waited * 100 + 0.5)
                                                        : a->gain_conns_pct);
        }
    }
    if (a->phase != IOH_NBD_ADAPT_SETTLED &&
        (a->cur.conns != a->best.conns || a->cur.reqs != a->best.reqs)) {
        g_string_append_printf(t, "; still trying this against %u x %u", a->best.conns,
                               a->best.reqs);
    }
    g_string_append_c(t, ')');
    return g_string_free(t, FALSE);
}
