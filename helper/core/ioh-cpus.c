/* ioh-cpus.c - CPU lists and affinities (ioh-cpus.h) */
#include "ioh-cpus.h"

#include <errno.h>
#include <string.h>

#include "ioh-error.h"
#include "ioh-number.h"

/* @len bytes at @text as a message shows them: printable ASCII (a caller's bytes reach
 * libwrap's GError and the helper's one line as they are), cut after 16 bytes. */
static char *
shown(const char *text, gsize len)
{
    g_autofree char *head = g_strndup(text, MIN(len, 16));
    g_autofree char *escaped = g_strescape(head, NULL);

    return g_strdup_printf("%s%s", escaped, len > 16 ? "..." : "");
}

/* One number of a list: 1 to 4 decimal digits (CPU_SETSIZE is 1024); FALSE for anything
 * else. Past CPU_SETSIZE - 1: FALSE with @error set. */
static gboolean
parse_cpu(const char *text, gsize len, guint *ret, GError **error)
{
    char digits[5] = { 0 };
    gboolean digit = len > 0 && len <= 4;
    guint64 v;

    for (gsize i = 0; i < len; i++) {
        digit = digit && g_ascii_isdigit(text[i]);
    }
    if (!digit) {
        return FALSE;
    }
    memcpy(digits, text, len);
    if (!ioh_number_unsigned(digits, 10, 0, CPU_SETSIZE - 1, &v)) {
        g_set_error(error, IOH_ERROR, EINVAL, "CPU %s is out of range (0 to %d)", digits,
                    CPU_SETSIZE - 1);
        return FALSE;
    }
    *ret = (guint)v;
    return TRUE;
}

/* One item of a list, N or N-M, of @len bytes at @item, added to @set. */
static gboolean
parse_item(const char *item, gsize len, cpu_set_t *set, GError **error)
{
    const char *dash = memchr(item, '-', len);
    GError *local = NULL;
    guint first, last;

    if (len == 0) {
        g_set_error_literal(error, IOH_ERROR, EINVAL, "an empty item in the CPU list");
        return FALSE;
    }
    last = first = 0;
    if (!parse_cpu(item, dash ? (gsize)(dash - item) : len, &first, &local) ||
        (dash && !parse_cpu(dash + 1, len - (gsize)(dash - item) - 1, &last, &local))) {
        g_autofree char *what = shown(item, len);

        if (local) {
            g_propagate_error(error, local);
            return FALSE;
        }
        g_set_error(error, IOH_ERROR, EINVAL, "'%s' is not a CPU number or range (0 to %d)",
                    what, CPU_SETSIZE - 1);
        return FALSE;
    }
    last = dash ? last : first;
    if (last < first) {
        g_set_error(error, IOH_ERROR, EINVAL, "the range %u-%u is reversed", first, last);
        return FALSE;
    }
    for (guint c = first; c <= last; c++) {
        CPU_SET(c, set);
    }
    return TRUE;
}

gboolean
ioh_cpus_parse(const char *text, cpu_set_t *ret, GError **error)
{
    gsize len = text ? strnlen(text, IOH_CPUS_TEXT_MAX + 1) : 0;
    const char *p = text;

    if (len == 0) {
        g_set_error_literal(error, IOH_ERROR, EINVAL, "an empty CPU list");
        return FALSE;
    }
    if (len > IOH_CPUS_TEXT_MAX) {
        g_set_error(error, IOH_ERROR, EINVAL, "the CPU list is longer than %d bytes",
                    IOH_CPUS_TEXT_MAX);
        return FALSE;
    }
    CPU_ZERO(ret);
    for (;;) {
        const char *comma = strchr(p, ',');
        gsize n = comma ? (gsize)(comma - p) : strlen(p);

        if (!parse_item(p, n, ret, error)) {
            return FALSE;
        }
        if (!comma) {
            return TRUE;
        }
        p = comma + 1;
    }
}

char *
ioh_cpus_format(const cpu_set_t *set)
{
    GString *s = g_string_new(NULL);

    for (int c = 0; c < CPU_SETSIZE; c++) {
        int last = c;

        if (!CPU_ISSET(c, set)) {
            continue;
        }
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set)) {
            last++;
        }
        g_string_append_printf(s, "%s%d", s->len ? "," : "", c);
        if (last > c) {
            g_string_append_printf(s, "-%d", last);
        }
        c = last;
    }
    return g_string_free(s, FALSE);
}

gboolean
ioh_cpus_get(pid_t pid, cpu_set_t *ret, GError **error)
{
    CPU_ZERO(ret);
    if (sched_getaffinity(pid, sizeof(*ret), ret) < 0) {
        int e = errno;
        g_set_error(error, IOH_ERROR, e, "cannot read the CPU affinity of process %d: %s",
                    (int)pid, g_strerror(e));
        return FALSE;
    }
    return TRUE;
}

guint
ioh_cpus_usable(void)
{
    cpu_set_t set;

    return ioh_cpus_get(0, &set, NULL) && CPU_COUNT(&set) > 0 ? (guint)CPU_COUNT(&set)
                                                               : MAX(1, g_get_num_processors());
}

gboolean
ioh_cpus_narrower(const cpu_set_t *narrow, const cpu_set_t *wide)
{
    cpu_set_t both;

    CPU_AND(&both, narrow, wide);
    return CPU_EQUAL(&both, narrow) && CPU_COUNT(narrow) < CPU_COUNT(wide);
}

gboolean
ioh_cpus_allowed(const cpu_set_t *set, GError **error)
{
    cpu_set_t allowed;

    if (!ioh_cpus_get(0, &allowed, error)) {
        return FALSE;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, set) && !CPU_ISSET(c, &allowed)) {
            g_autofree char *list = ioh_cpus_format(&allowed);
            g_set_error(error, IOH_ERROR, EINVAL, "CPU %d is not one this process may use "
                        "(its affinity and cgroup allow %s)", c, list);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
ioh_cpus_apply(const cpu_set_t *set, GError **error)
{
    if (!ioh_cpus_allowed(set, error)) {
        return FALSE;
    }
    if (sched_setaffinity(0, sizeof(*set), set) < 0) {
        int e = errno;
        g_set_error(error, IOH_ERROR, e, "sched_setaffinity: %s", g_strerror(e));
        return FALSE;
    }
    return TRUE;
}
