/* qg-channels.h - QEMU's multifd connections (prefix qg_channels_)
 *
 * A save listens on a unix socket in a private folder of ours, QEMU (`migrate
 * unix:PATH`) opens N+1 connections there: the main channel, which begins with QEMU's
 * file magic "QEVM", and N channels, each beginning with an init packet (magic
 * 0x11223344, version 1, the source's UUID, the channel id). They are told apart by
 * peeking at those first bytes, never consuming them: the helper stores each stream
 * whole. A restore connects to QEMU's socket (`migrate-incoming unix:PATH`), the main
 * channel first (QEMU 7.2 takes the first connection as the main one).
 */
#pragma once

#include <gio/gio.h>

#include "qg-image.h"

G_BEGIN_DECLS

#define QG_CHANNELS_INIT_SIZE 64       /* QEMU's MultiFDInit_t */

typedef struct {
    guint n;              /* multifd channels */
    char *dir;            /* our private folder (0700) */
    char *path;           /* the socket in it */
    int listen_fd;        /* save: -1 otherwise */
    int *fds;             /* n + 1 connections: [0] the main channel, [1 + i] channel i */
    char *uuid;           /* save: the channels' source UUID (hex) */
} QgChannels;

/* A private folder for a socket; for @n channels. */
QgChannels *qg_channels_new(guint n, GError **error);
/* Closes every fd, removes the socket and the folder. Accepts NULL. */
void qg_channels_free(QgChannels *ch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QgChannels, qg_channels_free)

/* Save: listens on ch->path. */
gboolean qg_channels_listen(QgChannels *ch, GError **error);
/* Save: accepts and identifies the n + 1 connections, for at most @timeout_s (0: no
 * limit) and until @cancellable: one main channel, channels 0..n-1 once each, all with
 * one UUID, nothing more. One-line errors naming what is wrong. */
gboolean qg_channels_accept(QgChannels *ch, guint timeout_s, GCancellable *cancellable,
                            GError **error);
/* Save: FALSE (@error) when a connection beyond the n + 1 waits. */
gboolean qg_channels_check_no_extra(QgChannels *ch, GError **error);

/* Restore: a new connection to QEMU's socket @path, into ch->fds[@slot]. */
gboolean qg_channels_connect(QgChannels *ch, const char *path, guint slot, GError **error);

/* Restore: @buf (@len bytes, the first of channel @i's stream) is channel @i's init
 * packet with the index's UUID; else FALSE with a one-line "corrupt image" @error. */
gboolean qg_channels_check_init(const guint8 *buf, gsize len, const QgImageInfo *info,
                                guint i, const char *path, GError **error);

/* Restore: the init packets at the start of each raw region of @info (from @fd) carry
 * the channel's id and the index's UUID. */
gboolean qg_channels_check_image(int fd, const QgImageInfo *info, const char *path,
                                 GError **error);

G_END_DECLS
