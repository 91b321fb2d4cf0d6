/* qg-restore-probe.c - a multi-channel image's regions as their helpers deliver them,
 * before QEMU is asked anything (prefix qg_probe_)
 *
 * A single-stream restore hands QEMU the helper's pipe only after the helper delivered
 * its first bytes (qg_restore_wait_start()): a wrong identity, O_DIRECT refused, a
 * corrupt first frame leave QEMU waiting for another try. A multi-channel restore must
 * set QEMU up (multifd, migrate-incoming) before its helpers can feed it, so what its
 * helpers would find at their start is found first, each region through a helper of
 * its own into a pipe, started and watched as a single stream's: the main stream of an
 * encrypted or compressed image or of one on a server (the identity opens region 0's
 * age header, the first chunk authenticates, the first zstd frame decodes), and each
 * channel whose first bytes cannot be read where they are stored (encrypted,
 * compressed, or on a server): its first 64 bytes, decrypted and
 * decompressed, are checked as a raw region's are in a file (channel i's init packet,
 * the index's UUID). Each probe reads up to the first chunk or frame; its helper is
 * then stopped (docs/channels.md).
 */
#include "qg-migrate-private.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"

/* The stored bytes a probe reads of an encrypted or compressed region: age's header and
 * first chunk, zstd's first block (at most 128 KiB), in one request of an NBD server's
 * default size (a raw region's probe reads its first 64 bytes). */
#define QG_PROBE_PREFIX (256 * 1024)

typedef struct {
    const QgImageInfo *info;
    const char *uri;
    int fd;
    const char *path;
    QgQmp *qmp;
    const QgMigrateOptions *opts;
} QgProbe;

/* Up to @len bytes from the helper's pipe @fd: fewer only at its end (the stream is
 * shorter), or -1 with @error after @timeout_s (0: no limit) without a byte. */
static gssize
qg_probe_read(int fd, guint8 *buf, gsize len, guint timeout_s, const char *path,
              GError **error)
{
    gsize got = 0;

    while (got < len) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int rc = poll(&p, 1, timeout_s ? (int)MIN(timeout_s, 86400) * 1000 : -1);
        gssize n = rc > 0 ? read(fd, buf + got, len - got) : -1;

        if (rc == 0) {
            ioh_error_set(error, ETIMEDOUT, NULL, NULL, "restore failed: the helper "
                          "delivered no byte of %s in %u s", path, timeout_s);
            return -1;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n < 0) {
            ioh_error_set_errno(error, errno, "read", path);
            return -1;
        }
        if (n == 0) {
            break;
        }
        got += (gsize)n;
    }
    return (gssize)got;
}

/* The helper of connection @slot (0 the main stream, i + 1 channel i) into a pipe of
 * ours (*@ret_pipe), as the restore would start it. */
static IohWrap *
qg_probe_spawn(const QgProbe *p, guint slot, int *ret_pipe, GError **error)
{
    IohWrapParams params = qg_mfd_restore_params(p->info, slot);
    gboolean raw = !p->info->encryption && !p->info->compression;
    g_autoptr(IohWrapOptions) o = qg_mfd_restore_options(p->info, p->opts, slot, p->path,
                                                         error);
    int fd = !o || p->uri ? -1 : qg_mfd_reopen(p->fd, FALSE, p->path, error);
    IohWrap *wrap = NULL;

    if (!o || (!p->uri && fd < 0)) {
        return NULL;
    }
    /* Only the prefix that holds the stream's first 64 bytes: the helper has read all of
     * it (one request) before it delivers a byte, so no read of a server is in flight
     * when it is stopped (nbdkit 1.32 aborts on a client that leaves mid-request: its
     * assertion `sock >= 0` in raw_send_socket). Its verdict on the cut is ignored. */
    params.length = MIN(params.length, raw ? QG_CHANNELS_INIT_SIZE : QG_PROBE_PREFIX);
    wrap = p->uri ? ioh_wrap_new_uri(p->uri, FALSE, &fd, &params, o, error)
                  : ioh_wrap_new_with_options(&fd, p->path,
                                              qg_mig_wrap_flags(p->opts->cache), &params,
                                              o, error);
    if (!wrap) {
        ioh_fd_clear(&fd);
        return NULL;
    }
    /* the wrap's read end is closed when its finish starts: ours is a copy */
    *ret_pipe = qg_mig_dup(fd, error);
    if (*ret_pipe < 0) {
        ioh_wrap_free(wrap);   /* kills the helper */
        return NULL;
    }
    return wrap;
}

/* Connection @slot's first bytes (at most QG_CHANNELS_INIT_SIZE) into @buf, as its
 * helper delivers them; the helper then stopped. -1 with @error when it failed first. */
static gssize
qg_probe_one(const QgProbe *p, guint slot, guint8 *buf, GError **error)
{
    QgWatch w = { .what = "restore", .path = p->path, .qmp = p->qmp, .opts = p->opts };
    int pipe_fd = -1;
    gssize n = -1;

    w.wrap = qg_probe_spawn(p, slot, &pipe_fd, error);
    if (!w.wrap) {
        return -1;
    }
    w.total = slot ? p->info->regions[slot - 1].length : p->info->stream_length;
    w.start = g_get_monotonic_time();
    qg_mig_helper_start(&w);
    if (qg_restore_wait_start(&w, pipe_fd, error)) {
        n = qg_probe_read(pipe_fd, buf, QG_CHANNELS_INIT_SIZE, p->opts->stall_timeout_s,
                          p->path, error);
    }
    ioh_fd_clear(&pipe_fd);
    qg_mig_watch_clear(&w);   /* kills the helper, waits for its exit */
    ioh_wrap_free(w.wrap);
    return n;
}

gboolean
qg_probe_regions(const QgImageInfo *info, const char *uri, int fd, const char *path,
                 QgQmp *qmp, const QgMigrateOptions *opts, GError **error)
{
    const QgProbe p = { info, uri, fd, path, qmp, opts };
    gboolean channels = info->encryption || info->compression || uri;
    gint64 t0 = g_get_monotonic_time();

    /* the main stream too: its first frame or chunk failing after QEMU was set up shut
     * QEMU down, where a single stream's leaves it waiting (qg_restore_load()) */
    for (guint slot = 0; slot <= info->channels && channels; slot++) {
        guint8 buf[QG_CHANNELS_INIT_SIZE] = { 0 };
        gssize n = qg_probe_one(&p, slot, buf, error);

        if (n < 0 || (slot && !qg_channels_check_init(buf, (gsize)n, info, slot - 1, path,
                                                       error))) {
            return FALSE;
        }
    }
    g_debug("regions of %s probed before QEMU is set up: %.1f ms", path,
            (g_get_monotonic_time() - t0) / 1000.0);
    return TRUE;
}
