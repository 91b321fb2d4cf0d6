/* ioh-lines.c - a byte stream cut into lines, with a bound on a line */
#include "ioh-lines.h"

#include <string.h>

struct _IohLines {
    gsize max;
    GString *partial;    /* the unfinished line */
    gboolean overlong;   /* it passed the limit: bytes are dropped up to its newline */
    GQueue lines;        /* whole lines (GString, newline removed); NULL: an overlong one */
};

IohLines *
ioh_lines_new(gsize max)
{
    IohLines *l = g_new0(IohLines, 1);

    l->max = max;
    l->partial = g_string_new(NULL);
    g_queue_init(&l->lines);
    return l;
}

static void
free_line(gpointer line)
{
    if (line) {
        g_string_free(line, TRUE);
    }
}

void
ioh_lines_free(IohLines *lines)
{
    if (!lines) {
        return;
    }
    g_queue_clear_full(&lines->lines, free_line);
    g_string_free(lines->partial, TRUE);
    g_free(lines);
}

/* Adds @n bytes of the unfinished line, dropping the line once it passes the limit. */
static void
append_partial(IohLines *l, const char *p, gsize n)
{
    if (l->overlong) {
        return;
    }
    if (l->partial->len + n >= l->max) {
        l->overlong = TRUE;
        g_string_free(l->partial, TRUE);    /* give the memory back, not just the length */
        l->partial = g_string_new(NULL);
        return;
    }
    g_string_append_len(l->partial, p, (gssize)n);
}

void
ioh_lines_feed(IohLines *lines, const void *data, gsize len)
{
    const char *p = data;
    const char *end = p + len;

    g_return_if_fail(lines != NULL);

    while (p < end) {
        const char *nl = memchr(p, '\n', (gsize)(end - p));

        append_partial(lines, p, (gsize)((nl ? nl : end) - p));
        if (!nl) {
            break;
        }
        g_queue_push_tail(&lines->lines, lines->overlong ? NULL : lines->partial);
        if (!lines->overlong) {
            lines->partial = g_string_new(NULL);
        }
        lines->overlong = FALSE;
        p = nl + 1;
    }
}

int
ioh_lines_take(IohLines *lines, GString **ret_line)
{
    GString *line;

    g_return_val_if_fail(lines != NULL, 0);

    if (g_queue_is_empty(&lines->lines)) {
        return 0;
    }
    line = g_queue_pop_head(&lines->lines);
    *ret_line = line;
    return line ? 1 : -1;
}

gboolean
ioh_lines_overlong(const IohLines *lines)
{
    return lines->overlong;
}

gboolean
ioh_lines_finish(IohLines *lines)
{
    gboolean torn = lines->overlong || lines->partial->len > 0;

    g_string_truncate(lines->partial, 0);
    lines->overlong = FALSE;
    return torn;
}
