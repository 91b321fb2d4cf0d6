/* ioh-escape.h - keeping a message on one line
 *
 * Every message a user reads is one line that cannot drive the terminal, whatever a path
 * or an argument holds: each byte below 0x20 (newline, tab, escape, ...) and DEL (0x7f)
 * becomes '?', and so does each C1 control in its UTF-8 form (U+0080..U+009F, the bytes
 * 0xC2 0x80..0x9F: U+009B is CSI, which a terminal takes as ESC [). Every other byte is
 * kept, so UTF-8 names print as they are. The one rule of the three parts: iohelper's
 * messages, libwrap's copy of the helper's error, and qemu-iohelper's (qg-text.h).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE for the single bytes that are printed as '?' (C0 and DEL; a C1 control is two
 * bytes, which only the functions below see). */
gboolean ioh_escape_is_control(guchar c);

/* A copy of @text with each control character replaced by one '?' (NULL for NULL). */
char *ioh_escape_line(const char *text);

/* The same, in place, on a NUL-terminated string (it may get shorter). */
void ioh_escape_line_in_place(char *text);

/* Sets @error to @domain and @code with the message made by @fmt, escaped as above (a
 * message quoting what a user typed). */
void ioh_escape_set_error_valist(GError **error, GQuark domain, int code, const char *fmt,
                                 va_list ap) G_GNUC_PRINTF(4, 0);

G_END_DECLS
