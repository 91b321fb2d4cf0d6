/* test-wrap.c - faults seen through libwrap, as management code sees them: the helper
 * killed, the helper failing (its one line becomes the GError), the fds that reach the
 * helper, and load: 8 saves then 8 restores at once, twice, 2 GiB in all, byte-exact. */
#include "faults-util.h"
#include "ioh-test.h"
#include "iohwrap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define MiB (1024 * 1024)

/* The stream of worker @seed: xorshift64, the same on save and on restore. */
typedef struct {
    guint64 x;
} Gen;

static void
gen_init(Gen *g, guint32 seed)
{
    g->x = 0x9E3779B97F4A7C15ULL ^ ((guint64)seed << 32 | seed);
}

static void
gen_fill(Gen *g, guint64 *buf, gsize words)
{
    guint64 x = g->x;

    for (gsize i = 0; i < words; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = x;
    }
    g->x = x;
}

/* A wrap over a new fd of @path opened with @oflags (*@fd: the end to use); NULL, the fd
 * closed, when libwrap refuses. */
static IohWrap *
wrap_open(const char *path, int oflags, IohWrapFlags flags, int *fd, GError **error)
{
    IohWrap *wrap;

    *fd = open(path, oflags | O_CLOEXEC, 0600);
    g_assert_cmpint(*fd, >=, 0);
    wrap = ioh_wrap_new(fd, path, flags, NULL, error);
    if (!wrap) {
        close(*fd);
    }
    return wrap;
}

/* Saves @size bytes of stream @seed into @path through libwrap. */
static gboolean
wrap_save(const char *path, IohWrapFlags flags, guint32 seed, guint64 size, GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    g_autofree guint64 *buf = g_malloc(MiB);
    int fd;
    guint64 done = 0;
    Gen g;

    wrap = wrap_open(path, O_WRONLY | O_CREAT | O_TRUNC, flags, &fd, error);
    if (!wrap) {
        return FALSE;
    }
    gen_init(&g, seed);
    while (done < size) {
        gsize n = (gsize)MIN((guint64)MiB, size - done);
        IohtPumpOpts piece = { .data = buf, .len = n };
        gen_fill(&g, buf, MiB / 8);
        if (!ioht_feed(fd, &piece)) {
            break;    /* the helper went away: finish says why */
        }
        done += n;
    }
    close(fd);
    return ioh_wrap_finish(wrap, error);
}

/* Restores @path through libwrap and compares it with stream @seed. */
static gboolean
wrap_restore(const char *path, IohWrapFlags flags, guint32 seed, guint64 size,
             gboolean *ret_exact, GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    g_autofree guint64 *want = g_malloc(MiB);
    g_autoptr(GByteArray) got = g_byte_array_sized_new(MiB);
    int fd;
    guint64 done = 0;
    gboolean exact = TRUE;
    Gen g;

    wrap = wrap_open(path, O_RDONLY, flags, &fd, error);
    if (!wrap) {
        return FALSE;
    }
    gen_init(&g, seed);
    for (;;) {
        IohtPumpOpts piece = { .keep = got, .max = MiB };
        gsize have;

        g_byte_array_set_size(got, 0);
        gen_fill(&g, want, MiB / 8);
        have = (gsize)ioht_drain(fd, &piece);
        if (have == 0) {
            break;
        }
        if (done + have > size || memcmp(got->data, want, have) != 0) {
            exact = FALSE;
        }
        done += have;
        if (have < MiB) {
            break;
        }
    }
    close(fd);
    *ret_exact = exact && done == size;
    if (done != size) {
        g_test_message("%s: restored %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes",
                       path, done, size);
    }
    return ioh_wrap_finish(wrap, error);
}

/* ---- the helper killed under libwrap ---- */

static void
test_killed(gconstpointer data)
{
    int sig = GPOINTER_TO_INT(data);
    g_autofree char *path = g_build_filename(ft_workdir(), "img", NULL);
    g_autofree char *want = g_strdup_printf("helper killed by signal %d", sig);
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree guint64 *buf = g_malloc(MiB);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    Gen g;

    g_assert_cmpint(fd, >=, 0);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_DIRECT, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    gen_init(&g, 1);
    for (int i = 0; i < 8; i++) {
        IohtPumpOpts piece = { .data = buf, .len = MiB, .strict = TRUE };
        gen_fill(&g, buf, MiB / 8);
        g_assert_true(ioht_feed(fd, &piece));
    }
    g_assert_true(ft_wait_file_size(path, 4 * MiB));
    kill(ioh_wrap_get_pid(wrap), sig);
    ft_count_faults(1);
    /* The caller (QEMU) sees EPIPE on its next writes. */
    for (int i = 0; i < 64; i++) {
        IohtPumpOpts piece = { .data = buf, .len = MiB };
        gen_fill(&g, buf, MiB / 8);
        if (!ioht_feed(fd, &piece)) {
            break;
        }
    }
    close(fd);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    g_test_message("libwrap: %s", error->message);
    g_assert_nonnull(strstr(error->message, want));
    g_unlink(path);
}

/* ---- the helper failing: its message reaches the caller ---- */

static void
test_failure_message(gconstpointer data)
{
    const char *fault = data;
    g_autofree char *path = g_build_filename(ft_workdir(), "img", NULL);
    g_autoptr(GError) error = NULL;
    g_autofree char *saved = g_strdup(g_getenv("IOHELPER_PATH"));

    /* libwrap spawns $IOHELPER_PATH: the wrapper runs the real helper under the shim. */
    ft_use_faulty_helper(fault, path, saved);
    g_assert_false(wrap_save(path, IOH_WRAP_DIRECT, 2, 16 * MiB, &error));
    g_setenv("IOHELPER_PATH", saved, TRUE);
    g_unsetenv("IOH_FAULT");
    g_unsetenv("IOH_FAULT_PATH");
    ft_count_faults(ft_faults_logged());
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("libwrap: %s", error->message);
    g_assert_nonnull(strstr(error->message, "Input/output error"));
    g_assert_null(strchr(error->message, '\n'));
    g_unlink(path);
}

/* ---- only the fds it needs reach the helper ---- */

static void
test_fds(void)
{
    g_autofree char *path = g_build_filename(ft_workdir(), "img", NULL);
    g_autoptr(IohWrap) wrap = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree guint64 *buf = g_malloc(MiB);
    g_autofree char *fds = NULL;
    g_autofree char *want_img = g_strdup_printf("1 -> %s", path);
    const char *rundir = g_getenv("IOHELPER_RUNDIR");
    g_autofree char *budget_files = g_strdup_printf(" -> %s",
        rundir && *rundir ? rundir : "/run/iohelper");
    g_auto(GStrv) lines = NULL;
    int leaks[6], p[2], sv[2];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    guint n = 0;
    Gen g;

    /* fds a careless daemon holds without O_CLOEXEC */
    leaks[0] = open("/dev/null", O_RDONLY);
    leaks[1] = dup(leaks[0]);
    g_assert_cmpint(pipe(p), ==, 0);
    leaks[2] = p[0];
    leaks[3] = p[1];
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    leaks[4] = sv[0];
    leaks[5] = sv[1];
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error);
    g_assert_no_error(error);
    gen_init(&g, 3);
    gen_fill(&g, buf, MiB / 8);
    g_assert_true(ioht_feed(fd, &(IohtPumpOpts){ .data = buf, .len = MiB, .strict = TRUE }));
    g_assert_true(ft_wait_file_size(path, MiB));
    fds = ft_proc_fds(ioh_wrap_get_pid(wrap));
    g_test_message("helper fds (save through libwrap):\n%s", fds);
    lines = g_strsplit(fds, "\n", -1);
    for (char **l = lines; *l && **l; l++) {
        int num = atoi(*l);
        if (strstr(*l, "anon_inode:")) {
            continue;   /* the engine's own eventfd */
        }
        if (strstr(*l, budget_files)) {
            continue;   /* the budget's lock or marks, open for an instant every 100 ms */
        }
        n++;
        if ((num == 0 || num == 2 || num == 3) && strstr(*l, "pipe:")) {
            continue;
        }
        if (num == 1 && g_str_equal(*l, want_img)) {
            continue;
        }
        g_test_fail_printf("fd that the helper does not need: %s", *l);
    }
    g_assert_cmpuint(n, ==, 4);
    close(fd);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    for (gsize i = 0; i < G_N_ELEMENTS(leaks); i++) {
        close(leaks[i]);
    }
    g_unlink(path);
}

/* ---- load: 8 at once ---- */

typedef struct {
    guint id;
    char *path;
    IohWrapFlags flags;
    guint64 size;
    gboolean save;
    gboolean ok, exact;
    char *error;
} Job;

static gpointer
job_thread(gpointer data)
{
    Job *j = data;
    g_autoptr(GError) error = NULL;

    if (j->save) {
        j->ok = wrap_save(j->path, j->flags, j->id, j->size, &error);
        j->exact = TRUE;
    } else {
        j->ok = wrap_restore(j->path, j->flags, j->id, j->size, &j->exact, &error);
    }
    if (error) {
        j->error = g_strdup(error->message);
    }
    return NULL;
}

static void
run_jobs(Job *jobs, guint n, gboolean save)
{
    GThread *t[16];

    for (guint i = 0; i < n; i++) {
        jobs[i].save = save;
        t[i] = g_thread_new("job", job_thread, &jobs[i]);
    }
    for (guint i = 0; i < n; i++) {
        g_thread_join(t[i]);
        if (!jobs[i].ok || !jobs[i].exact) {
            if (jobs[i].ok) {
                ft_total_data_loss++;
            }
            g_test_fail_printf("%s %s: ok=%d exact=%d %s", save ? "save" : "restore",
                               jobs[i].path, jobs[i].ok, jobs[i].exact,
                               jobs[i].error ? jobs[i].error : "");
        }
    }
}

static void
test_load(void)
{
    /* 8 jobs x 64 MiB, saved then restored, in 2 rounds: 2 GiB through 32 helpers, with
     * 512 MiB on disk at most. */
    const guint n = 8, rounds = 2;
    const guint64 size = 64 * MiB;
    static const IohWrapFlags flags[] = {
        IOH_WRAP_DIRECT, IOH_WRAP_FADVISE, IOH_WRAP_POLLABLE,
        IOH_WRAP_DIRECT | IOH_WRAP_POLLABLE,
    };
    gint64 t0 = g_get_monotonic_time();
    guint64 total = 0;

    for (guint round = 0; round < rounds; round++) {
        Job jobs[8];
        for (guint i = 0; i < n; i++) {
            jobs[i] = (Job){ .id = round * 100 + i, .flags = flags[i % G_N_ELEMENTS(flags)],
                             .size = size + i * 4097 };
            jobs[i].path = g_strdup_printf("%s/load-%u", ft_workdir(), i);
        }
        run_jobs(jobs, n, TRUE);
        for (guint i = 0; i < n; i++) {
            g_assert_cmpuint(ft_file_size(jobs[i].path), ==, jobs[i].size);
        }
        run_jobs(jobs, n, FALSE);
        for (guint i = 0; i < n; i++) {
            total += 2 * jobs[i].size;
            g_unlink(jobs[i].path);
            g_free(jobs[i].path);
            g_free(jobs[i].error);
        }
    }
    g_test_message("load: %u saves and %u restores, 8 at once, %" G_GUINT64_FORMAT
                   " bytes (%.2f GiB) byte-exact in %.1f s", n * rounds, n * rounds, total,
                   (double)total / (1 << 30), (g_get_monotonic_time() - t0) / 1e6);
    g_assert_cmpuint(total, >=, 2ULL << 30);
}

int
main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_data_func("/faults/wrap/killed/KILL", GINT_TO_POINTER(SIGKILL), test_killed);
    g_test_add_data_func("/faults/wrap/killed/TERM", GINT_TO_POINTER(SIGTERM), test_killed);
    g_test_add_data_func("/faults/wrap/helper-fails/write-EIO", "write:@3M:EIO",
                         test_failure_message);
    g_test_add_data_func("/faults/wrap/helper-fails/fdatasync-EIO", "fdatasync:1:EIO",
                         test_failure_message);
    g_test_add_data_func("/faults/wrap/helper-fails/close-EIO", "close:1:EIO",
                         test_failure_message);
    g_test_add_func("/faults/wrap/only-needed-fds", test_fds);
    g_test_add_func("/faults/wrap/load-8-at-once", test_load);
    ret = g_test_run();
    ft_report();
    ft_cleanup();
    return ret;
}
