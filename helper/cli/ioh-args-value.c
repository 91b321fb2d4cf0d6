/* ioh-args-value.c - the values on iohelper's command line: sizes, counts, usage errors */
#include "ioh-args-value.h"

#include <stdarg.h>
#include <string.h>

#include "ioh-escape.h"
#include "ioh-number.h"

G_DEFINE_QUARK(ioh-args-error-quark, ioh_args_error)

gboolean
ioh_args_usage_error(GError **error, const char *fmt, ...)
{
    va_list ap;

    /* The message quotes what the user typed: keep it one line, free of escapes. */
    va_start(ap, fmt);
    ioh_escape_set_error_valist(error, IOH_ARGS_ERROR, 0, fmt, ap);
    va_end(ap);
    return FALSE;
}

gboolean
ioh_args_parse_size(const char *text, gboolean allow_zero, guint64 *ret_size, GError **error)
{
    guint64 v = 0, mult = 1;
    const char *p = text;

    if (!g_ascii_isdigit(*p)) {
        return ioh_args_usage_error(error, "invalid size '%s'", text);
    }
    while (g_ascii_isdigit(*p)) {
        guint d = (guint)(*p - '0');
        if (v > (G_MAXUINT64 - d) / 10) {
            return ioh_args_usage_error(error, "size '%s' is too large", text);
        }
        v = v * 10 + d;
        p++;
    }
    switch (g_ascii_toupper(*p)) {
    case '\0':
        break;
    case 'K':
        mult = 1ULL << 10;
        break;
    case 'M':
        mult = 1ULL << 20;
        break;
    case 'G':
        mult = 1ULL << 30;
        break;
    case 'T':
        mult = 1ULL << 40;
        break;
    default:
        return ioh_args_usage_error(error, "invalid size '%s'", text);
    }
    if (*p) {
        p++;
        if (g_str_equal(p, "B") || g_str_equal(p, "b")) {
            /* 1MB is 10^6 to some and 2^20 to others: make the user say which. */
            return ioh_args_usage_error(error, "size '%s' is ambiguous: write %.*s%c or "
                                        "%.*s%ciB (powers of 1024), or the number of bytes",
                                        text, (int)(p - text - 1), text,
                                        g_ascii_toupper(p[-1]), (int)(p - text - 1), text,
                                        g_ascii_toupper(p[-1]));
        }
        if (g_str_equal(p, "iB")) {
            p += strlen(p);
        }
        if (*p) {
            return ioh_args_usage_error(error, "invalid size '%s'", text);
        }
    }
    if (v > G_MAXINT64 / mult) {
        return ioh_args_usage_error(error, "size '%s' is too large", text);
    }
    v *= mult;
    if (v == 0 && !allow_zero) {
        return ioh_args_usage_error(error, "size '%s' must not be zero", text);
    }
    *ret_size = v;
    return TRUE;
}

gboolean
ioh_args_parse_bounded(const char *opt, const char *val, guint64 min, guint64 max,
                       guint64 *ret, GError **error)
{
    g_autoptr(GError) err = NULL;

    if (!ioh_args_parse_size(val, TRUE, ret, &err)) {
        return ioh_args_usage_error(error, "%s: %s", opt, err->message);
    }
    if (*ret < min || *ret > max) {
        return ioh_args_usage_error(error, "%s: '%s' is out of range (%" G_GUINT64_FORMAT
                                    " to %" G_GUINT64_FORMAT ")", opt, val, min, max);
    }
    return TRUE;
}

gboolean
ioh_args_parse_count(const char *opt, const char *val, guint64 min, guint64 max,
                     guint64 *ret, GError **error)
{
    guint64 v;

    if (!ioh_number_unsigned(val, 10, min, max, &v)) {
        return ioh_args_usage_error(error, "%s: '%s' is not a number from %"
                                    G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, opt, val, min,
                                    max);
    }
    *ret = v;
    return TRUE;
}
