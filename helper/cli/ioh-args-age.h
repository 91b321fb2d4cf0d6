/* ioh-args-age.h - the command line's age options: --recipient, --recipients-file (a
 * save), --identity, --identity-fd (a restore), and the refusal of an age image restored
 * without an identity (docs/encryption.md) */
#pragma once

#include <glib.h>

#include "ioh-args.h"

G_BEGIN_DECLS

/* --recipient=RECIPIENT (parsed now: a malformed one is a usage error), --recipients-file
 * and --identity=FILE (names kept: ioh_args_age_load() reads them). */
gboolean ioh_args_age_option(IohArgs *a, const char *name, const char *val,
                             GError **error);

/* Reads the recipients files and the identity (file or fd) the options named into
 * @a->age. Errors name the file (a loose identity file: EPERM). */
gboolean ioh_args_age_load(IohArgs *a, GError **error);

/* A restore without an identity: refuses (EINVAL, the line names --identity) when the
 * source @fd (a regular file or block device; its name @name) holds an age image at
 * @offset and the destination @dst_fd is a stream (a pipe, a socket). */
gboolean ioh_args_age_check_plain(const IohArgs *a, int fd, const char *name,
                                  guint64 offset, int dst_fd, GError **error);

/* Frees what the age options hold (the keys wiped). */
void ioh_args_age_clear(IohArgs *a);

G_END_DECLS
