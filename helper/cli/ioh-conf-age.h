/* ioh-conf-age.h - the host's recipients (recipients=, recipients-file= in the config file)
 *
 * An administrator may name age recipients that every save of this host's helpers is
 * encrypted to. libvirt's form (PATH FD) refuses them on a save: libvirt restores its
 * images without any helper unless asked for --bypass-cache, reads its own header from
 * the file, and rewrites the image's first bytes after the helper exited, so an image
 * the helper encrypted would be one libvirt cannot restore (docs/libvirt.md, "Encrypted
 * saves"). A failed save says so; a silently plain one would not.
 */
#pragma once

#include <glib.h>

#include "ioh-args.h"

G_BEGIN_DECLS

/* Whether the config file's recipients matter to this run: a save in libvirt's form. */
gboolean ioh_conf_age_wanted(const IohArgs *args);

/* The recipients keys of [iohelper] in @kf (the file @path) for this run: in libvirt's
 * form, present on a save, a usage error (IOH_ERROR EPERM, operation "config", @path).
 * Returns FALSE with @error set when refused. */
gboolean ioh_conf_age_apply(GKeyFile *kf, const char *path, IohArgs *args, GError **error);

G_END_DECLS
