/* ioh-lines.h - a byte stream cut into lines, with a bound on a line
 *
 * The two readers of a peer's lines, the helper protocol's (ioh-protocol-reader.c) and
 * qemu-glue's QMP client, trust nothing: a line that never ends must not grow without
 * bound. A line of @max bytes or more (newline excluded) is overlong: its bytes are
 * dropped as they come, up to its newline, and it is taken as a gap (-1).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _IohLines IohLines;

IohLines *ioh_lines_new(gsize max);
void ioh_lines_free(IohLines *lines);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohLines, ioh_lines_free)

/* Adds @len bytes of the stream. */
void ioh_lines_feed(IohLines *lines, const void *data, gsize len);

/* The oldest whole line not taken yet: 1 and *@ret_line (its bytes without the newline,
 * possibly holding NULs; the caller's, g_string_free()); -1 where an overlong line was
 * dropped; 0 when no whole line is there. */
int ioh_lines_take(IohLines *lines, GString **ret_line);

/* TRUE while the line being received is overlong (its bytes are being dropped). */
gboolean ioh_lines_overlong(const IohLines *lines);

/* The end of the stream: TRUE when it ended inside a line (bytes after the last newline,
 * or an overlong line), which is then forgotten. */
gboolean ioh_lines_finish(IohLines *lines);

G_END_DECLS
