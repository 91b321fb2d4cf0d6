/* test-zstd-adapt.c - --compress=auto's decision (ioh-zstd-adapt.h), in-process: the pure
 * decision from rates, and whole saves of windows whose measurements come from a model
 * of a disk, a source and a compressor (injected: no timing of this machine involved). */
#include <glib.h>
#include <math.h>

#include "ioh-zstd-adapt.h"

#define MB 1e6
#define WIN ((double)IOH_ADAPT_WINDOW)

/* A level's speed and the bytes it saves relative to level 1 in the model (not the
 * module's priors: the module must learn them). */
static const double model_speed[IOH_ADAPT_CHOICES] = { 0, 1.9, 1.6, 1.2, 1.0, 0.55 };
static const double model_save[IOH_ADAPT_CHOICES] = { 0, 0.8, 0.87, 0.95, 1.0, 1.04 };

static double
model_ratio(double r1, int k)
{
    return k ? CLAMP(1.0 - (1.0 - r1) * model_save[k], 0.01, 1.0) : 1.0;
}

/* rates for the pure decision: level 1 compresses at @c1 to @r1, the others as the model */
static IohAdaptRates
rates(double source, double sink, double c1, double r1)
{
    IohAdaptRates r = { .source = source, .sink = sink };

    r.ratio[IOH_ADAPT_RAW] = 1.0;
    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        r.comp[k] = c1 * model_speed[k];
        r.ratio[k] = model_ratio(r1, k);
    }
    return r;
}

/* The speed a choice gives with these rates (0 = unbounded), as the decision's contract
 * states it (a compressor sharing cores with a source known to set raw's pace, slower
 * than the sink, counts for 1/1.3). */
static double
speed(const IohAdaptRates *r, int k)
{
    double t = r->source > 0 ? r->source : INFINITY;
    gboolean source_bound = r->source > 0 && (r->sink <= 0 || r->source < r->sink);

    if (k != IOH_ADAPT_RAW && r->comp[k] > 0) {
        t = MIN(t, source_bound ? r->comp[k] / 1.3 : r->comp[k]);
    }
    return r->sink > 0 ? MIN(t, r->sink / r->ratio[k]) : t;
}

static void
test_decide_fast_sink(void)
{
    IohAdaptRates r = rates(0, 2000 * MB, 400 * MB, 0.35);
    IohAdaptWhy why;

    g_assert_cmpint(ioh_adapt_decide(&r, &why), ==, IOH_ADAPT_RAW);
    g_assert_cmpint(why, ==, IOH_ADAPT_WHY_COMPRESSOR);
}

static void
test_decide_slow_sink(void)
{
    IohAdaptRates r = rates(0, 150 * MB, 400 * MB, 0.35);
    IohAdaptWhy why;
    int k = ioh_adapt_decide(&r, &why);

    g_assert_cmpint(k, !=, IOH_ADAPT_RAW);
    g_assert_cmpint(why, ==, IOH_ADAPT_WHY_SINK);
    g_assert_cmpfloat(speed(&r, k), >=, 1.8 * speed(&r, IOH_ADAPT_RAW));
    /* the one that stores least among those as fast: level 1 here (400 MB/s of input
     * takes 140 MB/s of disk), not -1 or lower (faster compressors, larger images) */
    g_assert_cmpint(ioh_adapt_level(k), ==, 1);
}

static void
test_decide_incompressible(void)
{
    IohAdaptRates r = rates(0, 150 * MB, 400 * MB, 1.0);
    IohAdaptWhy why;

    g_assert_cmpint(ioh_adapt_decide(&r, &why), ==, IOH_ADAPT_RAW);
    g_assert_cmpint(why, ==, IOH_ADAPT_WHY_INCOMPRESSIBLE);
}

/* The source sets the pace (300 MB/s, disk 2 GB/s): the most compression that keeps up. */
static void
test_decide_source_bound(void)
{
    IohAdaptRates r = rates(300 * MB, 2000 * MB, 400 * MB, 0.35);
    IohAdaptWhy why;
    int k = ioh_adapt_decide(&r, &why);

    g_assert_cmpint(ioh_adapt_level(k), ==, 1);    /* level 3 gives only 220 MB/s */
    g_assert_cmpint(why, ==, IOH_ADAPT_WHY_SOURCE);
}

/* Nothing measured: raw. */
static void
test_decide_unknown(void)
{
    IohAdaptRates r = { 0 };

    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        r.ratio[k] = 1.0;
    }
    g_assert_cmpint(ioh_adapt_decide(&r, NULL), ==, IOH_ADAPT_RAW);
}

/* Over many random rates: the choice is never predicted slower than 0.97x raw nor than
 * 0.97x the fastest, and never stores more than raw. */
static void
test_decide_never_slower(void)
{
    GRand *rand = g_rand_new_with_seed(30);

    for (int i = 0; i < 100000; i++) {
        IohAdaptRates r = rates(g_rand_boolean(rand) ? 0 : g_rand_double_range(rand, 10, 4000) * MB,
                                g_rand_double_range(rand, 10, 4000) * MB,
                                g_rand_double_range(rand, 10, 2000) * MB,
                                g_rand_double_range(rand, 0.05, 1.2));
        double best = 0;
        int k = ioh_adapt_decide(&r, NULL);

        for (int j = 0; j < IOH_ADAPT_CHOICES; j++) {
            best = MAX(best, speed(&r, j));
        }
        g_assert_cmpfloat(speed(&r, k), >=, 0.97 * speed(&r, IOH_ADAPT_RAW));
        g_assert_cmpfloat(speed(&r, k), >=, 0.97 * best);
        g_assert_cmpfloat(r.ratio[k], <=, 1.0);
    }
    g_rand_free(rand);
}

/* ---- whole saves against a model ---- */

typedef struct {
    double source;      /* B/s (0: unbounded) */
    double slowed;      /* the source's rate while compressing (0: the same): the CPU
                         * compression takes is the producer's */
    double sink;        /* stored B/s */
    double c1;          /* level 1's compressor, stream B/s with every worker */
    double r1;          /* level 1's ratio */
    guint workers;
    gboolean bursty;    /* the sink takes every other window's writes at 10x its rate,
                         * the next ones the slower (a throttle's slices, a write cache) */
    double burst;       /* B/s the sink's writes take while it is not the bottleneck (a
                         * throttle lets writes under its rate through at the disk's
                         * speed; 0: its rate) */
    guint cores;        /* the machine's (0: workers + 1, a core for the other threads) */
} Model;

/* Window @i, of choice @k, as the filter would measure it against @m; its time in
 * @ret_t. */
static IohAdaptWindow
measure(const Model *m, int i, int k, double *ret_t)
{
    double ratio = model_ratio(m->r1, k);
    double comp = k ? m->c1 * model_speed[k] : INFINITY;
    double src = k && m->slowed > 0 ? m->slowed : m->source > 0 ? m->source : INFINITY;
    double t = WIN / MIN(MIN(src, comp), m->sink / ratio);
    IohAdaptWindow w = { .in = (guint64)WIN, .out = (guint64)(WIN * ratio), .wall = t };

    w.sink = WIN * ratio / m->sink;
    if (m->burst > 0 && m->sink / ratio > MIN(src, comp)) {
        w.sink = WIN * ratio / m->burst;
    }
    if (m->bursty) {    /* the same time over two windows, unevenly */
        w.sink *= i % 2 ? 1.9 : 0.1;
        w.wall += w.sink - WIN * ratio / m->sink;
        t = w.wall;
    }
    w.idle = src <= MIN(comp, m->sink / ratio) ? t - WIN / MIN(comp, m->sink / ratio) : 0;
    if (k) {
        w.consumed = w.in;
        w.produced = w.out;
        w.blocked = comp < MIN(src, m->sink / ratio) ? t - w.sink : 0;
        w.comp_cpu = WIN * m->workers / comp;
    } else {
        w.probe_ratio = m->r1 * 1.05;                   /* samples: a bit off */
        w.probe_speed = m->c1 / m->workers * 0.7;       /* small inputs: slower */
    }
    *ret_t = t;
    return w;
}

typedef struct {
    double t;           /* the save's time */
    double t_raw;       /* raw's */
    double stored;      /* bytes stored / raw's */
    guint64 raw_bytes;
} Run;

static Run
run_model(const Model *m, int windows)
{
    IohAdapt a;
    Run run = { 0 };
    double stored = 0;

    ioh_adapt_init(&a, m->workers, m->cores ? m->cores : m->workers + 1);
    for (int i = 0; i < windows; i++) {
        double t, t_raw;
        int k = a.choice;
        IohAdaptWindow w = measure(m, i, k, &t);

        measure(m, i, IOH_ADAPT_RAW, &t_raw);
        run.t += t;
        run.t_raw += t_raw;
        stored += (double)w.out;
        ioh_adapt_next(&a, &w);
        if (g_getenv("ADAPT_TRACE")) {
            g_printerr("%s %.1fms sink=%.0f got=%.0f -> %s (%s)\n", ioh_adapt_choice_name(k),
                       t * 1e3, a.est.sink / 1e6, a.est.got[k] / 1e6,
                       ioh_adapt_choice_name(a.choice), ioh_adapt_why_name(a.why));
        }
    }
    ioh_adapt_finish(&a);
    run.stored = stored / (WIN * windows);
    run.raw_bytes = a.stats.bytes[IOH_ADAPT_RAW];
    g_assert_cmpuint(a.stats.windows, ==, (guint64)windows);
    return run;
}

/* A fast disk and a compressor that cannot keep up: raw, within 5% of raw's time. */
static void
test_model_fast_disk(void)
{
    Model m = { 0, 0, 2000 * MB, 500 * MB, 0.35, 2, FALSE, 0, 0 };
    Run r = run_model(&m, 128);

    g_assert_cmpfloat(r.t, <=, 1.05 * r.t_raw);
    g_assert_cmpuint(r.raw_bytes, >=, (guint64)(0.9 * 128 * WIN));
}

/* A throttled disk: compresses, at least 1.8x raw's speed. */
static void
test_model_slow_disk(void)
{
    Model m = { 0, 0, 150 * MB, 500 * MB, 0.35, 2, FALSE, 0, 0 };
    Run r = run_model(&m, 128);

    g_assert_cmpfloat(r.t_raw / r.t, >=, 1.8);
    g_assert_cmpfloat(r.stored, <=, 0.5);
}

/* The same disk in bursts: the writes of one window at 1.5 GB/s, of the next at 80 MB/s
 * (150 MB/s over both): still at least 1.8x raw. */
static void
test_model_bursty_disk(void)
{
    Model m = { 0, 0, 150 * MB, 500 * MB, 0.35, 2, TRUE, 0, 0 };
    Run r = run_model(&m, 128);

    g_assert_cmpfloat(r.t_raw / r.t, >=, 1.8);
}

/* Auto's time on @m against raw's and every fixed level's, within 5%; @windows. */
static void
assert_best(const Model *m, int windows)
{
    Run r = run_model(m, windows);
    double best = r.t_raw;

    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        double t;

        measure(m, 1, k, &t);
        best = MIN(best, t * windows);
    }
    g_test_message("auto %.3f s, best %.3f s, raw %.3f s, stored %.3f", r.t, best, r.t_raw,
                   r.stored);
    g_assert_cmpfloat(r.t, <=, 1.05 * best);
}

/* A disk near the compressor's speed (600 MB/s): no slower than raw nor than any fixed
 * level would be, within 5%. */
static void
test_model_middle_disk(void)
{
    Model m = { 0, 0, 600 * MB, 500 * MB, 0.35, 2, FALSE, 0, 0 };

    assert_best(&m, 128);
}

/* The same on 2 cores (the compressor's workers share them with the reader, so the
 * module counts one core for them and its probe's speed on one thread; compressing
 * really runs on both), behind a throttle that lets writes under its rate through at
 * the disk's speed, from a source faster than the disk: the levels beat raw (by
 * 1.4x at -5), and only windows at a level can show it (benchmarks/results/
 * compress-slow.md: auto stayed raw at 600 MB/s where zstd:-1 was faster). */
static void
test_model_middle_disk_two_cores(void)
{
    Model m = { 1500 * MB, 0, 600 * MB, 450 * MB, 0.35, 2, FALSE, 2000 * MB, 2 };

    assert_best(&m, 107);
}

/* A throttled disk (150 MB/s) that takes the writes of compressed windows at the disk's
 * speed: the windows where the sink does not bound must not make raw look fast (auto
 * stored half the stream raw at 150 MB/s: benchmarks/results/compress-slow.md). */
static void
test_model_slow_disk_burst(void)
{
    Model m = { 1500 * MB, 0, 150 * MB, 450 * MB, 0.35, 2, FALSE, 2000 * MB, 2 };
    Run r = run_model(&m, 107);

    g_test_message("auto %.3f s, raw %.3f s, stored %.3f", r.t, r.t_raw, r.stored);
    g_assert_cmpfloat(r.t_raw / r.t, >=, 1.8);
    g_assert_cmpfloat(r.stored, <=, 0.45);
}

/* An unthrottled disk on 2 cores: compressing is far slower than raw (0.45x); the
 * trials auto makes must not cost over 5% of raw's time. */
static void
test_model_fast_disk_two_cores(void)
{
    Model m = { 1500 * MB, 0, 1800 * MB, 450 * MB, 0.35, 2, FALSE, 0, 2 };
    Run r = run_model(&m, 107);

    g_test_message("auto %.3f s, raw %.3f s, stored %.3f", r.t, r.t_raw, r.stored);
    g_assert_cmpfloat(r.t, <=, 1.05 * r.t_raw);
}

/* Incompressible data: raw throughout, never a compressed window. */
static void
test_model_random(void)
{
    Model m = { 0, 0, 150 * MB, 500 * MB, 1.0, 2, FALSE, 0, 0 };
    Run r = run_model(&m, 64);

    g_assert_cmpuint(r.raw_bytes, ==, (guint64)(64 * WIN));
}

/* A slow source (300 MB/s) and a fast disk: compresses as much as keeps up, no slower. */
static void
test_model_slow_source(void)
{
    Model m = { 300 * MB, 0, 2000 * MB, 500 * MB, 0.35, 2, FALSE, 0, 0 };
    Run r = run_model(&m, 128);

    g_assert_cmpfloat(r.t, <=, 1.05 * r.t_raw);
    g_assert_cmpfloat(r.stored, <=, 0.5);
}

/* A source that compression slows (QEMU on the same cores: 700 MB/s, 450 while
 * compressing) and a fast disk: the level's own measurements look fine (source-bound,
 * never blocked), but it is slower than raw end to end: raw, within 5%. */
static void
test_model_slowed_source(void)
{
    Model m = { 700 * MB, 450 * MB, 2000 * MB, 600 * MB, 0.35, 2, FALSE, 0, 0 };
    Run r = run_model(&m, 128);

    g_assert_cmpfloat(r.t, <=, 1.05 * r.t_raw);
}

/* ---- windows recorded from real saves ---- */

/* The bench guest's stream saved with --direct (writes behind the filter) to a disk
 * throttled to 600 MB/s on 2 cores (benchmarks/compress --slow 600, each window's line
 * of the debug log): wall, sink (the filter's waits for a free buffer), idle, blocked
 * (ms). Raw: the throttle lets 50-120 MB through at memory speed, then holds a window
 * back 50-75 ms. zstd:-5: its compressor sets the pace, the disk never makes it wait;
 * and once, a window where the producer was descheduled (rec_stall). */
static const double rec_raw[][4] = {
    { 3.9, 1.8, 1.1, 0 }, { 7.6, 5.8, 0.9, 0 }, { 3.7, 1.9, 0.8, 0 }, { 4.5, 2.2, 1.5, 0 },
    { 6.7, 3.9, 2.0, 0 }, { 4.3, 1.5, 1.3, 0 }, { 62.7, 60.5, 1.2, 0 }, { 5.4, 2.3, 1.0, 0 },
    { 3.4, 0.0, 2.6, 0 }, { 5.5, 1.8, 0.7, 0 }, { 3.7, 2.2, 0.7, 0 }, { 3.6, 2.1, 0.7, 0 },
    { 4.8, 2.4, 0.6, 0 }, { 74.3, 72.3, 1.1, 0 },
};
static const double rec_level[][4] = {
    { 12.2, 0.0, 0.9, 10.9 }, { 5.6, 0.1, 3.3, 1.9 }, { 9.0, 0.0, 1.3, 7.4 },
    { 9.1, 1.6, 1.3, 5.8 }, { 9.2, 0.0, 0.7, 8.0 }, { 9.4, 0.0, 0.7, 8.4 }, { 8.1, 0.0, 0.7, 7.1 }, { 9.5, 0.0, 0.7, 8.4 },
    { 11.4, 0.1, 4.1, 6.8 }, { 12.3, 0.0, 2.1, 9.8 }, { 7.9, 0.0, 1.6, 6.0 },
    { 8.6, 0.0, 0.7, 7.6 }, { 11.2, 0.0, 0.7, 10.2 }, { 11.1, 0.1, 0.6, 10.0 },
    { 8.8, 0.0, 0.7, 7.7 }, { 11.3, 0.0, 0.7, 10.1 }, { 8.9, 0.1, 0.7, 7.8 },
};
static const double rec_stall[4] = { 48.7, 0.2, 38.5, 9.6 };
/* The other levels: -5's windows, slower by zstd's relative speeds; their ratios. */
static const double rec_slower[IOH_ADAPT_CHOICES] = { 0, 1.0, 1.15, 1.3, 1.5, 2.4 };
static const double rec_ratio[IOH_ADAPT_CHOICES] = { 1.0, 0.45, 0.42, 0.38, 0.35, 0.33 };

/* The @n-th window of choice @k as recorded, window @i of the save. */
static IohAdaptWindow
recorded(int k, guint n, int i)
{
    const double *r = !k ? rec_raw[n % G_N_ELEMENTS(rec_raw)]
                      : i == 10 ? rec_stall : rec_level[n % G_N_ELEMENTS(rec_level)];
    double slower = k ? rec_slower[k] : 1.0;
    IohAdaptWindow w = { .in = (guint64)WIN, .out = (guint64)(WIN * rec_ratio[k]),
                         .behind = TRUE };

    w.wall = (r[0] - r[2] + r[2] / slower) * slower / 1e3;    /* idle is not the level's */
    w.sink = r[1] / 1e3;
    w.idle = r[2] / 1e3;
    w.blocked = r[3] * slower / 1e3;
    if (k) {
        w.consumed = w.in;
        w.produced = w.out;
        w.comp_cpu = 1.4 * (w.wall - w.idle);
    } else {
        w.probe_ratio = 0.40;
        w.probe_speed = 350 * MB;
    }
    return w;
}

/* A 600 MB/s throttle behind writes on 2 cores, from the windows recorded there: auto
 * within 5% of zstd:-5 (the fastest, 1.4x raw), though it measures raw first (the
 * throttle's first 50-120 MB go at memory speed). Levels within each other's noise took
 * turns, -3 and -1 each slower than -5 (7% slower than -5 here). */
static void
test_recorded_throttle_600(void)
{
    IohAdapt a;
    guint n[IOH_ADAPT_CHOICES] = { 0 };
    double t = 0, t_fixed[IOH_ADAPT_CHOICES] = { 0 };
    int windows = 107;

    ioh_adapt_init(&a, 2, 2);
    for (int i = 0; i < windows; i++) {
        IohAdaptWindow w = recorded(a.choice, n[a.choice]++, i);

        t += w.wall;
        ioh_adapt_next(&a, &w);
        if (g_getenv("ADAPT_TRACE")) {
            g_printerr("%.1fms sink=%.0f -> %s (%s)\n", w.wall * 1e3, a.est.sink / 1e6,
                       ioh_adapt_choice_name(a.choice), ioh_adapt_why_name(a.why));
        }
        for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
            t_fixed[k] += recorded(k, (guint)i, i).wall;
        }
    }
    g_test_message("auto %.3f s (raw windows %u), -5 %.3f s, raw %.3f s", t, n[0],
                   t_fixed[1], t_fixed[0]);
    for (int k = 0; k < IOH_ADAPT_CHOICES; k++) {
        g_assert_cmpfloat(t, <=, 1.05 * t_fixed[k]);
    }
}

/* The same raw windows: the disk's rate is the throttle's (604 MB/s over them), within
 * 25%. The filter's waits for a free buffer are a fraction of the time the disk takes
 * (the filter copies while the writer writes): taken for the disk's time, they made it
 * 1.5-4 GB/s, raw looked as fast and auto stored most of the stream raw at 600 MB/s. */
static void
test_recorded_throttle_600_sink(void)
{
    IohAdapt a;
    double disk = 0, t = 0;

    ioh_adapt_init(&a, 2, 2);
    for (guint i = 0; i < 3 * G_N_ELEMENTS(rec_raw); i++) {
        IohAdaptWindow w = recorded(IOH_ADAPT_RAW, i, -1);

        ioh_adapt_account(&a, &w);
        a.stats.windows++;
        a.run++;
        disk += (double)w.out;
        t += w.wall;
    }
    g_test_message("sink %.0f MB/s, the disk %.0f MB/s", a.est.sink / MB, disk / t / MB);
    g_assert_cmpfloat(a.est.sink, <=, 1.25 * disk / t);
    g_assert_cmpfloat(a.est.sink, >=, 0.75 * disk / t);
}

/* The same throttle, the save's first two windows as recorded (the helper starting: 140
 * and 34 ms, each waiting 20-27 ms for a free buffer), then zstd:-5's windows, which
 * never wait for the disk: no slower level is tried. A disk rate taken from the start
 * said 340 MB/s for the whole save (no compressed window waited to correct it): every
 * level looked bound by the disk, and auto tried -1, -3, 1 and 3 in turn, each slower
 * than -5, for a third of the stream (benchmarks/results/compress-slow.md). */
static void
test_recorded_throttle_600_start(void)
{
    static const double start[2][4] = { { 140.0, 27.1, 1.7, 0 }, { 33.5, 19.6, 1.9, 0 } };
    IohAdapt a;
    guint n[IOH_ADAPT_CHOICES] = { 0 };

    ioh_adapt_init(&a, 2, 2);
    for (int i = 0; i < 64; i++) {
        IohAdaptWindow w = recorded(a.choice, n[a.choice]++, -1);

        if (i < 2) {
            g_assert_cmpint(a.choice, ==, IOH_ADAPT_RAW);
            w.wall = start[i][0] / 1e3;
            w.sink = start[i][1] / 1e3;
            w.idle = start[i][2] / 1e3;
        }
        ioh_adapt_next(&a, &w);
        if (g_getenv("ADAPT_TRACE")) {
            g_printerr("%s %.1fms sink=%.0f waited=%.2f got=%.0f,%.0f -> %s (%s)\n",
                       ioh_adapt_choice_name(a.last), w.wall * 1e3, a.est.sink / 1e6,
                       a.est.waited[a.last], a.est.got[0] / 1e6, a.est.got[1] / 1e6,
                       ioh_adapt_choice_name(a.choice), ioh_adapt_why_name(a.why));
        }
    }
    g_test_message("windows: raw %u, -5 %u, -3 %u, -1 %u, 1 %u, 3 %u", n[0], n[1], n[2],
                   n[3], n[4], n[5]);
    g_assert_cmpuint(n[2] + n[3] + n[4] + n[5], ==, 0);
}

/* zstd:-5 measured fastest with time to spare on the disk (its windows never waited for
 * it): taken, though -3 is within 3% and stores less. Its compressor sets its pace, so
 * storing less gains nothing, and a level that stores less costs more CPU: picking the
 * one that stores least among levels within each other's noise made auto take turns at
 * levels each slower than -5 (benchmarks/results/compress-slow.md at 600 MB/s). */
static void
test_decide_compressor_bound(void)
{
    IohAdaptRates r = rates(0, 600 * MB, 500 * MB, 0.35);
    IohAdaptWhy why;

    r.got[IOH_ADAPT_RAW] = 600 * MB;
    r.waited[IOH_ADAPT_RAW] = 0.6;
    r.got[1] = 950 * MB;
    r.got[2] = 935 * MB;
    g_assert_cmpint(ioh_adapt_decide(&r, &why), ==, 1);
    /* where the disk bounds both (their windows waited), the one that stores less */
    r.waited[1] = r.waited[2] = 0.5;
    r.sink = 300 * MB;
    g_assert_cmpint(ioh_adapt_decide(&r, &why), >, 1);
}

/* Random data (no level shrinks it) with raw's windows slowed (the machine busy) below
 * what a level's compressor is predicted at: raw all the same. Storing as much as raw,
 * the level cannot be faster but by noise; taking it compressed the last window of random
 * data in test-compress's /compress/auto/round-trip/direct/random under load. */
static void
test_decide_random_raw_slowed(void)
{
    IohAdaptRates r = rates(0, 600 * MB, 150 * MB, 1.0);
    IohAdaptWhy why;

    for (int k = 1; k < IOH_ADAPT_CHOICES; k++) {
        r.ratio[k] = 1.0;
    }
    r.comp[1] = 450 * MB;
    r.got[IOH_ADAPT_RAW] = 400 * MB;
    g_assert_cmpint(ioh_adapt_decide(&r, &why), ==, IOH_ADAPT_RAW);
    g_assert_cmpint(why, ==, IOH_ADAPT_WHY_INCOMPRESSIBLE);
}

static void
test_stats_text(void)
{
    IohAdaptStats s = { .on = TRUE, .windows = 3, .switches = 1 };
    g_autofree char *t = NULL;
    g_autofree char *off = NULL;
    IohAdaptStats none = { 0 };

    s.bytes[IOH_ADAPT_RAW] = 8 * 1024 * 1024;
    s.why[IOH_ADAPT_RAW] = IOH_ADAPT_WHY_START;
    s.bytes[4] = 16 * 1024 * 1024;
    s.why[4] = IOH_ADAPT_WHY_SINK;
    t = ioh_adapt_stats_text(&s);
    g_assert_cmpstr(t, ==, ", auto: raw 8.0 MiB (first window), level 1 16.0 MiB (sink-bound), "
                    "3 windows, 1 switches");
    off = ioh_adapt_stats_text(&none);
    g_assert_cmpstr(off, ==, "");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/adapt/decide/fast-sink-raw", test_decide_fast_sink);
    g_test_add_func("/adapt/decide/slow-sink-compresses", test_decide_slow_sink);
    g_test_add_func("/adapt/decide/incompressible-raw", test_decide_incompressible);
    g_test_add_func("/adapt/decide/source-bound", test_decide_source_bound);
    g_test_add_func("/adapt/decide/unknown-raw", test_decide_unknown);
    g_test_add_func("/adapt/decide/never-slower", test_decide_never_slower);
    g_test_add_func("/adapt/model/fast-disk", test_model_fast_disk);
    g_test_add_func("/adapt/model/slow-disk", test_model_slow_disk);
    g_test_add_func("/adapt/model/bursty-disk", test_model_bursty_disk);
    g_test_add_func("/adapt/model/middle-disk", test_model_middle_disk);
    g_test_add_func("/adapt/model/middle-disk-two-cores", test_model_middle_disk_two_cores);
    g_test_add_func("/adapt/model/slow-disk-burst", test_model_slow_disk_burst);
    g_test_add_func("/adapt/model/fast-disk-two-cores", test_model_fast_disk_two_cores);
    g_test_add_func("/adapt/model/random", test_model_random);
    g_test_add_func("/adapt/model/slow-source", test_model_slow_source);
    g_test_add_func("/adapt/model/slowed-source", test_model_slowed_source);
    g_test_add_func("/adapt/decide/compressor-bound-fastest", test_decide_compressor_bound);
    g_test_add_func("/adapt/decide/random-raw-slowed", test_decide_random_raw_slowed);
    g_test_add_func("/adapt/recorded/throttle-600", test_recorded_throttle_600);
    g_test_add_func("/adapt/recorded/throttle-600-sink", test_recorded_throttle_600_sink);
    g_test_add_func("/adapt/recorded/throttle-600-start", test_recorded_throttle_600_start);
    g_test_add_func("/adapt/stats-text", test_stats_text);
    return g_test_run();
}
