/* ioh-conf.h - the host's config file, read as untrusted input
 *
 * A key file; its group [iohelper] may set memory-budget=SIZE, the default of
 * --memory-budget (read in both forms: libvirt passes no options), and name age
 * recipients (recipients=, recipients-file=: ioh-conf-age.h), which libvirt's form
 * refuses on a save.
 */
#pragma once

#include <glib.h>

#include "ioh-args.h"

G_BEGIN_DECLS

/* The config file: $IOHELPER_CONF, else this. */
#define IOH_CONF_PATH "/etc/iohelper.conf"

/* Without --memory-budget, takes memory-budget from the config file (a missing file or
 * key: no budget). A file that cannot be read or holds a bad value is IOH_ERROR (errno,
 * EINVAL for a bad value) with operation "config" and the file as its path: "config file
 * PATH: CAUSE". Separate from parsing so that the helper reads it once its status fd is
 * known not to collide with the data, and can report it there (a usage error, exit 2). */
gboolean ioh_conf_read(IohArgs *args, GError **error);

G_END_DECLS
