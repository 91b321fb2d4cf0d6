/* ioh-cpus.h - CPU lists ("0", "0-3,6": taskset -c's and cpuset's form) and affinities
 * (prefix ioh_cpus_)
 *
 * The helper's --cpus, libwrap's ioh_wrap_options_set_cpus() and qemu-iohelper's
 * --helper-cpus share this one parser and formatter. A pipe's reader on another core
 * than its writer frees pages the writer's core allocated (docs/engine.md, "The relay
 * pipe and the producer's CPU"): placing the helper where QEMU is pinned halves that.
 */
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <glib.h>

G_BEGIN_DECLS

/* The longest list parsed: far more than any list of CPU_SETSIZE CPUs needs. */
#define IOH_CPUS_TEXT_MAX 4096

/* Parses @text, a comma-separated list of CPU numbers N and ranges N-M (N <= M), each
 * below CPU_SETSIZE, into *@ret. Refuses an empty list or item, a space, a sign, a
 * reversed range and anything longer than IOH_CPUS_TEXT_MAX: FALSE with a message that
 * says why (the caller names its option). */
gboolean ioh_cpus_parse(const char *text, cpu_set_t *ret, GError **error);

/* @set as a list, ranges folded ("0-3,6"); "" when empty. */
char *ioh_cpus_format(const cpu_set_t *set);

/* The CPUs task @pid (0: the calling thread) may run on (sched_getaffinity). */
gboolean ioh_cpus_get(pid_t pid, cpu_set_t *ret, GError **error);

/* Whether every CPU of @set is one this thread may use now (its affinity, within its
 * cgroup's cpuset): else FALSE, naming the first CPU that is not. A caller that hands
 * @set on to a child (qemu-iohelper's helpers) checks it before it starts anything. */
gboolean ioh_cpus_allowed(const cpu_set_t *set, GError **error);

/* Restricts the calling thread, and so every thread and io_uring worker it creates after,
 * to @set, once ioh_cpus_allowed() said yes. */
gboolean ioh_cpus_apply(const cpu_set_t *set, GError **error);

/* How many CPUs this thread may use (its affinity: --cpus, taskset, a cpuset), the
 * default number of compression and encryption threads: GLib's g_get_num_processors()
 * counts every online CPU here (GLib 2.74), and a helper given one CPU would run a
 * thread per online CPU on it. At least 1. */
guint ioh_cpus_usable(void);

/* Whether @narrow holds fewer CPUs than @wide, all of them in @wide's. */
gboolean ioh_cpus_narrower(const cpu_set_t *narrow, const cpu_set_t *wide);

G_END_DECLS
