/* qg-migrate.c - what the save and the restore share: libwrap's flags, the helper's
 * checksum */
#include "qg-migrate-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ioh-error.h"
#include "ioh-number.h"
#include "ioh-pipe.h"

IohWrapFlags
qg_mig_wrap_flags(IohCacheMode cache)
{
    /* Always a helper: it computes the image's checksum as the stream passes, and QEMU
     * gets its pipe (docs/qemu-glue.md, "One hop"). */
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
qg_mig_helper_checksum(IohWrap *wrap, guint64 *ret_sum, GError **error)
{
    const char *hex = ioh_wrap_get_checksum(wrap);

    if (!hex || strlen(hex) != 16 ||
        !ioh_number_unsigned(hex, 16, 0, G_MAXUINT64, ret_sum)) {
        return ioh_error_set(error, EPROTO, NULL, NULL,
                             "the helper reported no xxh3 checksum (got '%s')",
                             hex ? hex : "none");
    }
    return TRUE;
}

int
qg_mig_dup(int fd, GError **error)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);

    if (copy < 0) {
        ioh_error_set_errno(error, errno, "dup", NULL);
        return -1;
    }
    g_debug("QEMU's pipe: libwrap's own, straight to the helper, %d bytes (pipe-max-size %u)",
            fcntl(copy, F_GETPIPE_SZ), ioh_pipe_max_size());
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
