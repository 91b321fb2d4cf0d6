/* ioh-escape.c - keeping a message on one line */
#include "ioh-escape.h"

gboolean
ioh_escape_is_control(guchar c)
{
    return c < 0x20 || c == 0x7f;
}

void
ioh_escape_line_in_place(char *text)
{
    for (char *p = text; p && *p; p++) {
        if (ioh_escape_is_control((guchar)*p)) {
            *p = '?';
        }
    }
}

char *
ioh_escape_line(const char *text)
{
    char *copy = g_strdup(text);

    ioh_escape_line_in_place(copy);
    return copy;
}
