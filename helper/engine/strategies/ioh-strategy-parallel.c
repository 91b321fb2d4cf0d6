/* ioh-strategy-parallel.c - an O_DIRECT file or device read by several threads at once,
 * each reading one buffer at its own offset into the ring (ioh-ring.c); for a restore
 * into a pipe with no filter, first the parallel splice readers
 * (ioh-strategy-parallel-splice.c), the ring going on where the kernel refuses them
 *
 * The disk then has a queue: fio finds 1 MiB reads at queue depth 4 the fastest here
 * (docs/benchmarks.md, "The engine"). The readers take half the ring, so the pipe side
 * keeps the other half. Each reader has an fd of its own, opened anew on the same file
 * through /proc/self/fd, so each has its own position. Parallel O_DIRECT writes would not
 * help: extending writes hold ext4's inode lock for their duration, so a save coalesces
 * instead (ioh-ring.c).
 */
#include "ioh-layer.h"
#include "ioh-ring.h"
#include "ioh-strategy-parallel-splice.h"

#include <fcntl.h>
#include <unistd.h>

/* Opens up to @want readers of the source; fewer when /proc is missing or the file is not
 * ours to open again. Returns how many. */
static guint
open_readers(IohCopy *c, IohReader *rds, guint want)
{
    g_autofree char *self = g_strdup_printf("/proc/self/fd/%d", c->src->fd);
    guint n;

    for (n = 0; n < want; n++) {
        int fd = open(self, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
            break;
        }
        rds[n] = (IohReader){ .c = c, .fd = fd, .own = TRUE, .direct = TRUE };
    }
    return n;
}

/* The ring, from the first stream byte not yet delivered (its slots count from there). */
static gboolean
ring_from_here(IohCopy *c, IohReader *rds, guint n, GError **error)
{
    guint64 done = c->in;
    gboolean ok;

    c->src_start += done;
    ok = ioh_ring_run(c, rds, n, error);
    c->src_start -= done;
    return ok;
}

static gboolean
parallel_run(IohCopy *c, GError **error)
{
    IohReader rds[IOH_PSPLICE_MAX_READERS];
    gboolean fits = ioh_psplice_fits(c);
    guint n = open_readers(c, rds, fits ? CLAMP(c->nslots, 1, IOH_PSPLICE_MAX_READERS)
                                        : CLAMP(c->nslots / 2, 1, IOH_MAX_READERS));
    int ok = 0;

    if (n < 2) {
        g_debug("parallel readers: %u opened, one reader instead", n);
        for (guint i = 0; i < n; i++) {
            close(rds[i].fd);
        }
        return ioh_strategy_ring.run(c, error);
    }
    if (fits) {
        ok = ioh_psplice_run(c, rds, n, error);
    }
    if (ok == 0) {
        ok = ring_from_here(c, rds, MIN(n, IOH_MAX_READERS), error) ? 1 : -1;
    }
    for (guint i = 0; i < n; i++) {
        close(rds[i].fd);    /* read-only: nothing to lose */
    }
    if (ok > 0) {
        /* The source's own fd was not read: put its position where read() would have. */
        lseek(c->src->fd, (off_t)(c->src_start + c->in), SEEK_SET);
    }
    return ok > 0;
}

const IohStrategy ioh_strategy_parallel = {
    .name = "parallel",
    .run = parallel_run,
};
