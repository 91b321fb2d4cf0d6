/* ioh-status.h - what the helper tells its caller besides stderr
 *
 * The status fd (--status-fd) gets the helper protocol of docs/protocol.md: progress
 * lines while the copy runs, then one final line, a result or an error with its
 * structured fields. --record=FILE appends that same final line, with the members a
 * record adds (docs/protocol.md, "The record"). Everything here is written through
 * helper/core/ioh-protocol.h; nothing fails the copy.
 */
#pragma once

#include <glib.h>

#include "ioh-protocol.h"
#include "ioh-engine.h"

G_BEGIN_DECLS

/* Writes a progress line of @stats to @fd, or drops it when the fd has no room. */
void ioh_status_write_progress(int fd, const IohStats *stats);

/* Writes the ready line to @fd: everything was accepted, the copy starts (libwrap waits
 * for it before handing out the pipe). */
void ioh_status_write_ready(int fd);

/* Fills @msg (cleared first) with the final line of a copy: the result of @stats, or the
 * error @error (NULL: success) with how far the copy got. */
void ioh_status_final(IohProtocolMsg *msg, const IohStats *stats, const GError *error);

/* Writes the final line to @fd, waiting up to IOH_PROTOCOL_FINAL_TIMEOUT_MS for room. */
void ioh_status_write_final(int fd, const IohProtocolMsg *msg);

/* Appends @msg, plus the record's members (pid, form, ok, bytes; the direction and mode
 * of @stats where the line has none; the path of the image @image, an error's own path
 * moved to error_path), as one line to @file (O_APPEND: concurrent helpers each add whole
 * lines). @libvirt tells the form. */
void ioh_status_append_record(const char *file, const IohProtocolMsg *msg,
                              const IohStats *stats, gboolean libvirt, const char *image);

G_END_DECLS
