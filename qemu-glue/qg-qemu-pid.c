/* qg-qemu-pid.c - QEMU's pid, checked with QEMU (qg-qemu-pid.h) */
#include "qg-qemu-pid.h"

#include <string.h>

/* Whether task @task of process @pid has @tid in the innermost pid namespace it is in
 * (the last number of its status's NSpid line). */
static gboolean
nspid_is(GPid pid, const char *task, gint64 tid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%s/status", (int)pid, task);
    g_autofree char *text = NULL;
    const char *line, *last;

    if (!g_file_get_contents(path, &text, NULL, NULL) ||
        !(line = strstr(text, "\nNSpid:\t"))) {
        return FALSE;
    }
    line += strlen("\nNSpid:\t");
    *strchrnul(line, '\n') = '\0';
    last = strrchr(line, '\t') ? strrchr(line, '\t') + 1 : line;
    return g_ascii_strtoll(last, NULL, 10) == tid;
}

/* Whether @tid, a thread id QEMU gave (in QEMU's pid namespace), is a thread of process
 * @pid (in ours): the same number when QEMU shares our namespace, else that of a task
 * of @pid in QEMU's (NSpid). */
static gboolean
thread_of(GPid pid, gint64 tid)
{
    g_autofree char *path = NULL;
    g_autoptr(GDir) tasks = NULL;
    const char *task;

    if (tid <= 0 || tid > G_MAXINT) {
        return FALSE;
    }
    path = g_strdup_printf("/proc/%d/task/%d", (int)pid, (int)tid);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        return TRUE;
    }
    g_free(path);
    path = g_strdup_printf("/proc/%d/task", (int)pid);
    tasks = g_dir_open(path, 0, NULL);
    while (tasks && (task = g_dir_read_name(tasks))) {
        if (nspid_is(pid, task, tid)) {
            return TRUE;
        }
    }
    return FALSE;
}

/* Whether an element of @cpus (query-cpus-fast's return) has a thread-id of @pid's. */
static gboolean
vcpu_of(JsonNode *cpus, GPid pid)
{
    JsonArray *a = JSON_NODE_HOLDS_ARRAY(cpus) ? json_node_get_array(cpus) : NULL;

    for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
        JsonNode *t = o ? json_object_get_member(o, "thread-id") : NULL;

        if (t && JSON_NODE_HOLDS_VALUE(t) && json_node_get_value_type(t) == G_TYPE_INT64 &&
            thread_of(pid, json_node_get_int(t))) {
            return TRUE;
        }
    }
    return FALSE;
}

GPid
qg_qemu_pid(QgQmp *qmp, char **ret_why)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) cpus = NULL;
    GPid pid = qg_qmp_get_peer_pid(qmp);

    if (pid <= 0) {
        *ret_why = g_strdup("QEMU's pid unknown (the QMP socket's peer is in another pid "
                            "namespace, or the kernel does not say)");
        return 0;
    }
    cpus = qg_qmp_execute(qmp, "query-cpus-fast", NULL, &error);
    if (cpus && vcpu_of(cpus, pid)) {
        return pid;
    }
    *ret_why = g_strdup_printf("the QMP socket's peer (pid %d) is not known to be QEMU: %s",
                               (int)pid, error ? error->message
                                               : "no vCPU thread query-cpus-fast names is "
                                                 "one of its threads");
    return 0;
}
