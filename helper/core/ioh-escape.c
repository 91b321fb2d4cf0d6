/* ioh-escape.c - keeping a message on one line */
#include "ioh-escape.h"

gboolean
ioh_escape_is_control(guchar c)
{
    return c < 0x20 || c == 0x7f;
}

/* U+0080..U+009F in UTF-8: 0xC2 then 0x80..0x9F. 0xC2 never continues a character, so
 * the pair is always that character. */
static gboolean
is_c1_pair(const char *p)
{
    return (guchar)p[0] == 0xc2 && (guchar)p[1] >= 0x80 && (guchar)p[1] <= 0x9f;
}

void
ioh_escape_line_in_place(char *text)
{
    char *out = text;

    for (const char *p = text; p && *p; p++) {
        if (ioh_escape_is_control((guchar)*p)) {
            *out++ = '?';
        } else if (is_c1_pair(p)) {
            *out++ = '?';    /* one mark for the one character */
            p++;
        } else {
            *out++ = *p;
        }
    }
    if (out) {
        *out = '\0';
    }
}

char *
ioh_escape_line(const char *text)
{
    char *copy = g_strdup(text);

    ioh_escape_line_in_place(copy);
    return copy;
}

void
ioh_escape_set_error_valist(GError **error, GQuark domain, int code, const char *fmt,
                            va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    ioh_escape_line_in_place(msg);
    g_set_error_literal(error, domain, code, msg);
}
