/* ioh-zstd-adapt.c - --compress=auto: the choice of raw frames or a zstd level per window
 *
 * zstd's own `--adapt` (programs/fileio.c) moves one level at a time, once per job: down
 * when its input waits on the compressor, up when the compressor waits on the output. It
 * has no raw choice (its fastest level still costs a core), reacts a level per job, and
 * has no model of what another level would do. Here the decision is a model: each choice
 * k's predicted speed is min(source, compressor_k, sink / ratio_k) — the source's rate,
 * the compressor's at k, and the sink's drain rate over what k stores per stream byte.
 * Raw's compressor is free (checksums at memory speed), so raw is predicted at
 * min(source, sink): the choice is never predicted slower than raw, and among the choices
 * within 3% of the fastest the one that stores least is taken, in one step. The rates are
 * measured as the save goes: the sink's from the time its writes take, the source's from
 * the time the filter waits for it, each level's compressor from the time the filter is
 * blocked in libzstd (the compressor was the bottleneck: what it gave is its rate) or
 * else from its workers' CPU time, the ratio from libzstd's frame progression. What was
 * not measured lately is derived from what was (the table below, zstd's relative speeds
 * and ratios), and while storing raw from the probe's level-1 samples.
 */
#include "ioh-zstd-adapt.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define ADAPT_TOLERANCE 0.97    /* within 3% of the fastest counts as as fast */
#define ADAPT_SHRINK 0.97       /* a choice must store 3% less than the one it replaces */
#define ADAPT_EWMA 0.5          /* weight of the newest window */
#define ADAPT_DECAY 0.8         /* the sums of bytes and seconds, per window (add_rate()) */
#define ADAPT_SINK_DECAY 0.95   /* ... of the sink's: a throttle's slice spans several
                                 * windows (100 ms: 7 at 600 MB/s) */
#define ADAPT_TRY_WINDOWS 3     /* windows a tried choice runs after its first */
#define ADAPT_FRESH 32          /* windows a measured choice's rates are trusted */
#define ADAPT_BOUND 0.10        /* a share of the window: waiting that shows a bottleneck */
#define ADAPT_TRY 0.75          /* a level predicted this near raw is tried (explore()) */
#define ADAPT_TRY_LEVEL 0.9     /* ... raw or a faster level this near a level its
                                 * compressor bounds */
#define ADAPT_SINK_PACE 0.8     /* a choice going at this share of what the sink drains
                                 * of its output: the sink bounds it */
#define ADAPT_TRY_SINK 0.4      /* ... a level, when the sink sets raw's pace (explore()) */
#define ADAPT_GOT_FRESH 48      /* windows a choice's end-to-end rate is trusted */
#define ADAPT_SINK_BOUND 0.5    /* a share of the window in the sink: the sink bounds it */
#define ADAPT_BEHIND_BOUND 0.25 /* ... written behind, waiting for a free buffer (a
                                 * compressed window hands on a 4 MiB buffer at a time) */
#define ADAPT_HEADROOM 1.3      /* a compressor's margin over a source it shares cores with */

/* The levels, and their speed and the bytes they save relative to level 1 (zstd 1.5's
 * benchmark on silesia: priors only, replaced by what the save measures). Savings, not
 * sizes, scale: data level 1 cannot shrink, no level shrinks. */
static const struct {
    int level;
    double speed;
    double save;
} levels[IOH_ADAPT_CHOICES] = {
    { 0, 0, 0 }, { -5, 1.6, 0.84 }, { -3, 1.4, 0.895 }, { -1, 1.15, 0.957 }, { 1, 1.0, 1.0 },
    { 3, 0.6, 1.03 },
};

#define ADAPT_LEVEL1 4          /* the index of level 1, the probe's */

int
ioh_adapt_level(int k)
{
    g_return_val_if_fail(k > IOH_ADAPT_RAW && k < IOH_ADAPT_CHOICES, 1);
    return levels[k].level;
}

/* TRUE when the source sets raw's pace (known, and slower than the sink). */
static gboolean
source_bound(const IohAdaptRates *r)
{
    return r->source > 0 && (r->sink <= 0 || r->source < r->sink);
}

/* Choice @k's predicted speed, stream bytes/s (G_MAXDOUBLE: nothing bounds it): what
 * its windows went at lately where measured, else the model below. Where
 * the source is known to set raw's pace, a compressor counts for 1/ADAPT_HEADROOM of its
 * rate: its CPU is taken from the threads that read the source and from the producer
 * (the same cores), so it must outrun the source by that much not to slow it. */
/* TRUE when measured choice @j went at its compressor's pace: its windows did not wait
 * for the disk, and it went slower than the source. */
static gboolean
compressor_paced(const IohAdaptRates *r, int j)
{
    return j != IOH_ADAPT_RAW && r->got[j] > 0 && r->waited[j] < ADAPT_BOUND &&
           !(r->source > 0 && r->got[j] >= ADAPT_TOLERANCE * r->source);
}

static double
predict(const IohAdaptRates *r, int k)
{
    double t = r->source > 0 ? r->source : G_MAXDOUBLE;

    if (r->got[k] > 0) {
        /* measured: what it gave, whatever bound it; where its windows waited for the
         * disk, never more than the disk drains of its output (a throttle lets a few
         * windows through at memory speed, then holds one back) */
        return r->sink > 0 && r->waited[k] >= ADAPT_BOUND
                   ? MIN(r->got[k], r->sink / MAX(r->ratio[k], 1e-3)) : r->got[k];
    }
    if (k != IOH_ADAPT_RAW && r->comp[k] > 0) {
        t = MIN(t, source_bound(r) ? r->comp[k] / ADAPT_HEADROOM : r->comp[k]);
    }
    /* A level measured at its compressor's pace bounds the slower ones by the table: the
     * compressor's estimates from a window's blocked time or CPU are noisy (one window
     * of -5 said 3.6 GB/s, and level 3, predicted from it, replaced a -5 measured at
     * 0.85: benchmarks/results/compress-slow.md). */
    for (int j = 1; j < IOH_ADAPT_CHOICES && k != IOH_ADAPT_RAW; j++) {
        if (levels[j].speed >= levels[k].speed && compressor_paced(r, j)) {
            t = MIN(t, r->got[j] * levels[k].speed / levels[j].speed);
        }
    }
    if (r->sink > 0) {
        t = MIN(t, r->sink / MAX(r->ratio[k], 1e-3));
    }
    return t;
}

/* Why @pick was chosen. */
static IohAdaptWhy
reason(const IohAdaptRates *r, int pick)
{
    gboolean shrinks = FALSE;

    if (pick != IOH_ADAPT_RAW) {
        return r->sink > 0 && (r->source <= 0 || r->sink < r->source) ? IOH_ADAPT_WHY_SINK
                                                                       : IOH_ADAPT_WHY_SOURCE;
    }
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        shrinks = shrinks || r->ratio[k] < ADAPT_SHRINK * r->ratio[IOH_ADAPT_RAW];
    }
    return shrinks ? IOH_ADAPT_WHY_COMPRESSOR : IOH_ADAPT_WHY_INCOMPRESSIBLE;
}

/* TRUE when choice @k, predicted at @speed, goes at the pace of the disk or the source
 * (raw always: its compressor is free). Elsewhere its compressor sets the pace: a choice
 * that stores less costs more CPU, and storing less saves nothing when the disk has time
 * to spare (on 2 cores, zstd:-5 at 600 MB/s: the levels within each other's noise took
 * turns, each slower than -5: benchmarks/results/compress-slow.md). */
static gboolean
paced_by_ends(const IohAdaptRates *r, int k, double speed)
{
    double ends = r->source > 0 ? r->source : G_MAXDOUBLE;

    if (k == IOH_ADAPT_RAW) {
        return TRUE;
    }
    if (r->sink > 0 && (r->got[k] <= 0 || r->waited[k] >= ADAPT_BOUND)) {
        ends = MIN(ends, r->sink / MAX(r->ratio[k], 1e-3));
    }
    return ends < G_MAXDOUBLE && speed >= ADAPT_TOLERANCE * ends;
}

int
ioh_adapt_decide(const IohAdaptRates *r, IohAdaptWhy *ret_why)
{
    double best = 0;
    int pick = IOH_ADAPT_RAW, fastest = IOH_ADAPT_RAW;

    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        if (predict(r, k) > best) {
            best = predict(r, k);
            fastest = k;
        }
    }
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        if (predict(r, k) >= ADAPT_TOLERANCE * best &&
            r->ratio[k] < ADAPT_SHRINK * r->ratio[pick]) {
            pick = k;
        }
    }
    /* a level that stores no less than raw is never faster than raw but by noise (one
     * slow raw window under load: tests/engine/test-zstd-adapt.c, random-raw-slowed) */
    if (!paced_by_ends(r, fastest, best) &&
        (fastest == IOH_ADAPT_RAW || r->ratio[fastest] < ADAPT_SHRINK * r->ratio[IOH_ADAPT_RAW])) {
        pick = fastest;
    }
    if (ret_why) {
        *ret_why = reason(r, pick);
    }
    return pick;
}

void
ioh_adapt_init(IohAdapt *a, guint workers, guint cores)
{
    memset(a, 0, sizeof(*a));
    /* one core goes to the threads that read and write (and to the producer) */
    a->workers = MAX(1.0, MIN((double)workers, (double)cores - 1.0));
    a->choice = IOH_ADAPT_RAW;
    a->why = IOH_ADAPT_WHY_START;
    a->stats.on = TRUE;
    a->est.ratio[IOH_ADAPT_RAW] = 1.0;
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        a->est.ratio[k] = 1.0;    /* nothing known: no level shrinks, raw */
    }
}

static void
ewma(double *v, double x)
{
    *v = *v > 0 ? (1 - ADAPT_EWMA) * *v + ADAPT_EWMA * x : x;
}

/* Adds @bytes in @secs to the decaying sums @r; their rate (0: none yet). A disk's speed
 * comes in bursts (a write cache, a throttle's time slices: writes at memory speed, then
 * one that waits 100 ms): the rate of the sums weighs each window by its time, where an
 * average of the windows' rates would take the bursts for the disk. */
static double
add_rate(IohAdaptSum *r, double bytes, double secs, double decay)
{
    r->bytes = decay * r->bytes + bytes;
    r->secs = decay * r->secs + secs;
    return r->secs > 0 ? r->bytes / r->secs : 0;
}

/* The sink's and the source's rates, whatever the choice. */
static void
account_ends(IohAdapt *a, const IohAdaptWindow *w)
{
    double got = w->wall > 0 ? (double)w->in / w->wall : 0;
    double busy = w->behind ? MAX(w->wall - w->idle, 0) : w->sink;
    double drain = busy > 0 ? (double)w->out / busy : 0;
    gboolean bound = w->behind ? w->sink >= ADAPT_BEHIND_BOUND * w->wall
                               : w->sink >= ADAPT_SINK_BOUND * w->wall;

    /* Only a window the sink bound (or one that shows it slower) measures it: a throttle
     * lets writes under its rate through at the disk's speed, and a compressed window's
     * few writes would make raw, which the throttle holds, look fast. Written behind, a
     * window that waited for a free buffer kept the writer busy all the while the
     * filter did not wait for the source: the disk took its bytes in that time (the
     * waits alone, a fraction of it, made a 600 MB/s throttle look 1.5-3x faster). */
    if (w->behind ? bound && a->stats.windows > 0
                  : a->est.sink <= 0 || bound || drain < a->est.sink) {
        a->est.sink = add_rate(&a->sink, (double)w->out, busy, ADAPT_SINK_DECAY);
    }
    if (w->wall > 0) {
        a->est.waited[a->choice] = (1 - ADAPT_EWMA) * a->est.waited[a->choice] +
                               ADAPT_EWMA * MIN(w->sink / w->wall, 1.0);
    }
    /* Only a raw window measures the source: compressing takes CPU from the thread that
     * reads it (and from its producer), and the filter then waits for a source that
     * compression slowed, which says nothing of what raw would get. */
    if (a->choice == IOH_ADAPT_RAW && a->stats.windows > 0 && w->idle > ADAPT_BOUND * w->wall &&
        got > 0) {
        /* the filter waited: the source set the pace */
        a->est.source = add_rate(&a->source, (double)w->in, w->wall, ADAPT_DECAY);
    } else if (a->est.source > 0 && got > a->est.source) {
        a->source = (IohAdaptSum){ (double)w->in, w->wall };    /* it gave at least this */
        a->est.source = got;
    }
}

/* Choice @from's rates carried to every choice not measured lately, by the table. */
static void
derive(IohAdapt *a, int from, gboolean ratios_too)
{
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        gboolean stale = a->age[k] == 0 || a->age[k] > ADAPT_FRESH;

        if (k == from) {
            continue;
        }
        if (stale && a->est.comp[from] > 0) {
            a->est.comp[k] = a->est.comp[from] * levels[k].speed / levels[from].speed;
        }
        if (stale || ratios_too) {
            a->est.ratio[k] = CLAMP(1.0 - (1.0 - a->est.ratio[from]) * levels[k].save /
                                    levels[from].save, 0.01, 1.0);
        }
    }
}

/* A compressed window: the level's ratio and its compressor's rate. */
static void
account_level(IohAdapt *a, int k, const IohAdaptWindow *w)
{
    double busy = MAX(w->wall - w->idle, 1e-9);
    double seen = (double)w->in / busy;
    double cpu = w->comp_cpu - a->other_cpu * (double)w->in;

    if (w->consumed > 0) {
        ewma(&a->est.ratio[k], MIN(1.0, (double)w->produced / (double)w->consumed));
    }
    if (w->blocked > ADAPT_BOUND * busy) {
        a->est.comp[k] = seen;    /* the compressor set the pace: this is its rate */
    } else {
        /* it had time to spare: what its CPU per byte compressed allows, on the cores it
         * can have (the window's own bytes may be still in its jobs) */
        double per_core = w->consumed > 0 && w->out > 0 && cpu > 0
                              ? (double)w->consumed / cpu : 0;    /* not while filling */

        a->est.comp[k] = MAX(seen, per_core * a->workers);
    }
    /* Off the disk's time, slower than the source gave raw, whatever the cause (its CPU
     * taken from the producer slows the source): that is what the level gives. */
    if (a->est.source > 0 && w->wall > w->sink &&
        (double)w->in / (w->wall - w->sink) < ADAPT_TOLERANCE * a->est.source) {
        a->est.comp[k] = MIN(a->est.comp[k], (double)w->in / (w->wall - w->sink));
    }
    a->age[k] = 1;
    derive(a, k, FALSE);
}

/* A raw window: the probe's level-1 samples stand for every level's ratio; its speed, on
 * one thread, for the compressor's where no level was measured lately. */
static void
account_raw(IohAdapt *a, const IohAdaptWindow *w)
{
    int latest = 0;

    if (w->in > 0 && a->stats.windows > 0) {
        ewma(&a->other_cpu, w->comp_cpu / (double)w->in);
    }
    if (w->probe_ratio <= 0) {
        return;
    }
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        if (a->age[k] > 0 && (latest == 0 || a->age[k] < a->age[latest])) {
            latest = k;
        }
    }
    a->est.ratio[ADAPT_LEVEL1] = MIN(1.0, w->probe_ratio);
    if (latest == 0) {    /* no level measured yet: the probe's speed, however rough */
        a->est.comp[ADAPT_LEVEL1] = w->probe_speed * a->workers;
    } else if (latest != ADAPT_LEVEL1) {
        a->est.comp[ADAPT_LEVEL1] = a->est.comp[latest] * levels[ADAPT_LEVEL1].speed /
                                    levels[latest].speed;
    }
    derive(a, ADAPT_LEVEL1, TRUE);
}

static int
cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

/* The median of choice @k's last windows' rates (0: none). A window's rate is noisy on
 * busy cores (a producer descheduled for 40 ms makes one window of a level 5x slower
 * than the next) and the mean of a few windows took one such window for the level
 * (benchmarks/results/compress-slow.md at 600 MB/s: auto stored most of the stream raw);
 * what a throttle holds back of raw is the disk's rate, predict()'s bound. */
static double
got_median(const IohAdapt *a, int k)
{
    double v[IOH_ADAPT_GOT_N];
    guint n = MIN(a->got_n[k], IOH_ADAPT_GOT_N);

    if (n == 0) {
        return 0;
    }
    memcpy(v, a->got[k], n * sizeof(v[0]));
    qsort(v, n, sizeof(v[0]), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The window's end-to-end rate into its choice's (not the first window after a switch:
 * a level's first fills the compressor's jobs at memory speed, raw's first waits for
 * the last level's jobs), and the rates measured lately into the estimates. */
static void
account_got(IohAdapt *a, const IohAdaptWindow *w)
{
    int c = a->choice;

    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        a->got_age[k] += a->got_age[k] > 0;
    }
    /* a level's window whose chunks its samples found incompressible went raw: it says
     * nothing of the level (random pages at a level's pace made level 3 look as fast as
     * raw, and it was kept for the compressible pages after) */
    if (a->run > 0 && w->wall > 0 && w->in > 0 &&
        (c == IOH_ADAPT_RAW || w->consumed >= w->in / 2)) {
        if (a->got_age[c] == 0 || a->got_age[c] > ADAPT_GOT_FRESH) {
            a->got_n[c] = 0;
        }
        a->got[c][a->got_n[c]++ % IOH_ADAPT_GOT_N] = (double)w->in / w->wall;
        a->got_age[c] = 1;
    }
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        gboolean fresh = a->got_age[k] > 0 && a->got_age[k] <= ADAPT_GOT_FRESH;

        a->est.got[k] = fresh ? got_median(a, k) : 0;
    }
}

void
ioh_adapt_account(IohAdapt *a, const IohAdaptWindow *w)
{
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        a->age[k] += a->age[k] > 0;
    }
    account_ends(a, w);
    if (a->choice == IOH_ADAPT_RAW) {
        account_raw(a, w);
    } else {
        account_level(a, a->choice, w);
    }
    account_got(a, w);
    a->stats.bytes[a->choice] += w->in;
}

/* The choice to try for a few windows instead of @pick, or -1. Only windows at a choice
 * tell what it gives: a prediction comes from the table and the probe (on one thread, of
 * a few samples), which may be wrong either way. So once @pick was measured, the choice
 * predicted fastest among those not measured lately is tried when predicted at:
 * - ADAPT_TRY_SINK of raw's speed, raw picked and the sink setting its pace: compressing
 *   is the only way to go faster, and the probe's guess counts one core where the
 *   compressor's workers have all of them;
 * - ADAPT_TRY of @pick's, raw picked otherwise or a level the sink bounds (a few windows
 *   at that speed once in ADAPT_GOT_FRESH cost about 1%);
 * - ADAPT_TRY_LEVEL of a level its compressor bounds, raw or a faster level only: a
 *   slower level cannot beat it, and the estimates of the compressor's speed behind the
 *   predictions are the noisiest (a level tried for nothing: benchmarks/results/
 *   compress-slow.md at 600 MB/s). */
static int
explore(const IohAdapt *a, int pick)
{
    const IohAdaptRates *r = &a->est;
    int best = -1;
    gboolean pick_sink_bound = r->sink > 0 && r->waited[pick] >= ADAPT_BOUND &&
                               r->got[pick] >= ADAPT_SINK_PACE * r->sink / r->ratio[pick];
    double try = pick == IOH_ADAPT_RAW || pick_sink_bound ? ADAPT_TRY : ADAPT_TRY_LEVEL;

    if (r->got[pick] <= 0) {
        return -1;    /* the pick itself is a prediction: its window measures it */
    }
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        /* from a level its compressor bounds, only raw and faster levels: a slower
         * one cannot beat it (only where the sink bounds the level can a slower one
         * that stores less go faster) */
        gboolean slower = pick != IOH_ADAPT_RAW && k != IOH_ADAPT_RAW && !pick_sink_bound &&
                          levels[k].speed <= levels[pick].speed;

        if (k != pick && !slower && r->got[k] <= 0 &&
            (best < 0 || predict(r, k) > predict(r, best))) {
            best = k;
        }
    }
    if (best < 0 || (best != IOH_ADAPT_RAW && r->ratio[best] >= ADAPT_SHRINK)) {
        return -1;    /* nothing to try, or a level of data no level shrinks */
    }
    if (pick == IOH_ADAPT_RAW && r->sink > 0 && !source_bound(r)) {
        try = ADAPT_TRY_SINK;
    }
    return predict(r, best) >= try * predict(r, pick) ? best : -1;
}

int
ioh_adapt_next(IohAdapt *a, const IohAdaptWindow *w)
{
    IohAdaptWhy why = a->why;
    int next = a->choice;
    int try;

    ioh_adapt_account(a, w);
    a->why_count[a->choice][a->why]++;
    /* the first window after a switch shows the switch, not the choice: one more; a
     * choice tried runs ADAPT_TRY_WINDOWS more (a throttle's slices span several) */
    if (a->run >= (a->why == IOH_ADAPT_WHY_TRY ? ADAPT_TRY_WINDOWS : 1)) {
        next = ioh_adapt_decide(&a->est, &why);
        if ((try = explore(a, next)) >= 0) {
            next = try;
            why = IOH_ADAPT_WHY_TRY;
        }
    }
    a->stats.windows++;
    a->stats.switches += next != a->choice;
    a->run = next == a->choice ? a->run + 1 : 0;
    a->last = a->choice;
    a->choice = next;
    a->why = why;
    return next;
}

void
ioh_adapt_finish(IohAdapt *a)
{
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        guint64 most = 0;

        for (int y = 0; y < IOH_ADAPT_WHY_N; y++) {
            if (a->why_count[k][y] > most) {
                most = a->why_count[k][y];
                a->stats.why[k] = (IohAdaptWhy)y;
            }
        }
        if (most == 0) {
            a->stats.why[k] = a->why;    /* only the last window, still open, had it */
        }
    }
}

const char *
ioh_adapt_choice_name(int k)
{
    static const char *const names[IOH_ADAPT_CHOICES] = { "raw", "-5", "-3", "-1", "1", "3" };

    return k >= 0 && k < IOH_ADAPT_CHOICES ? names[k] : "?";
}

const char *
ioh_adapt_why_name(IohAdaptWhy why)
{
    static const char *const names[IOH_ADAPT_WHY_N] = {
        "first window", "sink-bound", "source-bound", "compression slower than raw",
        "incompressible", "trying the level",
    };

    return why < IOH_ADAPT_WHY_N ? names[why] : "?";
}

char *
ioh_adapt_stats_text(const IohAdaptStats *s)
{
    GString *t = g_string_new(NULL);

    if (!s->on) {
        return g_string_free(t, FALSE);
    }
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        if (s->bytes[k] > 0) {
            g_string_append_printf(t, "%s%s%s %.1f MiB (%s)", t->len ? ", " : ", auto: ",
                                   k ? "level " : "", ioh_adapt_choice_name(k),
                                   (double)s->bytes[k] / (1024.0 * 1024.0),
                                   ioh_adapt_why_name(s->why[k]));
        }
    }
    g_string_append_printf(t, "%s%" G_GUINT64_FORMAT " windows, %" G_GUINT64_FORMAT
                           " switches", t->len ? ", " : ", auto: ", s->windows, s->switches);
    return g_string_free(t, FALSE);
}

void
ioh_adapt_stats_json(gpointer builder, const IohAdaptStats *s)
{
    JsonBuilder *b = builder;

    json_builder_set_member_name(b, "compression_auto");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "choices");
    json_builder_begin_object(b);
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        if (s->bytes[k] > 0) {
            json_builder_set_member_name(b, ioh_adapt_choice_name(k));
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "bytes");
            json_builder_add_int_value(b, (gint64)s->bytes[k]);
            json_builder_set_member_name(b, "why");
            json_builder_add_string_value(b, ioh_adapt_why_name(s->why[k]));
            json_builder_end_object(b);
        }
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "windows");
    json_builder_add_int_value(b, (gint64)s->windows);
    json_builder_set_member_name(b, "switches");
    json_builder_add_int_value(b, (gint64)s->switches);
    json_builder_end_object(b);
}
