/* ioh-zstd-adapt.h - --compress=auto: which of raw frames and a few zstd levels the next
 * window of a save is stored with, from the rates measured as the save goes
 *
 * The zstd filter measures each window (IOH_ADAPT_WINDOW bytes of the stream): the bytes
 * in and out, the time its thread spent writing the sink, blocked in the compressor and
 * waiting for the source, the CPU time of the compressor's threads, and (stored raw) the
 * probe's level-1 samples. ioh_adapt_account() turns a window into rates, one estimate per
 * choice; ioh_adapt_decide() (pure: rates in, choice out) picks the next window's choice;
 * ioh_adapt_next() does both. The output stays standard zstd frames whatever is chosen.
 */
#pragma once

#include <glib.h>

#include "ioh-limits.h"

G_BEGIN_DECLS

#define IOH_ADAPT_WINDOW ((guint64)8 * 1024 * 1024)
#define IOH_ADAPT_CHOICES 6      /* raw, then the levels of ioh_adapt_level() */
#define IOH_ADAPT_RAW 0
#define IOH_ADAPT_GOT_N 8        /* windows a choice's end-to-end rate is the median of */
#define IOH_ADAPT_LEVEL_MAX IOH_ZSTD_AUTO_LEVEL_MAX  /* the highest level auto uses (its
                                                     * memory is claimed) */

/* Why a choice was made (the bottleneck the rates show for it). */
typedef enum {
    IOH_ADAPT_WHY_START,          /* the first window: raw, measuring */
    IOH_ADAPT_WHY_SINK,           /* the sink is the bottleneck: compressing drains faster */
    IOH_ADAPT_WHY_SOURCE,         /* the source is: this level keeps up with it */
    IOH_ADAPT_WHY_COMPRESSOR,     /* no level keeps up with raw's speed: raw */
    IOH_ADAPT_WHY_INCOMPRESSIBLE, /* no level shrinks the data: raw */
    IOH_ADAPT_WHY_TRY,            /* predicted near raw, not measured lately: one window */
    IOH_ADAPT_WHY_N,
} IohAdaptWhy;

/* What the next choice is decided from. Rates in bytes per second; 0: unknown (no bound). */
typedef struct {
    double source;                      /* stream bytes the source gives */
    double sink;                        /* stored bytes the sink takes */
    double comp[IOH_ADAPT_CHOICES];     /* stream bytes each choice's compressor takes
                                         * (raw: 0, its checksums cost next to nothing) */
    double ratio[IOH_ADAPT_CHOICES];    /* stored / stream bytes of each choice */
    double got[IOH_ADAPT_CHOICES];      /* stream bytes each choice's windows went at lately,
                                         * end to end (0: not measured lately): where known,
                                         * what it is predicted at */
    double waited[IOH_ADAPT_CHOICES];   /* the share of each choice's windows spent
                                         * waiting for the sink, lately (EWMA) */
} IohAdaptRates;

/* One window as the filter measured it (seconds of wall time unless said). */
typedef struct {
    guint64 in;             /* stream bytes */
    guint64 out;            /* stored bytes handed to the sink */
    guint64 consumed;       /* of a compressed choice: stream bytes libzstd compressed ... */
    guint64 produced;       /* ... and what they came to (ZSTD_getFrameProgression) */
    double wall;            /* the window, end to end */
    double sink;            /* in the sink's writes */
    double blocked;         /* in libzstd, waiting for its workers */
    double idle;            /* between chunks: waiting for the source */
    double comp_cpu;        /* CPU seconds of the threads but the filter's: the
                             * compressor's workers, and the reader's share */
    double probe_ratio;     /* raw: level 1's ratio on the window's samples (0: none) */
    double probe_speed;     /* ... and its speed on one thread, stream bytes/s */
    gboolean behind;        /* the sink writes behind the filter: @sink is the time the
                             * filter waited for a free buffer, not the writes' own */
} IohAdaptWindow;

/* What --stats says: stream bytes stored per choice, and the reason given most for it. */
typedef struct {
    gboolean on;
    guint64 bytes[IOH_ADAPT_CHOICES];
    IohAdaptWhy why[IOH_ADAPT_CHOICES];
    guint64 windows;        /* decisions made */
    guint64 switches;       /* ... that changed the choice */
} IohAdaptStats;

typedef struct {
    double bytes;
    double secs;
} IohAdaptSum;              /* decaying sums: a rate over the last windows */

typedef struct {
    IohAdaptRates est;      /* the rates, as estimated so far */
    IohAdaptSum sink;       /* ... the sink's and the source's from these */
    IohAdaptSum source;
    guint64 age[IOH_ADAPT_CHOICES];   /* windows since each choice was measured (0: never) */
    double got[IOH_ADAPT_CHOICES][IOH_ADAPT_GOT_N];   /* each choice's last windows'
                                                      * rates (stream bytes/s) ... */
    guint got_n[IOH_ADAPT_CHOICES];       /* ... how many were measured (a ring) ... */
    guint64 got_age[IOH_ADAPT_CHOICES];   /* ... this many windows ago (0: never) */
    guint64 run;            /* windows the current choice has run since it was taken */
    double workers;         /* cores the compressor's workers can have */
    double other_cpu;       /* CPU seconds per stream byte of the other threads (the
                             * reader), measured raw: not the compressor's */
    int choice;             /* of the window being measured */
    int last;               /* of the window measured last */
    IohAdaptWhy why;
    guint64 why_count[IOH_ADAPT_CHOICES][IOH_ADAPT_WHY_N];
    IohAdaptStats stats;
} IohAdapt;

/* The zstd level of choice @k (1 .. IOH_ADAPT_CHOICES - 1). */
int ioh_adapt_level(int k);

/* The choice to store the next window with, from @r alone: the one that stores least
 * among those predicted within 3% of the fastest (itself never slower than raw); the
 * reason in @ret_why. */
int ioh_adapt_decide(const IohAdaptRates *r, IohAdaptWhy *ret_why);

/* A new state: the first window raw; @workers the compressor's threads, @cores the
 * machine's (one of them is left to the threads that read and write). */
void ioh_adapt_init(IohAdapt *a, guint workers, guint cores);

/* Folds window @w, stored with a->choice, into the estimates. */
void ioh_adapt_account(IohAdapt *a, const IohAdaptWindow *w);

/* Accounts @w and decides: the next window's choice (also in a->choice). */
int ioh_adapt_next(IohAdapt *a, const IohAdaptWindow *w);

/* The stats at the end (a->stats with each choice's most given reason). */
void ioh_adapt_finish(IohAdapt *a);

/* ", auto: raw 812.0 MiB (no level keeps up), level 1 200.0 MiB (sink-bound)" or "". */
char *ioh_adapt_stats_text(const IohAdaptStats *s);

/* "compression_auto": {"choices": {"raw": {"bytes": N, "why": "sink-bound"}, "1": ...},
 * "windows": N, "switches": N} into @builder (a JsonBuilder, inside an object). */
void ioh_adapt_stats_json(gpointer builder, const IohAdaptStats *s);

/* The choice's name ("raw", "-5", "1") and a reason's ("sink", ...), static strings. */
const char *ioh_adapt_choice_name(int k);
const char *ioh_adapt_why_name(IohAdaptWhy why);

G_END_DECLS
