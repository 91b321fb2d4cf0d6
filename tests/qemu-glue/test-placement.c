/* test-placement.c - qemu-iohelper --helper-cpus (issue 30): the helper of a save or a
 * restore of a real QEMU (TCG) started as under `taskset -c N` runs on CPU N (every task
 * of it, read from /proc while a save, throttled to last seconds, runs; a restore's
 * helper is given the same --cpus), and --stats=json says so and why; an unpinned QEMU, or --helper-cpus=all, leaves the helper where the tool
 * may run; a list is taken as it is; a bad one is a usage error. A helper that compresses
 * (zstd's threads) is left on every CPU by auto, and --stats says why. Skipped without QEMU,
 * and the placement cases where this test may use one CPU only. */
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ioh-cpus.h"
#include "ioh-test.h"
#include "qg-fake.h"
#include "qg-test.h"

static char *workdir, *data_file, *other_file;
static char *first_cpu, *last_cpu, *all_cpus;

/* The helper as a wrapper: records its arguments in $IOH_ARGS, runs the real one, and
 * once it has its threads (or after 2 s) appends every task's Cpus_allowed_list to
 * $IOH_SEEN, then passes on its exit status. */
static const char spy_script[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> \"$IOH_ARGS\"\n"
    "exec 9<&0\n"    /* an asynchronous command's stdin is /dev/null, unless redirected */
    "\"$IOH_REAL_HELPER\" \"$@\" <&9 9<&- &\n"
    "p=$!\n"
    "for i in $(seq 40); do\n"
    "  [ \"$(ls /proc/$p/task 2>/dev/null | wc -l)\" -ge 2 ] && break\n"
    "  sleep 0.05\n"
    "done\n"
    "grep -h Cpus_allowed_list /proc/$p/task/*/status >> \"$IOH_SEEN\" 2>/dev/null\n"
    "wait $p\n";

/* ioht_two_cpus() into the globals, freeing what they held. */
static gboolean
two_cpus(void)
{
    g_clear_pointer(&last_cpu, g_free);
    g_clear_pointer(&all_cpus, g_free);
    return ioht_two_cpus(&last_cpu, &all_cpus);
}

static gboolean
need_two(void)
{
    if (!qgt_qemu_binary()) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
        return FALSE;
    }
    return two_cpus();
}

/* Every line the spy wrote since the last call is "Cpus_allowed_list:\t@want"; at least
 * one was written. */
static void
assert_seen(const char *seen_path, const char *want)
{
    g_autofree char *seen = NULL;
    g_auto(GStrv) lines = NULL;
    g_autofree char *line = g_strdup_printf("Cpus_allowed_list:\t%s", want);
    guint n = 0;

    g_assert_true(g_file_get_contents(seen_path, &seen, NULL, NULL));
    g_test_message("the helper's tasks: %s", seen);
    lines = g_strsplit(g_strchomp(seen), "\n", -1);
    for (guint i = 0; lines[i]; i++, n++) {
        g_assert_cmpstr(lines[i], ==, line);
    }
    g_assert_cmpuint(n, >=, 1);
    g_unlink(seen_path);
}

/* --stats=json's helper_cpus and helper_cpus_why (containing @why) of the tool's @out. */
static void
assert_stats(const char *out, const char *want, const char *why)
{
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = ioht_sh_last_json(out, p);

    g_assert_cmpstr(json_object_get_string_member(o, "helper_cpus"), ==, want);
    ioht_assert_contains(json_object_get_string_member(o, "helper_cpus_why"), why);
}

typedef struct {
    gboolean pin;          /* QEMU as under taskset -c FIRST */
    const char *opt;       /* --helper-cpus=..., NULL: none (auto) */
    gboolean want_first;   /* the helper on FIRST; else on every CPU (or on LAST) */
    gboolean want_last;
    const char *why;       /* in helper_cpus_why */
    const char *compress;  /* the save's --compress=..., NULL: raw */
} Case;

/* The helpers' arguments since the last call hold @want (NULL: no --cpus at all). */
static void
assert_args(const char *args_path, const char *want)
{
    g_autofree char *args = NULL;
    g_autofree char *opt = want ? g_strdup_printf(" --cpus=%s", want) : NULL;

    g_assert_true(g_file_get_contents(args_path, &args, NULL, NULL));
    if (opt) {
        ioht_assert_contains(args, opt);
    } else {
        g_assert_null(strstr(args, "--cpus"));
    }
    g_unlink(args_path);
}

static void
test_case(gconstpointer data)
{
    const Case *c = data;
    g_autofree char *img = g_build_filename(workdir, "p.img", NULL);
    g_autofree char *seen = g_build_filename(workdir, "seen", NULL);
    g_autofree char *args = g_build_filename(workdir, "args", NULL);
    g_autofree char *out = NULL;
    g_autofree char *opt = NULL;
    const char *want, *said;
    gboolean placed = c->want_first || c->want_last;
    const char *save_args[6] = { "--bypass-cache", "--stats=json", "--max-bandwidth=16", NULL,
                                 NULL, NULL };
    int n = 3;

    if (!need_two()) {
        return;
    }
    opt = c->want_last ? g_strdup_printf("--helper-cpus=%s", last_cpu) : g_strdup(c->opt);
    want = c->want_first ? first_cpu : c->want_last ? last_cpu : all_cpus;
    said = placed ? want : "all";
    g_setenv("IOH_SEEN", seen, TRUE);
    g_setenv("IOH_ARGS", args, TRUE);
    qgt_qemu_cpu = c->pin ? (int)g_ascii_strtoll(first_cpu, NULL, 10) : -1;
    if (opt) {
        save_args[n++] = opt;
    }
    if (c->compress) {
        save_args[n++] = c->compress;
    }
    out = qgt_save_guest(data_file, img, save_args, TRUE, NULL, NULL);
    assert_stats(out, said, c->why);
    assert_seen(seen, want);
    assert_args(args, placed ? want : NULL);
    g_free(out);
    out = qgt_restore_guest(img, other_file, (const char *const[]){ opt, NULL }, data_file);
    assert_stats(out, said, c->why);
    assert_args(args, placed ? want : NULL);
    qgt_qemu_cpu = -1;
    g_unlink(img);
    g_unlink(seen);
}

static void
test_usage(void)
{
    static const char *const bad[][2] = {
        { "--helper-cpus=", "an empty CPU list" }, { "--helper-cpus=some", "not a CPU" },
        { "--helper-cpus=3-1", "reversed" }, { "--helper-cpus=4096", "out of range" },
        /* parses, but no process here may use it: refused before QEMU is touched, not
         * by each helper once it is (a restore's QEMU then quit) */
        { "--helper-cpus=1023", "--helper-cpus takes auto, all or a CPU list: CPU 1023 is "
          "not one this process may use" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *args[] = { "save", "--qmp", "/nonexistent/q.sock", bad[i][0], "x.img",
                               NULL };
        qgt_assert_usage(args, bad[i][1]);
    }
}

typedef struct {
    const char *const *args;
    char *err;
    int code;
} ToolRun;

/* The tool run from a thread on every CPU this test may use (the tool inherits that),
 * while the main thread, whose affinity is this process's, is pinned elsewhere. */
static gpointer
tool_thread(gpointer data)
{
    ToolRun *r = data;
    cpu_set_t all;

    g_assert_true(ioh_cpus_parse(all_cpus, &all, NULL));
    g_assert_cmpint(sched_setaffinity(0, sizeof(all), &all), ==, 0);
    r->code = qgt_tool_run_timeout(r->args, 60, NULL, &r->err);
    return NULL;
}

/* The QMP socket's peer is not QEMU (a proxy in between, a reused pid: here this test,
 * as the hostile peer qg-fake.c, pinned to LAST): auto must neither pin the helpers to
 * the peer's CPUs nor call it QEMU. The save fails at query-status; the debug line
 * before says where the helper would have run. */
static void
test_not_qemu(void)
{
    g_autoptr(QgtFake) f = NULL;
    g_autofree char *img = g_build_filename(workdir, "nq.img", NULL);
    const char *args[] = { "save", "--qmp", NULL, img, NULL };
    ToolRun r = { args, NULL, -1 };
    cpu_set_t all, last;

    if (!two_cpus()) {
        return;
    }
    f = qgt_fake_start();
    args[2] = qgt_fake_socket(f);
    qgt_fake_reply(f, "query-status", "!{\"error\": {\"class\": \"GenericError\", "
                   "\"desc\": \"not QEMU\"}, \"id\": @ID@}", NULL);
    g_assert_true(ioh_cpus_parse(all_cpus, &all, NULL));
    g_assert_true(ioh_cpus_parse(last_cpu, &last, NULL));
    g_setenv("G_MESSAGES_DEBUG", "iohelper", TRUE);
    g_assert_cmpint(sched_setaffinity(0, sizeof(last), &last), ==, 0);
    g_thread_join(g_thread_new("tool", tool_thread, &r));
    g_assert_cmpint(sched_setaffinity(0, sizeof(all), &all), ==, 0);
    g_unsetenv("G_MESSAGES_DEBUG");
    g_assert_cmpint(r.code, ==, 1);
    ioht_assert_contains(r.err, "helper CPUs: all (auto: the QMP socket's peer (pid ");
    ioht_assert_contains(r.err, ") is not known to be QEMU");
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    g_free(r.err);
}

/* The spy in place of the helper, the first CPU this test may use. */
static void
setup(void)
{
    g_autofree char *spy = g_build_filename(workdir, "spy-helper", NULL);
    cpu_set_t allowed;

    g_assert_true(g_file_set_contents(spy, spy_script, -1, NULL));
    g_assert_cmpint(g_chmod(spy, 0755), ==, 0);
    g_setenv("IOH_REAL_HELPER", g_getenv("IOHELPER_PATH"), TRUE);
    g_setenv("IOHELPER_PATH", spy, TRUE);
    g_assert_cmpint(sched_getaffinity(0, sizeof(allowed), &allowed), ==, 0);
    for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
        if (CPU_ISSET(c, &allowed)) {
            g_free(first_cpu);
            first_cpu = g_strdup_printf("%d", c);
        }
    }
}

int
main(int argc, char **argv)
{
    static const Case pinned = { TRUE, NULL, TRUE, FALSE, "runs on CPUs ", NULL };
    static const Case unpinned = { FALSE, NULL, FALSE, FALSE, "is not pinned", NULL };
    static const Case all = { TRUE, "--helper-cpus=all", FALSE, FALSE, "--helper-cpus=all", NULL };
    static const Case list = { FALSE, NULL, FALSE, TRUE, "--helper-cpus", NULL };   /* =LAST */
    static const Case compressed = { TRUE, NULL, FALSE, FALSE, "compressed or encrypted",
                                     "--compress=zstd:1" };

    g_test_init(&argc, &argv, NULL);
    if (argc != 2) {
        g_printerr("%s: the first argument is the qemu-iohelper to test\n", argv[0]);
        return 2;
    }
    qgt_set_tool(argv[1]);
    qgt_guest_files(&workdir, &data_file, &other_file, 30);
    setup();
    g_test_add_func("/qemu/placement/usage", test_usage);
    g_test_add_func("/qemu/placement/not-qemu", test_not_qemu);
    g_test_add_data_func("/qemu/placement/pinned", &pinned, test_case);
    g_test_add_data_func("/qemu/placement/unpinned", &unpinned, test_case);
    g_test_add_data_func("/qemu/placement/all", &all, test_case);
    g_test_add_data_func("/qemu/placement/list", &list, test_case);
    g_test_add_data_func("/qemu/placement/compressed", &compressed, test_case);
    return ioht_run_tests(&workdir);
}
