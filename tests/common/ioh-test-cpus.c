/* ioh-test-cpus.c - where a running process's tasks may run, from /proc (ioh-test.h) */
#include "ioh-test.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

/* The Cpus_allowed_list of @status_path's task, or NULL when it is gone. */
static char *
task_cpus(const char *status_path)
{
    g_autofree char *text = NULL;
    char *line, *end;

    if (!g_file_get_contents(status_path, &text, NULL, NULL)) {
        return NULL;
    }
    line = strstr(text, "\nCpus_allowed_list:");
    g_assert_nonnull(line);
    line += strlen("\nCpus_allowed_list:");
    line += strspn(line, " \t");
    end = strchr(line, '\n');
    return g_strndup(line, end ? (gsize)(end - line) : strlen(line));
}

GPtrArray *
ioht_tasks_cpus(GPid pid, guint want, guint timeout_ms)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
    GPtrArray *tasks = g_ptr_array_new_with_free_func(g_free);
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

    for (;;) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *tid;

        g_ptr_array_set_size(tasks, 0);
        while (d && (tid = g_dir_read_name(d))) {
            g_autofree char *status = g_strdup_printf("%s/%s/status", dir, tid);
            g_autofree char *cpus = task_cpus(status);
            if (cpus) {
                g_ptr_array_add(tasks, g_strdup_printf("%s:%s", tid, cpus));
            }
        }
        if (tasks->len >= want || g_get_monotonic_time() >= end) {
            return tasks;
        }
        g_usleep(50 * 1000);
    }
}

void
ioht_assert_tasks_on(GPid pid, guint want, const char *cpus)
{
    g_autoptr(GPtrArray) tasks = ioht_tasks_cpus(pid, want, 10000);

    g_test_message("process %d: %u tasks (%s ...), expected on %s", (int)pid, tasks->len,
                   tasks->len ? (char *)tasks->pdata[0] : "none", cpus);
    g_assert_cmpuint(tasks->len, >=, 1);
    for (guint i = 0; i < tasks->len; i++) {
        const char *list = strchr(tasks->pdata[i], ':') + 1;
        g_assert_cmpstr(list, ==, cpus);
    }
}

gboolean
ioht_two_cpus(char **ret_last, char **ret_all)
{
    g_autofree char *self = g_strdup_printf("/proc/self/task/%d/status", (int)gettid());
    cpu_set_t allowed;
    int last = 0;

    g_assert_cmpint(sched_getaffinity(0, sizeof(allowed), &allowed), ==, 0);
    if (CPU_COUNT(&allowed) < 2) {
        g_test_skip("this test may use one CPU only: no placement to observe");
        return FALSE;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        last = CPU_ISSET(c, &allowed) ? c : last;
    }
    *ret_last = g_strdup_printf("%d", last);
    *ret_all = task_cpus(self);
    return TRUE;
}
