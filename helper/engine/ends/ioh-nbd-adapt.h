/* ioh-nbd-adapt.h - how many NBD connections and requests pay: the decision, a pure
 * function of the throughput measured over windows of the copy (no I/O, no clock)
 *
 * A copy starts with one connection and a small queue (IOH_NBD_ADAPT_START_REQUESTS per
 * connection). Each window's rate is handed to ioh_nbd_adapt_window() (the first one is
 * only a warm-up, not a rate: the server's buffers and a limiter's burst): it doubles the
 * requests per connection while that pays, then the connections (only when the server
 * advertises multi-conn: max.conns > 1), and goes back to the best shape the first time a
 * step does not pay (a gain under IOH_NBD_ADAPT_GAIN, IOH_NBD_ADAPT_GAIN_CONNS for
 * connections). A step is kept only when two
 * windows in a row at it pay: on a busy machine one window of 150 ms can be 40 % off
 * either way. A second connection is tried only when the copy waited for the server
 * (IOH_NBD_ADAPT_WAITED_MIN), at once or later in the copy, when it comes to wait
 * (a producer starved at the start). Settled, it climbs again from
 * there only after the rate moved by IOH_NBD_ADAPT_MOVE or more for
 * IOH_NBD_ADAPT_PATIENCE windows in a row (hysteresis: one slow window, a machine's
 * hiccup, changes nothing). An explicit --connections or --requests fixes that
 * dimension (start == max). The caller applies a->cur after each call.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Requests per connection at the start, and at most while adapting (a request size of
 * 256 KiB: 2 MiB and 4 MiB per connection). On an unthrottled local server 8 and 16 are
 * within the noise of each other (benchmarks/results/nbd.md, the requests sweep). */
#define IOH_NBD_ADAPT_START_REQUESTS 8
#define IOH_NBD_ADAPT_MAX_REQUESTS 16
/* Connections at most while adapting (multi-conn servers only): a server that limits
 * each connection gets up to this many times one connection's rate. */
#define IOH_NBD_ADAPT_MAX_CONNECTIONS 8
/* A step pays when the window's rate beats the best by this much (a fraction). */
#define IOH_NBD_ADAPT_GAIN 0.10
/* ... a step of connections by this much: a server or a link limiting each connection
 * gives nearly twice the rate per doubling, while on a busy machine a server limited in
 * total showed two windows in a row 12-14 % over one connection's (a stall of its
 * threads refills nbdkit rate filter's bucket, drained in the next windows): such a gain
 * is not one a connection more brings, and each costs the server a thread. */
#define IOH_NBD_ADAPT_GAIN_CONNS 0.25
/* Settled: a rate this far from the best (a fraction, either way), ... */
#define IOH_NBD_ADAPT_MOVE 0.50
/* More connections are tried only when the copy's thread waited for the server this
 * much of the window (a fraction): else the pipe or the CPU is what limits, and a
 * connection more only costs (nbdkit file and memory saves on a unix socket waited
 * 24-64 %, a save to a server limiting each connection 91-99 %). */
#define IOH_NBD_ADAPT_WAITED_MIN 0.75
/* ... and on a restore, whose thread waits for the oldest read even from an unthrottled
 * local server (91-92 % there, 98-100 % limited per connection). */
#define IOH_NBD_ADAPT_WAITED_MIN_READ 0.95
/* ... in this many measured windows in a row: on a busy machine one window can wait
 * for a server that the other processes slowed (the server's CPU, not its limit: a
 * connection more then costs), where a server limiting each connection makes every
 * window wait. */
#define IOH_NBD_ADAPT_WAITED_WINDOWS 2
/* ... this many windows in a row, starts a new climb from the current shape. */
#define IOH_NBD_ADAPT_PATIENCE 4
/* A window: at least this many bytes and this long (the rate of a shorter one is noise
 * on a busy machine). */
#define IOH_NBD_ADAPT_WINDOW_BYTES (8 * 1024 * 1024)
#define IOH_NBD_ADAPT_WINDOW_US (150 * 1000)

typedef struct {
    guint conns;
    guint reqs;               /* in flight per connection */
} IohNbdShape;

typedef enum {
    IOH_NBD_ADAPT_REQS,       /* trying more requests per connection */
    IOH_NBD_ADAPT_CONNS,      /* trying more connections */
    IOH_NBD_ADAPT_SETTLED,
} IohNbdAdaptPhase;

/* Why a dimension stopped where it is (for --stats). */
typedef enum {
    IOH_NBD_WHY_UNTRIED,      /* not tried yet (a short copy) */
    IOH_NBD_WHY_FIXED,        /* given on the command line */
    IOH_NBD_WHY_MOST,         /* at the most (max) */
    IOH_NBD_WHY_NO_GAIN,      /* the next step did not pay: gain_pct */
    IOH_NBD_WHY_FAILED,       /* a further connection could not be opened */
    IOH_NBD_WHY_BUSY,         /* the copy did not wait for the server: waited_pct */
} IohNbdWhy;

typedef struct {
    IohNbdShape cur;          /* the shape to run the next window with */
    IohNbdShape best;         /* the best shape measured, and its rate (0: none yet) */
    double best_rate;
    IohNbdShape max;
    gboolean fixed_conns, fixed_reqs;
    IohNbdAdaptPhase phase;
    gboolean confirming;      /* the step paid in one window: the next one must agree */
    double trial_rate;        /* ... and that window's rate */
    guint off_windows;        /* settled: windows in a row away from best_rate */
    guint windows;            /* windows measured */
    guint climbs;             /* climbs started again after a move */
    IohNbdWhy why_reqs, why_conns;
    int gain_reqs_pct, gain_conns_pct;   /* the last step that did not pay, in % */
    double waited;            /* the last window's share of time waiting for the server */
    guint waited_windows;     /* measured windows in a row that waited waited_min or more */
    double waited_min;        /* IOH_NBD_ADAPT_WAITED_MIN, or _READ on a restore */
} IohNbdAdapt;

/* Starts at @start (an explicit dimension: start == max, fixed), climbing to @max.
 * a->waited_min is IOH_NBD_ADAPT_WAITED_MIN: a restore sets it to _READ. */
void ioh_nbd_adapt_init(IohNbdAdapt *a, IohNbdShape start, IohNbdShape max,
                        gboolean fixed_conns, gboolean fixed_reqs);

/* A window ran at a->cur at @rate (bytes/s), the copy's thread waiting for the server
 * @waited of it (0 to 1). TRUE when a->cur changed. */
gboolean ioh_nbd_adapt_window(IohNbdAdapt *a, double rate, double waited);

/* The caller could not reach a->cur (a further connection failed to open): back to the
 * best shape, settled; no more connections are tried. */
void ioh_nbd_adapt_refused(IohNbdAdapt *a);

/* TRUE when nothing can change (both dimensions fixed, or one connection and the
 * requests fixed): no window is worth measuring. */
gboolean ioh_nbd_adapt_is_fixed(const IohNbdAdapt *a);

/* "1 connection, 8 requests each (adaptive: 16 requests +2 %, 2 connections -1 %: did
 * not pay)": what it chose and why (newly allocated). */
char *ioh_nbd_adapt_describe(const IohNbdAdapt *a);

G_END_DECLS
