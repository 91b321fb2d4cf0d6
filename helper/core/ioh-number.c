/* ioh-number.c - whole numbers from text, safe while other threads start (see the header) */
#include "ioh-number.h"

/* g_ascii_strtoll()'s "C" locale, created if it is not yet: later conversions find it
 * without taking a lock, so nothing between their errno = 0 and their check sets errno. */
static void
c_locale_ready(void)
{
    (void)g_ascii_strtoll("0", NULL, 10);
}

gboolean
ioh_number_signed(const char *text, guint base, gint64 min, gint64 max, gint64 *out)
{
    c_locale_ready();
    return g_ascii_string_to_signed(text, base, min, max, out, NULL);
}

gboolean
ioh_number_unsigned(const char *text, guint base, guint64 min, guint64 max, guint64 *out)
{
    c_locale_ready();
    return g_ascii_string_to_unsigned(text, base, min, max, out, NULL);
}
