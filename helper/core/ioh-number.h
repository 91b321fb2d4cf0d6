/* ioh-number.h - whole numbers from text, safe while other threads start
 *
 * g_ascii_string_to_signed() and g_ascii_string_to_unsigned() of GLib 2.74 (Debian 12)
 * refuse a good number now and then when the process's first such call meets another
 * thread in a GLib one-time initialisation: the call sets errno to 0, then g_ascii_strtoll()
 * creates its "C" locale once (g_once_init_enter()), whose contended lock can leave errno
 * set (EAGAIN from a futex), which it then takes for a failed conversion. Seen: 4-15 % of
 * `qemu-iohelper save --compress=zstd:3` runs said "--compress takes zstd or zstd:LEVEL"
 * (its signal thread starting beside the parse). These functions create that locale first,
 * with a conversion whose errno nobody reads.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* g_ascii_string_to_signed(@text, @base, @min, @max, @out, NULL), without the failure
 * above: TRUE and *@out set for a number in [@min, @max] written whole in @base. */
gboolean ioh_number_signed(const char *text, guint base, gint64 min, gint64 max,
                           gint64 *out);

/* The same for g_ascii_string_to_unsigned(). */
gboolean ioh_number_unsigned(const char *text, guint base, guint64 min, guint64 max,
                             guint64 *out);

G_END_DECLS
