/* qg-text.h - text from users and peers made fit for one line of a message (prefix qg_text_)
 *
 * Paths, QMP command names and QEMU's own error descriptions may hold newlines and
 * terminal escapes. Every message qemu-iohelper prints goes through qg_text_one_line():
 * the core's one rule (ioh-escape.h: C0, DEL, and C1 in its UTF-8 form become '?'), the
 * same as iohelper's messages, so a message is always one line and never drives the
 * terminal.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A copy of @text (nullable: "") with every control character replaced by '?'. */
char *qg_text_one_line(const char *text);

G_END_DECLS
