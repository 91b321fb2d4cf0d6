/* ioh-cpu.c - CPU time of threads: the calling one (clock_gettime), and those a library
 * started (their /proc/self/task/TID/stat), for the stats' compression CPU time */
#include "ioh-cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

gint64
ioh_cpu_thread_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

GHashTable *
ioh_cpu_threads(void)
{
    GHashTable *ids = g_hash_table_new(NULL, NULL);
    g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
    const char *name;

    while (dir && (name = g_dir_read_name(dir))) {
        g_hash_table_add(ids, GINT_TO_POINTER(atoi(name)));
    }
    return ids;
}

gint64
ioh_cpu_new_threads_us(GHashTable *before)
{
    g_autoptr(GHashTable) now = ioh_cpu_threads();
    GHashTableIter it;
    gpointer key;
    guint64 ticks = 0;

    g_hash_table_iter_init(&it, now);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        g_autofree char *path = g_strdup_printf("/proc/self/task/%d/stat",
                                                GPOINTER_TO_INT(key));
        g_autofree char *text = NULL;
        const char *p;
        guint64 ut = 0, st = 0;

        if (g_hash_table_contains(before, key) || !g_file_get_contents(path, &text, NULL,
                                                                       NULL) ||
            !(p = strrchr(text, ')'))) {
            continue;
        }
        /* after "pid (comm)": state is field 3, utime 14 and stime 15 */
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %" G_GUINT64_FORMAT
                   " %" G_GUINT64_FORMAT, &ut, &st) == 2) {
            ticks += ut + st;
        }
    }
    return (gint64)(ticks * G_USEC_PER_SEC / (guint64)sysconf(_SC_CLK_TCK));
}
