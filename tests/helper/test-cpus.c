/* test-cpus.c - iohelper --cpus=LIST (issue 30): the helper, each of its threads and its
 * io_uring workers run on the CPUs given, read from /proc/PID/task/TID/status
 * (Cpus_allowed_list) while a --direct save from a real pipe runs; without --cpus every
 * one runs where this test may; hostile lists are usage errors (exit 2, one line naming
 * --cpus), and a CPU outside this process's affinity is refused naming the cause. On a
 * machine where this test may use only one CPU, the placement tests skip. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "ioh-cpus.h"
#include "ioh-test.h"

#define MiB (1024 * 1024)

static char *workdir;

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

/* Every task of @pid with its CPU list, as "TID:LIST" strings; waits up to 10 s for a
 * second task (the strategy's threads or io_uring's workers start with the stream). */
static GPtrArray *
helper_tasks(GPid pid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
    GPtrArray *tasks = g_ptr_array_new_with_free_func(g_free);

    for (int tries = 0; tries < 100; tries++) {
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
        if (tasks->len > 1) {
            break;
        }
        g_usleep(100 * 1000);
    }
    return tasks;
}

/* A --direct (where the folder takes it) save from a pipe held open: each task's CPUs
 * while it runs must be @want; then the pipe closes and the save must succeed. */
static void
check_save(const char *cpus_opt, const char *want)
{
    g_autofree char *img = g_build_filename(workdir, "img", NULL);
    gboolean direct = ioht_dir_supports_direct(workdir);
    const char *args[] = { direct ? "--direct" : "--fadvise", "-", img, cpus_opt, NULL };
    g_autofree char *data = g_malloc0(8 * MiB);
    IohtPumpOpts feed = { .data = data, .len = 8 * MiB };
    g_autoptr(GPtrArray) tasks = NULL;
    IohtResult r = { 0 };
    IohtChild child;
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    child = ioht_spawn(&(IohtSpawn){ .args = args, .in_fd = p[0], .out_fd = -1 });
    close(p[0]);
    g_assert_true(ioht_feed(p[1], &feed));
    tasks = helper_tasks(child.pid);
    g_test_message("%u tasks: %s ...", tasks->len, (char *)tasks->pdata[0]);
    g_assert_cmpuint(tasks->len, >=, 1);
    for (guint i = 0; i < tasks->len; i++) {
        const char *list = strchr(tasks->pdata[i], ':') + 1;
        g_assert_cmpstr(list, ==, want);
    }
    close(p[1]);
    ioht_child_wait(&child, &r);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.code, ==, 0);
    ioht_result_clear(&r);
}

/* The last CPU this process may use, and the whole list; FALSE (skipped) with one. */
static gboolean
two_cpus(int *ret_last, char **ret_all)
{
    cpu_set_t allowed;

    g_assert_true(ioh_cpus_get(0, &allowed, NULL));
    if (CPU_COUNT(&allowed) < 2) {
        g_test_skip("this test may use one CPU only: no placement to observe");
        return FALSE;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        *ret_last = CPU_ISSET(c, &allowed) ? c : *ret_last;
    }
    *ret_all = ioh_cpus_format(&allowed);
    return TRUE;
}

static void
test_honoured(void)
{
    g_autofree char *all = NULL;
    g_autofree char *opt = NULL;
    g_autofree char *want = NULL;
    int last = -1;

    if (!two_cpus(&last, &all)) {
        return;
    }
    want = g_strdup_printf("%d", last);
    opt = g_strdup_printf("--cpus=%d", last);
    check_save(opt, want);
}

/* Without --cpus nothing changes: the same check sees every CPU (it can fail). */
static void
test_default(void)
{
    g_autofree char *all = NULL;
    int last = -1;

    if (!two_cpus(&last, &all)) {
        return;
    }
    check_save(NULL, all);
}

static void
test_refused(void)
{
    static const char *const bad[][2] = {
        { "--cpus=", "an empty CPU list" }, { "--cpus=x", "'x' is not a CPU number" },
        { "--cpus=0,", "an empty item" }, { "--cpus=2-1", "reversed" },
        { "--cpus=1024", "out of range" }, { "--cpus=0 1", "is not a CPU number" },
        { "--cpus=1023", "is not one this process may use" },
    };
    g_autofree char *img = g_build_filename(workdir, "refused", NULL);

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *args[] = { bad[i][0], "-", img, NULL };
        g_autofree char *err = NULL;
        int status = ioht_spawn_wait(&(IohtSpawn){ .args = args, .in_fd = -1,
                                                   .out_fd = -1 }, &err);

        g_assert_cmpint(ioht_exit_code(status), ==, 2);
        ioht_assert_contains(err, "iohelper: --cpus: ");
        ioht_assert_contains(err, bad[i][1]);
        g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
        g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    g_test_add_func("/helper/cpus/honoured", test_honoured);
    g_test_add_func("/helper/cpus/default", test_default);
    g_test_add_func("/helper/cpus/refused", test_refused);
    return ioht_run_tests(&workdir);
}
