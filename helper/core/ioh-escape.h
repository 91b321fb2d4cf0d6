/* ioh-escape.h - keeping a message on one line
 *
 * Every message a user reads is one line, whatever a path or an argument holds: each
 * byte below 0x20 (newline, tab, escape, ...) and DEL (0x7f) becomes '?'. Every other
 * byte is kept, so UTF-8 names print as they are. This is what helper/iohelper.c
 * (make_one_line), helper/cli/ioh-args.c (usage_error) and libwrap/iohwrap.c
 * (helper_message_locked) each did before, byte for byte.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE for the bytes that are printed as '?'. */
gboolean ioh_escape_is_control(guchar c);

/* A copy of @text with control bytes replaced by '?' (NULL for NULL). */
char *ioh_escape_line(const char *text);

/* The same, in place, on a NUL-terminated string. */
void ioh_escape_line_in_place(char *text);

G_END_DECLS
