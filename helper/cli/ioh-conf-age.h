/* ioh-conf-age.h - the host's recipients (recipients=, recipients-file= in the config file)
 *
 * An administrator may name age recipients that every save of this host's helpers is
 * encrypted to: a save whose command line names no recipient (--recipient,
 * --recipients-file) takes them, as if given there; its result line then says
 * "encryption":"age" (docs/protocol.md), so a caller that records how an image was stored
 * (qemu-iohelper's header) learns it. Restores and copies are untouched.
 *
 * libvirt's own saves (the PATH FD form without --status-fd) refuse them instead: libvirt
 * restores its images without any helper unless asked for --bypass-cache, reads its own
 * header from the file, and rewrites the image's first bytes after the helper exited, so
 * an image the helper encrypted would be one libvirt cannot restore (docs/libvirt.md,
 * "Encrypted saves and libvirt"). A failed save says so; a silently plain one would not.
 */
#pragma once

#include <glib.h>

#include "ioh-args.h"

G_BEGIN_DECLS

/* Whether the config file's recipients matter to this run: a save without recipients. */
gboolean ioh_conf_age_wanted(const IohArgs *args);

/* The recipients keys of [iohelper] in @kf (the file @path) for this run: on a save
 * without recipients, added to @args (a malformed recipient: EINVAL naming @path); for
 * libvirt's own save a usage error (IOH_ERROR EPERM, operation "config", @path). */
gboolean ioh_conf_age_apply(GKeyFile *kf, const char *path, IohArgs *args, GError **error);

G_END_DECLS
