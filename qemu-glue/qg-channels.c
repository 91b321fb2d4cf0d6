/* qg-channels.c - QEMU's multifd connections: listen, accept and tell apart; connect */
#include "qg-channels.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-error.h"
#include "ioh-fd.h"

#define QG_MULTIFD_MAGIC 0x11223344u
#define QG_MULTIFD_VERSION 1u
#define QG_POLL_SLICE_MS 100

QgChannels *
qg_channels_new(guint n, GError **error)
{
    g_autoptr(QgChannels) ch = g_new0(QgChannels, 1);

    ch->n = n;
    ch->listen_fd = -1;
    ch->fds = g_new(int, n + 1);
    for (guint i = 0; i <= n; i++) {
        ch->fds[i] = -1;
    }
    ch->dir = g_dir_make_tmp("qemu-iohelper-XXXXXX", NULL);
    if (!ch->dir) {
        ioh_error_set_errno(error, errno, "mkdtemp", g_get_tmp_dir());
        return NULL;
    }
    ch->path = g_build_filename(ch->dir, "mig.sock", NULL);
    return g_steal_pointer(&ch);
}

void
qg_channels_free(QgChannels *ch)
{
    if (!ch) {
        return;
    }
    ioh_fd_clear(&ch->listen_fd);
    for (guint i = 0; ch->fds && i <= ch->n; i++) {
        ioh_fd_clear(&ch->fds[i]);
    }
    if (ch->path) {
        g_unlink(ch->path);
    }
    if (ch->dir) {
        g_rmdir(ch->dir);
    }
    g_free(ch->fds);
    g_free(ch->path);
    g_free(ch->dir);
    g_free(ch->uuid);
    g_free(ch);
}

static gboolean
qg_channels_addr(const char *path, struct sockaddr_un *sa, GError **error)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path)) {
        return ioh_error_set(error, ENAMETOOLONG, "socket", path,
                             "socket path %s is too long", path);
    }
    strcpy(sa->sun_path, path);
    return TRUE;
}

gboolean
qg_channels_listen(QgChannels *ch, GError **error)
{
    struct sockaddr_un sa;

    if (!qg_channels_addr(ch->path, &sa, error)) {
        return FALSE;
    }
    ch->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (ch->listen_fd < 0 || bind(ch->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(ch->listen_fd, (int)ch->n + 4) < 0) {
        return ioh_error_set_errno(error, errno, "listen", ch->path);
    }
    return TRUE;
}

gboolean
qg_channels_connect(QgChannels *ch, const char *path, guint slot, GError **error)
{
    struct sockaddr_un sa;
    int fd;

    if (!qg_channels_addr(path, &sa, error)) {
        return FALSE;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        ioh_fd_clear(&fd);
        return ioh_error_set(error, e, "connect", path,
                             "cannot connect channel %u to QEMU's socket %s: %s", slot, path,
                             g_strerror(e));
    }
    ch->fds[slot] = fd;
    return TRUE;
}

/* The first bytes of @fd, not consumed: TRUE once there are @len of them, or the main
 * channel's magic, or the peer closed (*@ret_got: how many came); FALSE to wait more. */
static gboolean
qg_channels_peek(int fd, guint8 *buf, gsize len, gsize *ret_got)
{
    ssize_t n = recv(fd, buf, len, MSG_PEEK | MSG_DONTWAIT);

    *ret_got = n > 0 ? (gsize)n : 0;
    if (n < 0) {
        return errno != EAGAIN && errno != EINTR;   /* reset: as closed */
    }
    return n == 0 || (gsize)n == len || (n >= 4 && memcmp(buf, "QEVM", 4) == 0);
}

static char *
qg_channels_hex(const guint8 *p, gsize len)
{
    GString *s = g_string_new(NULL);

    for (gsize i = 0; i < len; i++) {
        g_string_append_printf(s, "%02x", p[i]);
    }
    return g_string_free(s, FALSE);
}

/* Which channel the first bytes @buf (@got of them) name: 0 the main one, 1 + id a
 * multifd channel (its UUID in *@ret_uuid); -1 with @error otherwise. */
static int
qg_channels_identify(const QgChannels *ch, const guint8 *buf, gsize got, char **ret_uuid,
                     GError **error)
{
    guint32 magic, version;

    if (got >= 4 && memcmp(buf, "QEVM", 4) == 0) {
        return 0;
    }
    if (got < QG_CHANNELS_INIT_SIZE) {
        ioh_error_set(error, EPROTO, NULL, NULL,
                      "a channel connection to %s closed after %zu bytes, "
                      "before its init packet", ch->path, got);
        return -1;
    }
    memcpy(&magic, buf, 4);
    memcpy(&version, buf + 4, 4);
    if (GUINT32_FROM_BE(magic) != QG_MULTIFD_MAGIC ||
        GUINT32_FROM_BE(version) != QG_MULTIFD_VERSION) {
        ioh_error_set(error, EPROTO, NULL, NULL,
                      "a connection to %s is neither QEMU's main channel nor a "
                      "multifd channel (magic %08x, version %u)", ch->path,
                      GUINT32_FROM_BE(magic), GUINT32_FROM_BE(version));
        return -1;
    }
    *ret_uuid = qg_channels_hex(buf + 8, 16);
    return 1 + buf[24];
}

/* Files connection @fd under its channel: a known one, once, of the save's UUID. */
static gboolean
qg_channels_place(QgChannels *ch, int fd, const guint8 *buf, gsize got, GError **error)
{
    g_autofree char *uuid = NULL;
    int slot = qg_channels_identify(ch, buf, got, &uuid, error);

    if (slot < 0) {
        return FALSE;
    }
    if ((guint)slot > ch->n || ch->fds[slot] >= 0) {
        return ioh_error_set(error, EPROTO, NULL, NULL,
                             slot ? "multifd channel %d came twice or is not "
                                    "one of the %u asked for" :
                                    "a second main channel (%d) of %u channels",
                             slot - 1, ch->n);
    }
    if (uuid && ch->uuid && !g_str_equal(uuid, ch->uuid)) {
        return ioh_error_set(error, EPROTO, NULL, NULL,
                             "multifd channel %d comes from another save (UUID "
                             "%s, the others' %s)", slot - 1, uuid, ch->uuid);
    }
    if (uuid && !ch->uuid) {
        ch->uuid = g_steal_pointer(&uuid);
    }
    ch->fds[slot] = fd;
    return TRUE;
}

/* Waits for the first bytes of connection @fd and places it. Closes @fd on failure. */
static gboolean
qg_channels_take(QgChannels *ch, int fd, gint64 deadline, GCancellable *cancellable,
                 GError **error)
{
    guint8 buf[QG_CHANNELS_INIT_SIZE];
    gsize got = 0;

    while (!qg_channels_peek(fd, buf, sizeof(buf), &got)) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        if ((deadline && g_get_monotonic_time() > deadline) ||
            g_cancellable_set_error_if_cancelled(cancellable, error)) {
            if (error && !*error) {
                ioh_error_set(error, ETIMEDOUT, NULL, NULL,
                              "a channel connection to %s sent no init packet "
                              "in time", ch->path);
            }
            close(fd);
            return FALSE;
        }
        (void)poll(&p, 1, QG_POLL_SLICE_MS);
    }
    if (!qg_channels_place(ch, fd, buf, got, error)) {
        close(fd);
        return FALSE;
    }
    return TRUE;
}

gboolean
qg_channels_accept(QgChannels *ch, guint timeout_s, GCancellable *cancellable,
                   GError **error)
{
    gint64 deadline = timeout_s ? g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC : 0;

    for (guint have = 0; have <= ch->n;) {
        struct pollfd p = { .fd = ch->listen_fd, .events = POLLIN };
        int fd = accept4(ch->listen_fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd >= 0) {
            if (!qg_channels_take(ch, fd, deadline, cancellable, error)) {
                return FALSE;
            }
            have++;
            continue;
        }
        if (g_cancellable_set_error_if_cancelled(cancellable, error)) {
            return FALSE;
        }
        if (deadline && g_get_monotonic_time() > deadline) {
            return ioh_error_set(error, ETIMEDOUT, NULL, NULL,
                                 "QEMU opened %u of the %u connections (the "
                                 "main channel and %u multifd channels) within %u s", have,
                                 ch->n + 1, ch->n, timeout_s);
        }
        (void)poll(&p, 1, QG_POLL_SLICE_MS);
    }
    return TRUE;
}

gboolean
qg_channels_check_no_extra(QgChannels *ch, GError **error)
{
    int fd = accept4(ch->listen_fd, NULL, NULL, SOCK_CLOEXEC);

    if (fd < 0) {
        return TRUE;
    }
    close(fd);
    return ioh_error_set(error, EPROTO, NULL, NULL,
                         "an extra connection to %s beyond the main channel and "
                         "the %u multifd channels", ch->path, ch->n);
}

gboolean
qg_channels_check_init(const guint8 *buf, gsize len, const QgImageInfo *info, guint i,
                       const char *path, GError **error)
{
    g_autofree char *uuid = NULL;
    guint32 magic = 0;

    if (len >= QG_CHANNELS_INIT_SIZE) {
        memcpy(&magic, buf, 4);
    }
    if (GUINT32_FROM_BE(magic) != QG_MULTIFD_MAGIC || buf[24] != i) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image %s: the channel index does not match its regions (region "
                    "%u does not start with channel %u's init packet)", path, i, i);
        return FALSE;
    }
    uuid = qg_channels_hex(buf + 8, 16);
    if (g_strcmp0(uuid, info->uuid) != 0) {
        g_set_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT,
                    "corrupt image %s: channel %u comes from another save (UUID %s, the "
                    "index says %s)", path, i, uuid, info->uuid);
        return FALSE;
    }
    return TRUE;
}

/* Region @i's first bytes: channel @i's init packet with the index's UUID. */
static gboolean
qg_channels_check_region(int fd, const QgImageInfo *info, guint i, const char *path,
                         GError **error)
{
    guint8 buf[QG_CHANNELS_INIT_SIZE];

    if (pread(fd, buf, sizeof(buf), (off_t)info->regions[i].offset) != sizeof(buf)) {
        return ioh_error_set(error, EIO, "read", path, "cannot read channel %u of %s", i,
                             path);
    }
    return qg_channels_check_init(buf, sizeof(buf), info, i, path, error);
}

gboolean
qg_channels_check_image(int fd, const QgImageInfo *info, const char *path, GError **error)
{
    /* a compressed or encrypted region's first bytes are not the init packet: they are
     * checked as its helper delivers them (qg-restore-probe.c) */
    for (guint i = 0; i < info->channels && !info->compression && !info->encryption; i++) {
        if (!qg_channels_check_region(fd, info, i, path, error)) {
            return FALSE;
        }
    }
    return TRUE;
}
