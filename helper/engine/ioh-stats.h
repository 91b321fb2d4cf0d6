/* ioh-stats.h - what a copy did, and its one-line and JSON summaries */
#pragma once

#include <glib.h>

#include "ioh-mem-account.h"
#include "ioh-zstd-adapt.h"

G_BEGIN_DECLS

typedef struct {
    guint64 bytes;          /* bytes of the stream (a save's input, a restore's output) */
    guint64 stored;         /* bytes written to / read from the storage side: the same as
                             * bytes unless a filter (de)compresses the stream */
    guint64 synced;         /* save: stored bytes that have left the page cache (O_DIRECT
                             * written, or fadvise write-back waited for); they are durable
                             * only after the final fdatasync, when synced == stored */
    guint64 reads;          /* read-side system calls (read, splice) */
    guint64 writes;         /* write-side system calls (write, splice) */
    guint64 splices;        /* splice calls, counted in reads and writes too: each moves
                             * bytes from one end to the other without a copy through the
                             * helper (ioh-strategy-splice.c) */
    guint64 cache_calls;    /* sync_file_range and posix_fadvise calls (the cache policy) */
    gint64 start_us;        /* g_get_monotonic_time() at the start */
    gint64 end_us;          /* ... and at the end (0 while running) */
    gint64 sync_us;         /* time spent in fdatasync and sync_file_range waits */
    const char *mode;       /* "buffered", "direct" or "fadvise" */
    guint64 buffered;       /* "direct": the bytes that went through the page cache after
                             * O_DIRECT was cleared for an unaligned rest (0: none) */
    const char *direction;  /* "save", "restore" or "copy" */
    const char *checksum_algorithm;  /* "xxh3" when a checksum of the stream was computed,
                                      * else NULL (a static string) */
    guint64 checksum;       /* the stream's checksum, meaningful when the algorithm is set */
    gint64 cpu_us;          /* CPU time of the process during the copy (user + system,
                             * every thread) */
    const char *compression; /* "zstd" when a filter (de)compressed the stream, else NULL */
    gboolean has_level;     /* a compressing save: compression_level is its level (a
                             * restore cannot know the level the image was made with) */
    int compression_level;
    IohAdaptStats adapt;    /* --compress=auto: what each window was stored with, and why
                             * (compression_level is then the highest level used) */
    gint64 compress_cpu_us; /* CPU time spent (de)compressing, every thread */
    const char *encryption; /* "age" when a filter encrypted or decrypted the stream */
    guint encryption_recipients; /* its X25519 recipients (a save's, an image's); no key */
    gboolean has_budget;    /* a --memory-budget applied: budget is its size */
    guint64 budget;
    guint n_memory;         /* the layers that asked the memory account, in order: what
                             * each got and whether it was scaled down (ioh-mem-account.h) */
    IohMemLayer memory[IOH_MEM_LAYERS_MAX];
    char io_uring[80];      /* a --direct save from a pipe: "used..." or why not (a
                             * refusal of the kernel, IOHELPER_IO_URING=off); else "" */
    gboolean writes_behind; /* a filter's output written by a thread of its own while it
                             * made the next (ioh-filter-behind.h) */
    char nbd[256];          /* an NBD end: its connections and requests and why
                             * (ioh-nbd-adapt.h: "1 connection, 8 requests each
                             * (adaptive: ...)"), else "" */
    guint nbd_connections;  /* ... at the end of the copy */
    guint nbd_requests;     /* ... in flight per connection */
    gboolean nbd_adaptive;  /* ... chosen by measuring (no --connections/--requests) */
    guint nbd_windows;      /* ... windows measured (ioh-nbd-adapt.h: the first a warm-up) */
    guint nbd_most_connections; /* ... the most open at once (a trial's included) */
} IohStats;

/* The checksum as 16 lower-case hex digits (newly allocated); NULL when none was computed. */
char *ioh_stats_checksum_hex(const IohStats *stats);

/* stored / bytes (1.0 for an empty stream). */
double ioh_stats_ratio(const IohStats *stats);

/* Seconds since the start (until end_us once set). */
double ioh_stats_seconds(const IohStats *stats);

/* Every I/O system call of the copy, each once: reads + writes - splices + cache_calls. */
guint64 ioh_stats_syscalls(const IohStats *stats);

/* "total: 2147483648 bytes (2.00 GiB), 1.23 s, 1665.0 MiB/s, 2048 reads, 2048 writes,
 *  0 splices, 512 syscalls, sync 0.12 s, direct save" */
char *ioh_stats_format_text(const IohStats *stats);

/* The same as a one-line JSON object. */
char *ioh_stats_format_json(const IohStats *stats);

G_END_DECLS
