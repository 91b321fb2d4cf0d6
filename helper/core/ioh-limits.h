/* ioh-limits.h - the bounds the helper accepts, known to every part that calls it
 *
 * The helper's option parser refuses values outside these bounds; libwrap and qemu-glue
 * clamp what they pass so that a caller's value never makes the helper refuse to run.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define IOH_KiB ((guint64)1024)
#define IOH_MiB (1024 * IOH_KiB)
#define IOH_GiB (1024 * IOH_MiB)

/* --status-interval=MS: how often progress lines are written. */
#define IOH_STATUS_INTERVAL_MIN_MS 10
#define IOH_STATUS_INTERVAL_MAX_MS 3600000
#define IOH_STATUS_INTERVAL_DEFAULT_MS 1000

/* --pipe-size=SIZE (the kernel caps it further at /proc/sys/fs/pipe-max-size). */
#define IOH_PIPE_SIZE_MIN (4 * IOH_KiB)
#define IOH_PIPE_SIZE_MAX IOH_GiB

/* --buffer-size=SIZE: bytes per read and write. */
#define IOH_BUFFER_SIZE_MIN (4 * IOH_KiB)
#define IOH_BUFFER_SIZE_MAX (256 * IOH_MiB)

/* --ring=N: buffers in flight. */
#define IOH_RING_MIN 1
#define IOH_RING_MAX 64

/* --fadvise-window=SIZE: the write-back and drop granule of --fadvise. */
#define IOH_FADVISE_WINDOW_MIN IOH_MiB
#define IOH_FADVISE_WINDOW_MAX IOH_GiB

/* --offset=SIZE and --length=SIZE: what off_t can address. */
#define IOH_OFFSET_MAX ((guint64)G_MAXINT64)
#define IOH_LENGTH_MAX ((guint64)G_MAXINT64)

/* --compress=zstd:LEVEL: zstd's fast levels down to -7 and its normal ones up to 19 (the
 * "ultra" levels need a window too large for a save); the default by measurement
 * (docs/benchmarks.md). --threads=N: zstd's worker threads. */
#define IOH_ZSTD_LEVEL_MIN (-7)
#define IOH_ZSTD_LEVEL_MAX 19
#define IOH_ZSTD_LEVEL_DEFAULT 1
/* --compress=auto: raw frames or a level up to this one, per window (ioh-zstd-adapt.h);
 * a qemu-iohelper image header records it as the level, with "adaptive". */
#define IOH_ZSTD_AUTO_LEVEL_MAX 3
#define IOH_THREADS_MIN 1
#define IOH_THREADS_MAX 64

/* The status interval the helper gets for a caller's @ms: 0 means the default, and
 * anything else is clamped into the bounds above. */
static inline guint
ioh_limits_status_interval(guint ms)
{
    return ms == 0 ? IOH_STATUS_INTERVAL_DEFAULT_MS
                   : CLAMP(ms, IOH_STATUS_INTERVAL_MIN_MS, IOH_STATUS_INTERVAL_MAX_MS);
}

G_END_DECLS
