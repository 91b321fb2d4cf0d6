/* ioh-cache-policy.c - what a copy does with the page cache behind the head
 *
 * - write-behind (buffered save): start write-back of each full window as soon as it is
 *   written, without waiting and without dropping it (the pages stay cached: that is the
 *   buffered mode). The kernel would wait for dirty_background_ratio (gigabytes here) and
 *   leave it all to the final fdatasync; started early, the disk writes while the pipe is
 *   read (measured half as fast again; waiting for the window before, as --fadvise does,
 *   measured slower: docs/benchmarks.md, "Engine A/Bs: Cache policy").
 * - drop-behind (--fadvise): a save starts write-back of each full window as soon as it
 *   is written, and waits for and drops the window before it, so the page cache holds
 *   about two windows of the image whatever its size; a restore drops what has been read,
 *   a window behind the head. Saves running at once share the page cache: each marks
 *   itself in the budget's directory (ioh-budget.h) and, every 100 ms, divides its window
 *   (--fadvise-window) by how many marks live, down to 2 MiB, so that many saves hold
 *   about as much as one (benchmarks/results/evacuate.md).
 */
#include "ioh-layer.h"
#include "ioh-error.h"

#include <errno.h>
#include <fcntl.h>

/* How often a --fadvise save counts the saves running at once. */
#define IOH_CACHE_LOOK_US (100 * 1000)
/* The smallest window concurrent saves shrink theirs to. */
#define IOH_CACHE_MIN_WINDOW (2 * 1024 * 1024)

/* A --fadvise save's window: --fadvise-window divided by the saves running at once. */
static guint64
save_window(IohCopy *c)
{
    guint64 full = c->opts->fadvise_window;
    gint64 now = g_get_monotonic_time();
    guint64 win;
    guint n;

    if (c->cache.window && now < c->cache.next_look_us) {
        return c->cache.window;
    }
    n = ioh_budget_fadvise_saves(NULL, c->cache.window == 0);
    c->cache.next_look_us = now + IOH_CACHE_LOOK_US;
    win = MAX(IOH_ALIGN_DOWN(full / n, 4096), MIN(full, IOH_CACHE_MIN_WINDOW));
    if (win != c->cache.window) {
        g_debug("fadvise: drop-behind window %" G_GUINT64_FORMAT " bytes (%u saves at once)",
                win, n);
    }
    c->cache.window = win;
    return win;
}

static gboolean
start_writeback(IohCopy *c, guint64 len, GError **error)
{
    c->stats->cache_calls++;
    if (sync_file_range(c->dst->fd, (off_t)(c->dst_start + c->cache.started), (off_t)len,
                        SYNC_FILE_RANGE_WRITE) < 0) {
        return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
    }
    c->cache.started += len;
    return TRUE;
}

/* Waits for the write-back of everything started a window before, and drops it. */
static gboolean
drop_window_behind(IohCopy *c, guint64 win, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    guint64 dlen = c->cache.started - win - c->cache.dropped;
    off_t off = (off_t)(c->dst_start + c->cache.dropped);
    guint64 again = MIN(c->cache.dropped, win);

    c->stats->cache_calls += 2;    /* and the fadvise below */
    if (sync_file_range(c->dst->fd, off, (off_t)dlen, SYNC_FILE_RANGE_WAIT_BEFORE |
                        SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
        return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
    }
    c->stats->sync_us += g_get_monotonic_time() - t0;
    /* and the window dropped before once more: a page still in another CPU's LRU batch
     * when it was dropped stayed cached (fadvise drains only this CPU's batch). */
    posix_fadvise(c->dst->fd, off - (off_t)again, (off_t)(dlen + again), POSIX_FADV_DONTNEED);
    c->cache.dropped += dlen;
    c->stats->synced = c->cache.dropped;
    return TRUE;
}

/* --fadvise save, after each chunk (@final: once more at the end, before fdatasync). */
static gboolean
drop_behind_write(IohCopy *c, gboolean final, GError **error)
{
    guint64 win = save_window(c);
    guint64 done = c->out;

    while (done - c->cache.started >= win || (final && done > c->cache.started)) {
        if (!start_writeback(c, MIN(win, done - c->cache.started), error)) {
            return FALSE;
        }
        if (final) {
            break;
        }
        if (c->cache.started - c->cache.dropped > win && !drop_window_behind(c, win, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* --fadvise restore: drop what has been read, a window behind the head. Pages a splice
 * put in the pipe stay held until the reader takes them (c->cache.held bytes at most), and
 * a held page cannot be dropped (trying costs an lru_add_drain_all on every CPU): only
 * what lies behind them is dropped, the rest at the end. */
static void
drop_behind_read(IohCopy *c, gboolean final)
{
    guint64 win = c->opts->fadvise_window;
    guint64 done = final ? c->in : c->in - MIN(c->in, c->cache.held);

    if (done - c->cache.dropped >= win || (final && done > c->cache.dropped)) {
        c->stats->cache_calls++;
        posix_fadvise(c->src->fd, (off_t)(c->src_start + c->cache.dropped),
                      (off_t)(done - c->cache.dropped), POSIX_FADV_DONTNEED);
        c->cache.dropped = done;
    }
}

/* Buffered save: start write-back of each full window, never wait. */
static gboolean
write_behind(IohCopy *c, GError **error)
{
    guint64 win = MAX(c->opts->fadvise_window, 1);

    while (!c->cache.no_writeback && c->out - c->cache.started >= win) {
        c->stats->cache_calls++;
        if (sync_file_range(c->dst->fd, (off_t)(c->dst_start + c->cache.started), (off_t)win,
                            SYNC_FILE_RANGE_WRITE) < 0) {
            if (errno == ESPIPE || errno == EINVAL || errno == ENOSYS) {
                c->cache.no_writeback = TRUE;    /* not for this file: leave it to fdatasync */
                return TRUE;
            }
            return ioh_error_set_errno(error, errno, "sync_file_range", c->dst->name);
        }
        c->cache.started += win;
    }
    return TRUE;
}

gboolean
ioh_cache_after_chunk(IohCopy *c, gboolean write_behind_on, GError **error)
{
    if (c->opts->mode == IOH_CACHE_FADVISE) {
        if (ioh_end_is_storage(c->dst) && !drop_behind_write(c, FALSE, error)) {
            return FALSE;
        }
        if (ioh_end_is_storage(c->src)) {
            drop_behind_read(c, FALSE);
        }
        return TRUE;
    }
    if (write_behind_on && ioh_end_is_storage(c->dst)) {
        return write_behind(c, error);
    }
    return TRUE;
}

/* The file source's finish: the rest of a --fadvise restore is dropped. */
void
ioh_cache_finish_read(IohCopy *c)
{
    if (c->opts->mode == IOH_CACHE_FADVISE) {
        drop_behind_read(c, TRUE);
    }
}

/* The file sink's finish, before fdatasync: the last window's write-back is started. */
gboolean
ioh_cache_finish_write(IohCopy *c, GError **error)
{
    return c->opts->mode != IOH_CACHE_FADVISE || drop_behind_write(c, TRUE, error);
}

/* The file sink's finish, after fdatasync: a --fadvise save leaves nothing cached. */
void
ioh_cache_drop_written(IohCopy *c)
{
    if (c->opts->mode == IOH_CACHE_FADVISE) {
        c->stats->cache_calls++;
        posix_fadvise(c->dst->fd, (off_t)c->dst_start, (off_t)c->out,
                      POSIX_FADV_DONTNEED);
    }
    if (c->cache.window) {
        ioh_budget_fadvise_leave(NULL);
        c->cache.window = 0;
    }
}
