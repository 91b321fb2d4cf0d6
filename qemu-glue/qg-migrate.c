/* qg-migrate.c - what the save and the restore share: the error domain, libwrap's flags,
 * the pipe QEMU gets */
#include "qg-migrate-private.h"

#include <errno.h>
#include <fcntl.h>

#include "ioh-error.h"
#include "ioh-pipe.h"

G_DEFINE_QUARK(qg-migrate-error-quark, qg_migrate_error)

IohWrapFlags
qg_mig_wrap_flags(IohCacheMode cache)
{
    /* Always a helper: the relay computes the image's checksum between QEMU's pipe and
     * the helper's (docs/qemu-glue.md, "Always through the helper"). */
    IohWrapFlags f = IOH_WRAP_POLLABLE;

    if (cache == IOH_CACHE_DIRECT) {
        f |= IOH_WRAP_DIRECT;
    } else if (cache == IOH_CACHE_FADVISE) {
        f |= IOH_WRAP_FADVISE;
    }
    g_debug("cache mode %s: libwrap flags 0x%x (a helper, always)",
            ioh_cache_mode_to_string(cache), (unsigned)f);
    return f;
}

gboolean
qg_mig_make_pipe(int fds[2], GError **error)
{
    if (!ioh_pipe_open(fds, 0, IOH_PIPE_DEFAULT_SIZE, error)) {
        return FALSE;
    }
    g_debug("QEMU's pipe: %d bytes (asked %d, pipe-max-size %u)",
            fcntl(fds[1], F_GETPIPE_SZ), IOH_PIPE_DEFAULT_SIZE, ioh_pipe_max_size());
    return TRUE;
}

int
qg_mig_dup(int fd, GError **error)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);

    if (copy < 0) {
        ioh_error_set_errno(error, errno, "dup", NULL);
    }
    return copy;
}

void
qg_mig_job_init(QgJob *job, const char *what, QgQmp *qmp, const char *path,
                const QgMigrateOptions *opts)
{
    *job = (QgJob){ .qmp = qmp, .path = path, .opts = opts };
    job->stats.downtime_ms = -1;
    job->w = (QgWatch){ .what = what, .path = path, .qmp = qmp, .opts = opts };
}
