/* test-cpus.c - iohelper --cpus=LIST (issue 30): the helper, each of its threads and its
 * io_uring workers run on the CPUs given, read from /proc/PID/task/TID/status
 * (Cpus_allowed_list) while a --direct save from a real pipe runs; without --cpus every
 * one runs where this test may; hostile lists are usage errors (exit 2, one line naming
 * --cpus), and a CPU outside this process's affinity is refused naming the cause; given
 * one CPU, zstd gets one worker by default. On a
 * machine where this test may use only one CPU, the placement tests skip. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ioh-test.h"

#define MiB (1024 * 1024)

static char *workdir;

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
    IohtResult r = { 0 };
    IohtChild child;
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    child = ioht_spawn(&(IohtSpawn){ .args = args, .in_fd = p[0], .out_fd = -1 });
    close(p[0]);
    g_assert_true(ioht_feed(p[1], &feed));
    ioht_assert_tasks_on(child.pid, direct ? 2 : 1, want);
    close(p[1]);
    ioht_child_wait(&child, &r);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.code, ==, 0);
    ioht_result_clear(&r);
}

/* With --cpus=LAST (@data set) every task runs on LAST; without, the same check sees
 * every CPU (it can fail). */
static void
test_placed(gconstpointer data)
{
    g_autofree char *all = NULL;
    g_autofree char *last = NULL;
    g_autofree char *opt = NULL;

    if (!ioht_two_cpus(&last, &all)) {
        return;
    }
    opt = data ? g_strdup_printf("--cpus=%s", last) : NULL;
    check_save(opt, data ? last : all);
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

/* The memory zstd's compressor wanted (its --stats=json), which grows with its workers,
 * for a save of 4 MiB with --cpus=@cpu and @threads ("" for the default). */
static gint64
zstd_want(const char *cpu, const char *threads)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autofree char *err = NULL;
    JsonObject *o;

    g_assert_cmpint(ioht_sh(workdir, &err, "head -c 4194304 /dev/zero | $H --cpus=%s "
                            "--compress=zstd:1 %s --stats=json - z.img", cpu, threads), ==, 0);
    o = ioht_sh_last_json(err, p);
    o = json_object_get_object_member(json_object_get_object_member(o, "memory"), "layers");
    return json_object_get_int_member(json_object_get_object_member(o, "zstd"), "want");
}

/* Given one CPU, the helper's default number of zstd workers is one (not one per online
 * CPU, all on that CPU): its compressor wants what it wants with --threads=1. */
static void
test_threads(void)
{
    g_autofree char *all = NULL;
    g_autofree char *last = NULL;

    if (!ioht_two_cpus(&last, &all)) {
        return;
    }
    g_assert_cmpint(zstd_want(last, ""), ==, zstd_want(last, "--threads=1"));
    g_assert_cmpint(zstd_want(all, ""), >, zstd_want(all, "--threads=1"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    g_test_add_data_func("/helper/cpus/honoured", GINT_TO_POINTER(1), test_placed);
    g_test_add_data_func("/helper/cpus/default", NULL, test_placed);
    g_test_add_func("/helper/cpus/refused", test_refused);
    g_test_add_func("/helper/cpus/threads", test_threads);
    return ioht_run_tests(&workdir);
}
