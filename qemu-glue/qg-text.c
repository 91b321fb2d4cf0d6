/* qg-text.c - text made fit for one line of a message */
#include "qg-text.h"

#include "ioh-escape.h"

char *
qg_text_one_line(const char *text)
{
    GString *s = g_string_new(NULL);

    for (const guchar *p = (const guchar *)(text ? text : ""); *p; p++) {
        if (ioh_escape_is_control(*p)) {   /* C0 and DEL, as the helper does */
            g_string_append_c(s, '?');
        } else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            g_string_append_c(s, '?');   /* U+0080..U+009F: C1 controls (CSI is U+009B) */
            p++;
        } else {
            g_string_append_c(s, (char)*p);
        }
    }
    return g_string_free(s, FALSE);
}
