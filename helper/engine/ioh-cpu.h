/* ioh-cpu.h - CPU time of threads: the calling one, and those a library started */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* CPU time of the calling thread, in nanoseconds (CLOCK_THREAD_CPUTIME_ID). */
gint64 ioh_cpu_thread_ns(void);

/* The ids of the process's threads now (/proc/self/task), a set. */
GHashTable *ioh_cpu_threads(void);

/* CPU time, in microseconds, of the process's threads that are not in @before (a set from
 * ioh_cpu_threads()): threads a library started since, and still running. */
gint64 ioh_cpu_new_threads_us(GHashTable *before);

G_END_DECLS
