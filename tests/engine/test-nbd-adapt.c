/* test-nbd-adapt.c - the NBD ends' choice of connections and requests (ioh-nbd-adapt.h),
 * a pure function, fed the rates of model servers window by window: an unthrottled one
 * (the rate does not depend on the shape), one limited per connection (nbdkit's rate
 * filter), one whose queue pays up to a depth, one that more connections slow down; the
 * explicit options, a server without multi-conn, a connection that cannot be opened, and
 * the hysteresis once settled, and the first window, a warm-up, not taken for a rate. */
#include <glib.h>
#include <string.h>

#include "ioh-nbd-adapt.h"

/* A model server: the rate (bytes/s) of a window run at @s. */
typedef double (*ServerRate)(IohNbdShape s);

static const IohNbdShape start = { 1, IOH_NBD_ADAPT_START_REQUESTS };
static const IohNbdShape most = { IOH_NBD_ADAPT_MAX_CONNECTIONS, IOH_NBD_ADAPT_MAX_REQUESTS };

/* The share of each window the copy waited for the server: most of it, unless a test
 * models a copy that the pipe or the CPU limits. */
static double model_waited = 0.95;

/* Runs @windows windows against @rate from @a's start; returns how many changed shape. */
static guint
run(IohNbdAdapt *a, ServerRate rate, guint windows)
{
    guint changes = 0;

    for (guint i = 0; i < windows; i++) {
        changes += ioh_nbd_adapt_window(a, rate(a->cur), model_waited);
        g_assert_cmpuint(a->cur.conns, >=, 1);
        g_assert_cmpuint(a->cur.conns, <=, a->max.conns);
        g_assert_cmpuint(a->cur.reqs, >=, 1);
        g_assert_cmpuint(a->cur.reqs, <=, a->max.reqs);
    }
    return changes;
}

static double
flat(IohNbdShape s)
{
    (void)s;
    return 1000e6;
}

static double
per_conn(IohNbdShape s)
{
    return 12.5e6 * s.conns;    /* connection-rate=100M, whatever the queue */
}

static double
queue_pays(IohNbdShape s)
{
    return 50e6 * MIN(s.reqs, 16) / (s.conns > 1 ? 1.05 : 1.0);
}

static double
conns_cost(IohNbdShape s)
{
    return 1000e6 / (1.0 + 0.2 * (s.conns - 1));
}

static void
assert_describes(const IohNbdAdapt *a, const char *part)
{
    g_autofree char *why = ioh_nbd_adapt_describe(a);

    g_test_message("%s", why);
    if (!strstr(why, part)) {
        g_error("\"%s\" does not say \"%s\"", why, part);
    }
}

static void
test_unthrottled(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    g_assert_false(ioh_nbd_adapt_is_fixed(&a));
    /* a warm-up window, then tries 16 requests, then 2 connections */
    g_assert_cmpuint(run(&a, flat, 4), ==, 3);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    g_assert_cmpuint(a.cur.conns, ==, 1);
    g_assert_cmpuint(a.cur.reqs, ==, IOH_NBD_ADAPT_START_REQUESTS);
    g_assert_cmpuint(run(&a, flat, 20), ==, 0);
    assert_describes(&a, "1 connection, 8 requests each (adaptive: 16 requests +0 %: did not "
                     "pay; 2 connections +0 %: did not pay)");
}

static void
test_per_connection_limit(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    /* a warm-up, 1 window at the start, 1 for 16 requests, 3 doublings of connections,
     * each paying in 2 windows */
    run(&a, per_conn, 9);
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
    g_assert_cmpuint(a.cur.reqs, ==, IOH_NBD_ADAPT_START_REQUESTS);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    g_assert_cmpuint(run(&a, per_conn, 20), ==, 0);
    assert_describes(&a, "8 connections, 8 requests each (adaptive: 16 requests +0 %: did "
                     "not pay; connections at the most)");
}

static void
test_queue_pays(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    run(&a, queue_pays, 10);
    g_assert_cmpuint(a.cur.reqs, ==, 16);
    g_assert_cmpuint(a.cur.conns, ==, 1);
    assert_describes(&a, "requests at the most; 2 connections -5 %: did not pay");
}

static void
test_connections_cost(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    run(&a, conns_cost, 10);
    g_assert_cmpuint(a.cur.conns, ==, 1);
    assert_describes(&a, "2 connections -17 %: did not pay");
}

/* The first window runs at a burst (a limiter's full bucket): not the baseline. */
static void
test_warm_up(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    g_assert_false(ioh_nbd_adapt_window(&a, 1.9 * per_conn(a.cur), 0.95));
    run(&a, per_conn, 8);
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
}

/* One window that pays by chance (a busy machine) is not enough: the next one at that
 * shape must pay too. */
static void
test_confirmed(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    run(&a, flat, 3);                               /* warm-up, baseline, 16 requests */
    g_assert_cmpuint(a.cur.conns, ==, 2);
    assert_describes(&a, "2 connections, 8 requests each (adaptive: 16 requests +0 %: did "
                     "not pay; more connections: not settled (a short copy); still trying "
                     "this against 1 x 8)");
    g_assert_false(ioh_nbd_adapt_window(&a, 1.4 * flat(a.cur), 0.95));    /* by chance */
    g_assert_true(ioh_nbd_adapt_window(&a, flat(a.cur), 0.95));
    g_assert_cmpuint(a.cur.conns, ==, 1);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    assert_describes(&a, "2 connections +20 %: did not pay");
}

/* A server limited in total on a busy machine (the windows of a save to nbdkit's rate
 * filter, rate=400M, two busy loops beside it): its threads starved in one window, the
 * bucket refilled then drained shows two windows at 2 connections 12-14 % over the
 * baseline. Not a gain a connection brings: back to one. */
static void
test_total_limit_busy(void)
{
    static const double mib_s[] = { 76.1, 45.6, 40.7, 52.1, 51.2, 47.0, 46.5 };
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(mib_s); i++) {
        ioh_nbd_adapt_window(&a, mib_s[i] * (1 << 20), 0.95);
    }
    g_assert_cmpuint(a.cur.conns, ==, 1);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    assert_describes(&a, "2 connections +14 %: did not pay");
}

/* A copy that waited little for the server (the pipe or the CPU limits: a save to a
 * local unthrottled server) tries no connection, though the model would pay for them. */
static void
test_not_waiting(void)
{
    IohNbdAdapt a;

    model_waited = 0.6;
    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    g_assert_cmpuint(run(&a, per_conn, 10), ==, 2);    /* 16 requests, and back */
    model_waited = 0.95;
    g_assert_cmpuint(a.cur.conns, ==, 1);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    assert_describes(&a, "more connections not tried: the copy waited for the server 60 % "
                     "of the time, the pipe or the CPU limits");
    /* a restore waits more: its own bar */
    model_waited = 0.92;
    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    a.waited_min = IOH_NBD_ADAPT_WAITED_MIN_READ;
    run(&a, per_conn, 10);
    g_assert_cmpuint(a.cur.conns, ==, 1);
    model_waited = 0.99;
    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    a.waited_min = IOH_NBD_ADAPT_WAITED_MIN_READ;
    run(&a, per_conn, 10);
    model_waited = 0.95;
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
}

/* A busy machine: the copy waits for the server over the bar in one window, under it in
 * the next (the other processes slowed the server): no connection is tried, where every
 * window over the bar (a server limiting each connection) grows them. */
static void
test_waited_once(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    for (guint i = 0; i < 10; i++) {
        ioh_nbd_adapt_window(&a, per_conn(a.cur), i % 2 ? 0.5 : 0.95);
    }
    g_assert_cmpuint(a.cur.conns, ==, 1);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    for (guint i = 0; i < 10; i++) {
        ioh_nbd_adapt_window(&a, per_conn(a.cur), 0.95);
    }
    g_assert_cmpuint(a.cur.conns, >, 1);
}

/* A producer starved at the start (a guest's stream starts slow, a busy host): the copy
 * does not wait for the server and leaves connections untried, at about the rate one
 * limited connection takes; once the copy waits window after window, they are tried, and
 * grow, though the rate did not move. */
static void
test_starved_then_waits(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    for (guint i = 0; i < 6; i++) {
        ioh_nbd_adapt_window(&a, 0.9 * per_conn(start), 0.1);
    }
    g_assert_cmpuint(a.cur.conns, ==, 1);
    assert_describes(&a, "more connections not tried");
    run(&a, per_conn, 12);
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
}

static void
test_fixed(void)
{
    IohNbdShape given = { 4, 16 };
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, given, given, TRUE, TRUE);
    g_assert_true(ioh_nbd_adapt_is_fixed(&a));
    g_assert_cmpuint(run(&a, per_conn, 20), ==, 0);
    g_assert_cmpuint(a.cur.conns, ==, 4);
    g_assert_cmpuint(a.cur.reqs, ==, 16);
    assert_describes(&a, "4 connections, 16 requests each (as given)");
}

/* --connections=2 alone: the queue adapts, the connections never move. */
static void
test_fixed_connections(void)
{
    IohNbdShape s = { 2, IOH_NBD_ADAPT_START_REQUESTS }, m = { 2, 16 };
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, s, m, TRUE, FALSE);
    run(&a, per_conn, 10);
    g_assert_cmpuint(a.cur.conns, ==, 2);
    assert_describes(&a, "connections fixed by --connections");
    ioh_nbd_adapt_init(&a, s, m, TRUE, FALSE);
    run(&a, queue_pays, 10);
    g_assert_cmpuint(a.cur.conns, ==, 2);
    g_assert_cmpuint(a.cur.reqs, ==, 16);
}

/* --requests=4 alone: the connections adapt, the queue never moves. */
static void
test_fixed_requests(void)
{
    IohNbdShape s = { 1, 4 }, m = { IOH_NBD_ADAPT_MAX_CONNECTIONS, 4 };
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, s, m, FALSE, TRUE);
    run(&a, per_conn, 10);
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
    g_assert_cmpuint(a.cur.reqs, ==, 4);
    assert_describes(&a, "requests fixed by --requests");
}

static void
test_no_multi_conn(void)
{
    IohNbdShape m = { 1, IOH_NBD_ADAPT_MAX_REQUESTS };
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, m, FALSE, FALSE);
    run(&a, per_conn, 10);
    g_assert_cmpuint(a.cur.conns, ==, 1);
    assert_describes(&a, "one connection: the server does not advertise multi-conn");
}

/* A further connection that cannot be opened: back to the best, settled. */
static void
test_refused(void)
{
    IohNbdAdapt a;

    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    run(&a, per_conn, 5);                       /* now asking 4 connections */
    g_assert_cmpuint(a.cur.conns, ==, 4);
    ioh_nbd_adapt_refused(&a);
    g_assert_cmpuint(a.cur.conns, ==, 2);
    g_assert_cmpuint(run(&a, per_conn, 10), ==, 0);
    assert_describes(&a, "a further connection failed to open");
}

static double slow_rate = 1000e6;

static double
changing(IohNbdShape s)
{
    return s.conns == 1 ? slow_rate : slow_rate * s.conns;
}

/* Settled, a few off windows change nothing; IOH_NBD_ADAPT_PATIENCE of them in a row (the
 * server now limits each connection) start a climb that finds more connections. */
static void
test_hysteresis(void)
{
    IohNbdAdapt a;

    slow_rate = 1000e6;
    ioh_nbd_adapt_init(&a, start, most, FALSE, FALSE);
    run(&a, flat, 4);
    g_assert_cmpint(a.phase, ==, IOH_NBD_ADAPT_SETTLED);
    for (guint i = 0; i + 1 < IOH_NBD_ADAPT_PATIENCE; i++) {
        g_assert_false(ioh_nbd_adapt_window(&a, 100e6, 0.95));
    }
    g_assert_false(ioh_nbd_adapt_window(&a, 1000e6, 0.95));      /* back: the count restarts */
    for (guint i = 0; i + 1 < IOH_NBD_ADAPT_PATIENCE; i++) {
        g_assert_false(ioh_nbd_adapt_window(&a, 100e6, 0.95));
    }
    g_assert_cmpuint(a.cur.conns, ==, 1);
    slow_rate = 100e6;
    run(&a, changing, 12);
    g_assert_cmpuint(a.climbs, ==, 1);
    g_assert_cmpuint(a.cur.conns, ==, IOH_NBD_ADAPT_MAX_CONNECTIONS);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nbd-adapt/unthrottled-stays-at-one", test_unthrottled);
    g_test_add_func("/nbd-adapt/per-connection-limit-grows", test_per_connection_limit);
    g_test_add_func("/nbd-adapt/queue-pays", test_queue_pays);
    g_test_add_func("/nbd-adapt/connections-cost-drop-back", test_connections_cost);
    g_test_add_func("/nbd-adapt/warm-up", test_warm_up);
    g_test_add_func("/nbd-adapt/one-lucky-window", test_confirmed);
    g_test_add_func("/nbd-adapt/total-limit-busy", test_total_limit_busy);
    g_test_add_func("/nbd-adapt/not-waiting-for-the-server", test_not_waiting);
    g_test_add_func("/nbd-adapt/waited-once", test_waited_once);
    g_test_add_func("/nbd-adapt/starved-then-waits", test_starved_then_waits);
    g_test_add_func("/nbd-adapt/fixed", test_fixed);
    g_test_add_func("/nbd-adapt/fixed-connections", test_fixed_connections);
    g_test_add_func("/nbd-adapt/fixed-requests", test_fixed_requests);
    g_test_add_func("/nbd-adapt/no-multi-conn", test_no_multi_conn);
    g_test_add_func("/nbd-adapt/refused", test_refused);
    g_test_add_func("/nbd-adapt/hysteresis", test_hysteresis);
    return g_test_run();
}
