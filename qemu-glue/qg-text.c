/* qg-text.c - text made fit for one line of a message */
#include "qg-text.h"

#include "ioh-escape.h"

char *
qg_text_one_line(const char *text)
{
    return ioh_escape_line(text ? text : "");
}
