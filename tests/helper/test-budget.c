/* test-budget.c - the ring that grows and shrinks, and the host-wide memory budget
 * (--memory-budget, leases under $IOHELPER_RUNDIR): real helpers on real pipes and files,
 * leases sampled while they run, helpers killed with SIGKILL and restarted. */
#include "ioh-test.h"
#include "ioh-budget.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024 * 1024)

typedef struct {
    IohtChild child;
    IohtPump *feed;
    int in_w;                /* without a feed: the write end of the helper's stdin */
} Save;

/* The environment of a helper: this rundir, no host config, debug lines. */
static char **
helper_env(const char *rundir)
{
    char **env = g_get_environ();

    env = g_environ_setenv(env, "IOHELPER_RUNDIR", rundir, TRUE);
    env = g_environ_setenv(env, "IOHELPER_CONF", "/nonexistent/iohelper.conf", TRUE);
    return g_environ_setenv(env, "G_MESSAGES_DEBUG", "iohelper", TRUE);
}

/* Starts `iohelper MODE OPT - DST` fed as @feed says (NULL: by the caller, sv.in_w),
 * writing through @slow (NULL: at the disk's own speed). */
static Save
save_start_mode(const char *mode, const char *opt, const char *dst, const char *rundir,
                const IohtPumpOpts *feed, IohtThrottle *slow)
{
    g_auto(GStrv) env = helper_env(rundir);
    const char *args[] = { mode, opt, "-", dst, NULL };
    IohtSpawn s = { .args = args, .env = (const char *const *)env, .out_fd = -1,
                    .setup = slow ? ioht_throttle_enter : NULL, .setup_data = slow };
    Save sv = { .in_w = -1 };
    int p[2];

    g_assert_no_errno(pipe2(p, O_CLOEXEC));
    s.in_fd = p[0];
    sv.child = ioht_spawn(&s);
    close(p[0]);
    if (feed) {
        sv.feed = ioht_feed_start(p[1], feed);
    } else {
        sv.in_w = p[1];
    }
    return sv;
}

/* Starts `iohelper --direct [--memory-budget=B] - DST` fed as @feed says, through @slow. */
static Save
save_start(const char *dst, const char *rundir, const char *budget, const IohtPumpOpts *feed,
           IohtThrottle *slow)
{
    g_autofree char *opt = budget ? g_strdup_printf("--memory-budget=%s", budget) : NULL;

    return save_start_mode("--direct", opt ? opt : "--ring=8", dst, rundir, feed, slow);
}

/* Waits for the save; its stderr into *ret_err (free it). Its exit code. */
static int
save_wait(Save *sv, char **ret_err)
{
    IohtResult r = { 0 };
    int code;

    ioht_child_wait(&sv->child, &r);
    if (sv->feed) {
        ioht_pump_join(sv->feed, NULL);
    }
    code = r.code;
    if (ret_err) {
        *ret_err = g_strdup(r.err);
    }
    ioht_result_clear(&r);
    return code;
}

static char *
make_src(const IohtDir *fx, const char *name, guint64 size, guint32 seed)
{
    char *path = ioht_dir_path(fx, name);

    ioht_write_random_file(path, size, seed);
    return path;
}

/* A disk of 150 MB/s for the O_DIRECT writes of the helpers started through it, so that
 * the writer is the bottleneck (a machine's own disk may write faster than a pipe fills:
 * 1 GB/s seen here, and the ring then never grows); NULL, the test skipped, where there
 * is none. */
static IohtThrottle *
slow_disk(const IohtDir *fx)
{
    g_autofree char *why = NULL;
    IohtThrottle *t = ioht_throttle_new(fx->dir, 150, &why);

    if (!t) {
        g_test_skip(why);
    }
    return t;
}

/* FALSE (the test skipped) where O_DIRECT is refused: the ring serves O_DIRECT saves. */
static gboolean
has_direct(const IohtDir *fx)
{
    if (!ioht_dir_supports_direct(fx->dir)) {
        g_test_skip("no O_DIRECT here");
        return FALSE;
    }
    return TRUE;
}

/* One save of @src fed as @feed (its path by default) with @budget (NULL: none) through
 * @slow, which must succeed byte-exact: what the helper logged (free it). */
static char *
save_checked(const IohtDir *fx, const char *src, const char *budget, IohtPumpOpts *feed,
             IohtThrottle *slow)
{
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    IohtPumpOpts whole = { .path = src };
    char *err = NULL;
    Save sv = save_start(dst, run, budget, feed ? feed : &whole, slow);

    g_assert_cmpint(save_wait(&sv, &err), ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    return err;
}

/* A fast producer, a slow O_DIRECT sink: the writer is the bottleneck, the ring grows. */
static void
test_grow(IohtDir *fx, gconstpointer data)
{
    g_autoptr(IohtThrottle) slow = NULL;
    g_autofree char *src = NULL;
    g_autofree char *err = NULL;

    (void)data;
    if (!has_direct(fx) || !(slow = slow_disk(fx))) {
        return;
    }
    src = make_src(fx, "src", 96 * MIB, 1);
    err = save_checked(fx, src, NULL, NULL, slow);
    g_assert_nonnull(strstr(err, "strategy: ring of 2 buffers"));
    g_assert_nonnull(strstr(err, "ring: grown to 3 buffers"));
}

/* --ring=3 of 1 MiB buffers: a huge page of two, and a third alone in the next 2 MiB,
 * which the allocation ends inside. Growing into it must stay inside the ring's arrays
 * and its memory (the sanitized helper aborted on reading past them). */
static void
test_grow_odd(IohtDir *fx, gconstpointer data)
{
    g_autoptr(IohtThrottle) slow = NULL;
    g_autofree char *src = NULL;
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *err = NULL;
    IohtPumpOpts feed = { 0 };
    Save sv;

    (void)data;
    if (!has_direct(fx) || !(slow = slow_disk(fx))) {
        return;
    }
    src = make_src(fx, "src", 64 * MIB, 10);
    feed.path = src;
    sv = save_start_mode("--direct", "--ring=3", dst, run, &feed, slow);
    g_assert_cmpint(save_wait(&sv, &err), ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    g_assert_nonnull(strstr(err, "strategy: ring of 2 buffers"));
    g_assert_nonnull(strstr(err, "ring: grown to 3 buffers"));
}

/* A producer that stops for 1.5 s: the ring gives back all but one buffer. */
static void
test_shrink_stall(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = NULL;
    g_autofree char *err = NULL;
    IohtPumpOpts feed = { .stall_at = 40 * MIB, .stall_ms = 1500 };

    (void)data;
    if (!has_direct(fx)) {
        return;
    }
    src = make_src(fx, "src", 64 * MIB, 2);
    feed.path = src;
    err = save_checked(fx, src, NULL, &feed, NULL);
    g_assert_nonnull(strstr(err, "ring: shrunk to 1 buffers (a stall"));
}

typedef struct {
    const char *bytes;
    gsize len;
    int fd;
} SlowFeed;

/* 64 MiB at full speed, then the rest in writes of 1 to 4093 bytes, 4 ms apart each
 * 64 KiB (1.5 s or more for 24 MiB: the ring keeps a buffer it grew by for a second). */
static gpointer
slow_feed_main(gpointer data)
{
    SlowFeed *f = data;
    IohtPumpOpts fast = { .data = f->bytes, .len = 64 * MIB };
    gsize off = 64 * MIB;

    ioht_feed(f->fd, &fast);
    for (guint i = 0; off < f->len; i++) {
        IohtPumpOpts slow = { .data = f->bytes + off, .len = MIN(f->len - off, 64 * 1024),
                              .vary_pieces = TRUE };

        ioht_feed(f->fd, &slow);
        off += slow.len;
        g_usleep(4000);
    }
    close(f->fd);
    return NULL;
}

/* A producer that turns slow after a fast start (the disk slower than the one, faster
 * than the other): the ring that grew gives buffers back. */
static void
test_shrink_slow(IohtDir *fx, gconstpointer data)
{
    g_autoptr(IohtThrottle) slow = NULL;
    g_autofree char *src = make_src(fx, "src", 88 * MIB, 3);
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *err = NULL;
    g_autofree char *bytes = NULL;
    SlowFeed f = { 0 };
    GThread *t;
    Save sv;

    (void)data;
    if (!has_direct(fx) || !(slow = slow_disk(fx))) {
        return;
    }
    g_assert_true(g_file_get_contents(src, &bytes, &f.len, NULL));
    f.bytes = bytes;
    sv = save_start(dst, run, NULL, NULL, slow);
    f.fd = sv.in_w;
    t = g_thread_new("slow-feed", slow_feed_main, &f);
    g_assert_cmpint(save_wait(&sv, &err), ==, 0);
    g_thread_join(t);
    g_assert_true(ioht_files_equal(src, dst));
    g_assert_nonnull(strstr(err, "ring: grown to 3 buffers"));
    g_assert_nonnull(strstr(err, "(the producer is the bottleneck)"));
}

typedef struct {
    const char *run;
    gint64 max;
    gint samples;
    gint stop;
} Sampler;

/* Sums the leases (under their lock) every 2 ms: the most seen. */
static gpointer
sampler_main(gpointer data)
{
    Sampler *s = data;

    for (; !g_atomic_int_get(&s->stop); s->samples++, g_usleep(2000)) {
        s->max = MAX(s->max, ioh_budget_sum(s->run));
    }
    return NULL;
}

/* The lease files in @run. */
static gsize
count_leases(const char *run)
{
    g_autofree char *pattern = g_strdup_printf("%s/*.lease", run);
    glob_t g = { 0 };
    gsize n = glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 0;

    globfree(&g);
    return n;
}

#define K 4
#define BUDGET (3 * MIB)

/* Starts save @i of the budget test (slow-ish: a pause halfway, so that kills land). */
static Save
budget_start(IohtDir *fx, const char *src, const char *run, guint i)
{
    g_autofree char *dst = g_strdup_printf("%s/dst%u", fx->dir, i);
    IohtPumpOpts feed = { .path = src, .stall_at = 16 * MIB, .stall_ms = 100 };

    return save_start(dst, run, "3M", &feed, NULL);
}

/* K helpers share 3 MiB beyond their floors; helpers are killed and restarted while the
 * others run: the leases never sum above the budget and the dead ones are reclaimed. */
static void
test_budget_kills(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = make_src(fx, "src", 48 * MIB, 4);
    g_autofree char *run = ioht_dir_path(fx, "run");
    Sampler smp = { .run = run };
    GThread *t;
    Save sv[K];
    guint done = 0;

    (void)data;
    if (!has_direct(fx)) {
        return;
    }
    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    t = g_thread_new("sampler", sampler_main, &smp);
    for (guint i = 0; i < K; i++) {
        sv[i] = budget_start(fx, src, run, i);
    }
    for (guint round = 0; round < 12; round++) {
        guint i = g_test_rand_int_range(0, K);

        g_usleep(g_test_rand_int_range(50, 250) * 1000);
        kill(sv[i].child.pid, SIGKILL);
        save_wait(&sv[i], NULL);
        sv[i] = budget_start(fx, src, run, i);
    }
    for (guint i = 0; i < K; i++) {
        g_autofree char *dst = g_strdup_printf("%s/dst%u", fx->dir, i);

        g_assert_cmpint(save_wait(&sv[i], NULL), ==, 0);
        g_assert_true(ioht_files_equal(src, dst));
        done++;
    }
    g_atomic_int_set(&smp.stop, 1);
    g_thread_join(t);
    g_test_message("%d samples, most leased at once %" G_GINT64_FORMAT " of %d", smp.samples,
                   smp.max, BUDGET);
    g_assert_cmpint(done, ==, K);
    g_assert_cmpint(smp.samples, >, 10);
    g_assert_cmpint(smp.max, <=, BUDGET);
    g_assert_cmpint(ioh_budget_sum(run), ==, 0);
    g_assert_cmpint(count_leases(run), ==, 0);    /* the killed ones' too */
}

/* A process holding a budget of its own in a shared rundir, taking what it is told to
 * (the helpers' way: ioh_budget_take in pieces of 1 MiB). */
typedef struct {
    GPid pid;
    int cmd;                 /* bytes wanted, one guint64 each */
    int ans;                 /* bytes got */
} Holder;

static void
holder_main(const char *run, guint64 limit, int cmd, int ans)
{
    g_autoptr(IohBudget) b = ioh_budget_new(limit, run);
    guint64 want, got;

    while (read(cmd, &want, sizeof(want)) == sizeof(want)) {
        got = ioh_budget_take(b, want, MIB);
        if (write(ans, &got, sizeof(got)) != sizeof(got)) {
            break;
        }
    }
}

/* Starts a holder; the others' ends (@h, @n of them, -1 when closed) are closed in it, so
 * that each sees EOF when the test closes its commands. */
static Holder
holder_start(const char *run, guint64 limit, const Holder *h_others, guint n)
{
    Holder h;
    int c[2], a[2];

    g_assert_no_errno(pipe2(c, O_CLOEXEC));
    g_assert_no_errno(pipe2(a, O_CLOEXEC));
    h.pid = fork();
    g_assert_cmpint(h.pid, >=, 0);
    if (h.pid == 0) {
        for (guint i = 0; i < n; i++) {
            close(h_others[i].cmd);
            close(h_others[i].ans);
        }
        close(c[1]);
        close(a[0]);
        holder_main(run, limit, c[0], a[1]);
        _exit(0);
    }
    close(c[0]);
    close(a[1]);
    h.cmd = c[1];
    h.ans = a[0];
    return h;
}

static guint64
holder_take(const Holder *h, guint64 want)
{
    guint64 got = G_MAXUINT64;

    g_assert_cmpint(write(h->cmd, &want, sizeof(want)), ==, sizeof(want));
    g_assert_cmpint(read(h->ans, &got, sizeof(got)), ==, sizeof(got));
    return got;
}

/* Ends @h: by EOF on its commands (it removes its lease) or by SIGKILL (it cannot). */
static void
holder_end(Holder *h, gboolean killed)
{
    int status = 0;

    if (killed) {
        kill(h->pid, SIGKILL);
    }
    close(h->cmd);
    close(h->ans);
    h->cmd = h->ans = -1;
    g_assert_cmpint(waitpid(h->pid, &status, 0), ==, h->pid);
}

#define FAIR_N 3
#define FAIR_BUDGET (6 * MIB)

/* FAIR_N processes each with a budget of 6 MiB in one rundir: each gets at most its fair
 * share (budget / live users) though the budget has room, the share grows when one is
 * killed (its lease reclaimed), a newcomer gets nothing while the budget is full, and the
 * leases never sum above the budget. */
static void
test_fair_share(IohtDir *fx, gconstpointer data)
{
    g_autofree char *run = ioht_dir_path(fx, "run");
    Holder h[FAIR_N + 1];

    (void)data;
    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    for (guint i = 0; i < FAIR_N; i++) {
        h[i] = holder_start(run, FAIR_BUDGET, h, i);
        g_assert_cmpuint(holder_take(&h[i], 0), ==, 0);    /* counted in, holding nothing */
    }
    g_assert_cmpuint(count_leases(run), ==, FAIR_N);
    for (guint i = 0; i < FAIR_N; i++) {
        g_assert_cmpuint(holder_take(&h[i], FAIR_BUDGET), ==, FAIR_BUDGET / FAIR_N);
    }
    g_assert_cmpuint(holder_take(&h[0], MIB), ==, 0);
    g_assert_cmpint(ioh_budget_sum(run), ==, FAIR_BUDGET);
    holder_end(&h[FAIR_N - 1], TRUE);
    /* FAIR_N - 1 left: a share of 3 MiB each */
    g_assert_cmpuint(holder_take(&h[0], FAIR_BUDGET), ==, MIB);
    g_assert_cmpuint(holder_take(&h[1], FAIR_BUDGET), ==, MIB);
    g_assert_cmpint(ioh_budget_sum(run), ==, FAIR_BUDGET);
    h[FAIR_N] = holder_start(run, FAIR_BUDGET, h, FAIR_N);
    g_assert_cmpuint(holder_take(&h[FAIR_N], FAIR_BUDGET), ==, 0);    /* the budget is full */
    g_assert_cmpint(ioh_budget_sum(run), ==, FAIR_BUDGET);
    holder_end(&h[0], FALSE);
    g_assert_cmpuint(holder_take(&h[FAIR_N], FAIR_BUDGET), ==, 3 * MIB);    /* 6 / 2 */
    holder_end(&h[1], FALSE);
    holder_end(&h[FAIR_N], FALSE);
    g_assert_cmpint(ioh_budget_sum(run), ==, 0);
    g_assert_cmpuint(count_leases(run), ==, 0);
}

/* A budget with no room: the helper works with its one buffer, byte-exact. */
static void
test_budget_none_left(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = NULL;
    g_autofree char *err = NULL;

    (void)data;
    if (!has_direct(fx)) {
        return;
    }
    src = make_src(fx, "src", 24 * MIB, 5);
    err = save_checked(fx, src, "0", NULL, NULL);
    g_assert_nonnull(strstr(err, "strategy: ring of 1 buffers"));
    g_assert_null(strstr(err, "ring: grown"));
}

/* libvirt's form (an O_DIRECT save) passes no options: the budget comes from $IOHELPER_CONF's key file; a
 * value that is not a size is a usage error naming the file. */
static void
test_conf(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = make_src(fx, "src", 24 * MIB, 6);
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *conf = ioht_dir_path(fx, "iohelper.conf");
    g_autofree char *err = NULL;
    g_auto(GStrv) env = helper_env(run);
    const char *args[] = { dst, "1", NULL };
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
    int fds[] = { out };
    IohtSpawn s = { .args = args, .in_fd = in, .out_fd = -1, .extra_fds = fds,
                    .extra_targets = (const int[]){ 1 }, .n_extra = 1 };

    (void)data;
    if (out < 0) {
        g_test_skip("no O_DIRECT here");    /* the ring (and its budget) is O_DIRECT's */
        close(in);
        return;
    }
    env = g_environ_setenv(env, "IOHELPER_CONF", conf, TRUE);
    s.env = (const char *const *)env;
    /* 0644 whatever the umask: the helper refuses a group-writable config */
    g_assert_true(g_file_set_contents_full(conf, "[iohelper]\nmemory-budget = 2M\n", -1,
                                           G_FILE_SET_CONTENTS_CONSISTENT, 0644, NULL));
    g_assert_cmpint(ioht_exit_code(ioht_spawn_wait(&s, &err)), ==, 0);
    g_assert_nonnull(strstr(err, "budget 2097152"));
    g_assert_true(ioht_files_equal(src, dst));
    g_clear_pointer(&err, g_free);
    /* 0644 whatever the umask: the helper refuses a group-writable config */
    g_assert_true(g_file_set_contents_full(conf, "[iohelper]\nmemory-budget=lots\n", -1,
                                           G_FILE_SET_CONTENTS_CONSISTENT, 0644, NULL));
    g_assert_cmpint(ioht_exit_code(ioht_spawn_wait(&s, &err)), ==, 2);
    g_assert_nonnull(strstr(err, conf));
    g_assert_nonnull(strstr(err, "invalid size 'lots'"));
    close(in);
    close(out);
}

#define NF 4

/* NF --fadvise saves at once (each pauses a while, so that they overlap) share the page
 * cache: each finds the others' marks and divides its 8 MiB window by 4; alone, a save
 * keeps the whole window. No mark is left behind. */
static void
test_fadvise_window(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = make_src(fx, "src", 24 * MIB, 7);
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *pattern = g_strdup_printf("%s/*.fadvise", run);
    g_autofree char *dst0 = ioht_dir_path(fx, "dst");
    g_autofree char *alone = NULL;
    IohtPumpOpts feed = { .path = src, .stall_at = 4 * MIB, .stall_ms = 800 };
    IohtPumpOpts whole = { .path = src };
    Save sv[NF];
    glob_t g = { 0 };
    guint shrunk = 0;

    (void)data;
    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    for (guint i = 0; i < NF; i++) {
        g_autofree char *dst = g_strdup_printf("%s/dst%u", fx->dir, i);

        sv[i] = save_start_mode("--fadvise", "--fadvise-window=8M", dst, run, &feed, NULL);
    }
    for (guint i = 0; i < NF; i++) {
        g_autofree char *dst = g_strdup_printf("%s/dst%u", fx->dir, i);
        g_autofree char *err = NULL;

        g_assert_cmpint(save_wait(&sv[i], &err), ==, 0);
        g_assert_true(ioht_files_equal(src, dst));
        shrunk += strstr(err, "drop-behind window 2097152 bytes (4 saves at once)") != NULL;
    }
    g_assert_cmpuint(shrunk, >, 0);
    g_assert_cmpint(glob(pattern, 0, NULL, &g), ==, GLOB_NOMATCH);
    globfree(&g);
    sv[0] = save_start_mode("--fadvise", "--fadvise-window=8M", dst0, run, &whole, NULL);
    g_assert_cmpint(save_wait(&sv[0], &alone), ==, 0);
    g_assert_nonnull(strstr(alone, "drop-behind window 8388608 bytes (1 saves at once)"));
    g_assert_null(strstr(alone, "2097152 bytes"));
}


typedef struct {
    GPid pid;
    gint done;
} Watchdog;

/* Kills the helper if it has not finished within 60 s: a hang fails the test at once. */
static gpointer
watchdog_main(gpointer data)
{
    Watchdog *w = data;

    for (int i = 0; i < 600 && !g_atomic_int_get(&w->done); i++) {
        g_usleep(100 * 1000);
    }
    if (!g_atomic_int_get(&w->done)) {
        kill(w->pid, SIGKILL);
    }
    return NULL;
}

/* One save of @src (fed with a pause at 8 MiB) while the lock is held: byte-exact, not
 * killed by the watchdog, having waited 100 ms for the lock once: what it logged. */
static char *
save_lock_held(IohtDir *fx, const char *src, const char *mode, const char *opt)
{
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    IohtPumpOpts feed = { .path = src, .stall_at = 8 * MIB, .stall_ms = 600 };
    Watchdog w = { 0 };
    char *err = NULL;
    GThread *t;
    Save sv = save_start_mode(mode, opt, dst, run, &feed, NULL);

    w.pid = sv.child.pid;
    t = g_thread_new("watchdog", watchdog_main, &w);
    g_assert_cmpint(save_wait(&sv, &err), ==, 0);
    g_atomic_int_set(&w.done, 1);
    g_thread_join(t);
    g_assert_true(ioht_files_equal(src, dst));
    ioht_assert_contains(err, "(waited 100 ms), going on without");
    g_assert_null(strstr(strstr(err, "(waited 100 ms)") + 1, "(waited 100 ms)"));
    g_assert_cmpuint(count_leases(run), ==, 0);
    return err;
}

/* Another process holds the budget's lock and never lets go (anyone who can open the
 * shared lock file can): a save neither hangs nor fails. An O_DIRECT one goes on with
 * its floor; a --fadvise one, which looks every 100 ms, waits 100 ms once, then only
 * tries. */
static void
test_lock_held(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = NULL;
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *lock = ioht_dir_path(fx, "run/lock");
    g_autofree char *err = NULL;
    int fd;

    (void)data;
    if (!has_direct(fx)) {
        return;
    }
    src = make_src(fx, "src", 24 * MIB, 8);
    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    g_assert_cmpint(fd, >=, 0);
    g_assert_no_errno(flock(fd, LOCK_EX));
    err = save_lock_held(fx, src, "--direct", "--memory-budget=8M");
    ioht_assert_contains(err, "strategy: ring of 1 buffers");
    g_free(err);
    err = save_lock_held(fx, src, "--fadvise", "--fadvise-window=8M");
    ioht_assert_contains(err, "(waited 0 ms), going on without");
    close(fd);
}

#define NOBODY IOHT_NOBODY

/* Writes the lease @pid would hold ("PID START BYTES") into @run as the caller (root). */
static char *
plant_lease(const char *run, GPid pid, const char *start, guint64 bytes)
{
    char *path = g_strdup_printf("%s/%d.lease", run, (int)pid);
    g_autofree char *text = g_strdup_printf("%d %s %" G_GUINT64_FORMAT "\n", (int)pid,
                                            start, bytes);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* The start time of this process (field 22 of /proc/self/stat), as text. */
static char *
self_start_time(void)
{
    g_autofree char *stat = NULL;
    g_auto(GStrv) f = NULL;

    g_assert_true(g_file_get_contents("/proc/self/stat", &stat, NULL, NULL));
    f = g_strsplit(strrchr(stat, ')') + 2, " ", 0);
    return g_strdup(f[19]);    /* field 22 is the 20th after the name */
}

/* The bytes of the lease of @pid in @run owned by @uid, waiting up to 10 s for it; 0 if
 * none came. */
static guint64
wait_lease_of(const char *run, GPid pid, uid_t uid)
{
    g_autofree char *path = g_strdup_printf("%s/%d.lease", run, (int)pid);

    for (int i = 0; i < 1000; i++, g_usleep(10000)) {
        g_autofree char *text = NULL;
        struct stat st;
        guint64 bytes = 0;

        if (stat(path, &st) == 0 && st.st_uid == uid &&
            g_file_get_contents(path, &text, NULL, NULL) &&
            sscanf(text, "%*d %*u %" G_GUINT64_FORMAT, &bytes) == 1 && bytes > 0) {
            return bytes;
        }
    }
    return 0;
}

/* A lease directory as helper/iohelper-tmpfiles.conf makes /run/iohelper (1777, root),
 * holding root's lease of a live process (1 MiB) and one of a dead process (1 MiB): a
 * helper run as nobody in libvirt's form (an O_DIRECT fd 1, the budget of 2 MiB from the
 * config file) takes a lease there (the dead one ignored, though it cannot remove it),
 * leaves root's alone and removes its own at the end. Root only. */
static void
test_unprivileged(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = make_src(fx, "src", 32 * MIB, 9);
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = g_dir_make_tmp("iohelper-run-XXXXXX", NULL);
    g_autofree char *conf = g_build_filename(run, "iohelper.conf", NULL);
    g_autofree char *start = self_start_time();
    g_autofree char *live = NULL, *dead = NULL, *live_text = NULL, *after = NULL;
    g_auto(GStrv) env = NULL;
    const char *args[] = { dst, "1", NULL };
    const char *true_argv[] = { "/bin/true", NULL };
    IohtPumpOpts feed = { .path = src, .stall_at = 16 * MIB, .stall_ms = IOHT_STALL_HELD };
    IohtSpawn s = { .args = args, .out_fd = -1, .extra_targets = (const int[]){ 1 },
                    .n_extra = 1, .setup = ioht_drop_to_nobody };
    g_auto(IohtNobody) nb = { 0 };
    IohtChild gone;
    IohtResult gone_r = { 0 };
    GPid gone_pid;
    IohtPump *pump;
    Save sv = { .in_w = -1 };
    int p[2], out;

    (void)data;
    /* a copy of the helper that nobody can reach, wherever the tree is */
    if (!ioht_nobody_setup(&nb)) {
        ioht_workdir_remove(run);
        return;
    }
    s.helper = nb.helper;
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
    if (out < 0) {
        g_test_skip("no O_DIRECT here");
        return;
    }
    g_assert_no_errno(chmod(run, 01777));
    g_assert_true(g_file_set_contents(conf, "[iohelper]\nmemory-budget=2M\n", -1, NULL));
    g_assert_no_errno(chmod(conf, 0644));
    live = plant_lease(run, getpid(), start, MIB);
    gone = ioht_spawn(&(IohtSpawn){ .argv = true_argv, .in_fd = -1, .out_fd = -1 });
    gone_pid = gone.pid;
    ioht_child_wait(&gone, &gone_r);
    ioht_result_clear(&gone_r);
    dead = plant_lease(run, gone_pid, "1", MIB);
    g_assert_true(g_file_get_contents(live, &live_text, NULL, NULL));
    env = helper_env(run);
    env = g_environ_setenv(env, "IOHELPER_CONF", conf, TRUE);
    s.env = (const char *const *)env;
    s.extra_fds = (const int[]){ out };
    g_assert_no_errno(pipe2(p, O_CLOEXEC));
    s.in_fd = p[0];
    sv.child = ioht_spawn(&s);
    close(p[0]);
    close(out);
    pump = ioht_feed_start(p[1], &feed);
    g_assert_cmpuint(wait_lease_of(run, sv.child.pid, NOBODY), ==, MIB);
    ioht_pump_release(pump);
    sv.feed = pump;
    g_assert_cmpint(save_wait(&sv, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    g_assert_true(g_file_get_contents(live, &after, NULL, NULL));
    g_assert_cmpstr(after, ==, live_text);    /* root's lease untouched */
    g_assert_cmpint(ioh_budget_sum(run), ==, MIB);    /* nobody's is gone */
    g_assert_cmpuint(count_leases(run), ==, 1);    /* root removed the dead one */
    ioht_workdir_remove(run);
}

typedef struct {
    const char *run;
    GPid pid;
    gint64 max_lease;
    gint64 max_huge;         /* the helper's AnonHugePages, bytes */
    gint samples;
    gint stop;
} HugeSampler;

/* The AnonHugePages of @pid (smaps_rollup), bytes; 0 when it cannot be read. */
static gint64
anon_huge(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/smaps_rollup", (int)pid);
    g_autofree char *text = NULL;
    const char *at;

    if (!g_file_get_contents(path, &text, NULL, NULL) ||
        !(at = strstr(text, "AnonHugePages:"))) {
        return 0;
    }
    return g_ascii_strtoll(at + strlen("AnonHugePages:"), NULL, 10) * 1024;
}

/* Transparent huge pages are on, for madvise()d memory at least. */
static gboolean
thp_enabled(void)
{
    g_autofree char *text = NULL;

    return g_file_get_contents("/sys/kernel/mm/transparent_hugepage/enabled", &text, NULL,
                               NULL) && !strstr(text, "[never]");
}

static gpointer
huge_sampler_main(gpointer data)
{
    HugeSampler *s = data;

    for (; !g_atomic_int_get(&s->stop); s->samples++, g_usleep(2000)) {
        s->max_lease = MAX(s->max_lease, ioh_budget_sum(s->run));
        s->max_huge = MAX(s->max_huge, anon_huge(s->pid));
    }
    return NULL;
}

/* One save of @src with 2 MiB of budget through @slow, sampled every 2 ms: the lease
 * stays within the budget and the helper never holds more than one huge page. The most
 * it held in huge pages. */
static gint64
huge_save(IohtDir *fx, const char *src, IohtThrottle *slow)
{
    g_autofree char *dst = ioht_dir_path(fx, "dst");
    g_autofree char *run = ioht_dir_path(fx, "run");
    g_autofree char *err = NULL;
    HugeSampler smp = { .run = run };
    IohtPumpOpts feed = { .path = src };
    GThread *t;
    Save sv;

    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    sv = save_start(dst, run, "2M", &feed, slow);
    smp.pid = sv.child.pid;
    t = g_thread_new("huge-sampler", huge_sampler_main, &smp);
    g_assert_cmpint(save_wait(&sv, &err), ==, 0);
    g_atomic_int_set(&smp.stop, 1);
    g_thread_join(t);
    g_test_message("%d samples, most leased %" G_GINT64_FORMAT ", most in huge pages %"
                   G_GINT64_FORMAT, smp.samples, smp.max_lease, smp.max_huge);
    g_assert_true(ioht_files_equal(src, dst));
    g_assert_nonnull(strstr(err, "ring: huge pages of 2 buffers"));
    g_assert_nonnull(strstr(err, "ring: grown to 3 buffers"));
    g_assert_cmpint(smp.samples, >, 5);
    g_assert_cmpint(smp.max_lease, <=, 2 * MIB);
    g_assert_cmpint(smp.max_huge, <=, 2 * MIB);
    g_assert_cmpint(ioh_budget_sum(run), ==, 0);
    return smp.max_huge;
}

/* The budget directory of @fx, made 1777 as /run/iohelper: its path. */
static char *
make_shared_run(const IohtDir *fx)
{
    char *run = ioht_dir_path(fx, "run");

    g_assert_no_errno(g_mkdir_with_parents(run, 0755));
    g_assert_no_errno(chmod(run, 01777));
    return run;
}

/* Writes @text as the lease file @name of @run. */
static void
plant_text(const char *run, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(run, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Leases a hostile user wrote to make the budget look free: two naming a live process
 * (this one) with 2^63 bytes each, whose sum wrapped to 0, and one with "-1" bytes, which
 * sscanf took for 2^64 - 1 (that plus 1 byte: 0 again). The sum saturates instead: no
 * helper takes anything; a lease that is not three decimal numbers is no lease, removed. */
static void
test_lease_overflow(IohtDir *fx, gconstpointer data)
{
    g_autofree char *run = make_shared_run(fx);
    g_autofree char *start = self_start_time();
    g_autofree char *big = g_strdup_printf("%d %s 9223372036854775808\n", (int)getpid(), start);
    g_autofree char *minus = g_strdup_printf("%d %s -1\n", (int)getpid(), start);
    g_autofree char *one = g_strdup_printf("%d %s 1\n", (int)getpid(), start);
    g_autofree char *minus_path = g_build_filename(run, "900002.lease", NULL);
    g_autoptr(IohBudget) b = NULL;

    (void)data;
    plant_text(run, "900001.lease", big);
    plant_text(run, "900002.lease", big);
    g_assert_cmpint(ioh_budget_sum(run), ==, G_MAXINT64);
    b = ioh_budget_new(64 * MIB, run);
    g_assert_cmpuint(ioh_budget_take(b, 8 * MIB, MIB), ==, 0);
    plant_text(run, "900002.lease", minus);
    plant_text(run, "900003.lease", one);
    g_assert_cmpint(ioh_budget_sum(run), ==, (gint64)G_MAXINT64);
    plant_text(run, "900001.lease", one);
    g_assert_cmpint(ioh_budget_sum(run), ==, 2);
    g_assert_false(g_file_test(minus_path, G_FILE_TEST_EXISTS));
}

/* A lease directory filled by another user with entries no helper can remove
 * (directories named as leases and marks, each looked at under the lock on every take and
 * every --fadvise look): past 512 entries it is not used, so a helper keeps to its floor
 * and a --fadvise save counts itself alone rather than scanning them all each time. */
static void
test_dir_full(IohtDir *fx, gconstpointer data)
{
    g_autofree char *run = make_shared_run(fx);
    g_autofree char *start = self_start_time();
    g_autofree char *mark = g_strdup_printf("%d %s 0\n", (int)getpid(), start);
    g_autoptr(IohBudget) b = NULL;

    (void)data;
    plant_text(run, "900001.fadvise", mark);
    plant_text(run, "900002.fadvise", mark);
    g_assert_cmpuint(ioh_budget_fadvise_saves(run, FALSE), ==, 2);
    for (int i = 0; i < 600; i++) {
        g_autofree char *junk = g_strdup_printf("%s/%d.%s", run, 800000 + i,
                                                i % 2 ? "lease" : "fadvise");

        g_assert_no_errno(mkdir(junk, 0755));
    }
    g_assert_cmpint(ioh_budget_sum(run), ==, -1);
    g_assert_cmpuint(ioh_budget_fadvise_saves(run, FALSE), ==, 1);
    b = ioh_budget_new(64 * MIB, run);
    g_assert_cmpuint(ioh_budget_take(b, 8 * MIB, MIB), ==, 0);
}

/* The ring's buffers tile huge pages (2 MiB: two buffers of 1 MiB), and a huge page is
 * taken from the budget whole: with 2 MiB of budget the floor's huge page takes 1 MiB
 * (its first buffer is the floor), the next huge page does not fit, so the ring grows by
 * a buffer of small pages. With THP on, the helper holds that one huge page. The kernel
 * gives it at the first touch, best effort: 1 sanitized run in 30 here got small pages
 * though the helper asked, and /proc/vmstat counted neither a huge page nor a fallback
 * (likely a page table an earlier mapping left in those 2 MiB), so a save that got none
 * is tried once more. */
static void
test_huge_pages(IohtDir *fx, gconstpointer data)
{
    g_autoptr(IohtThrottle) slow = NULL;
    g_autofree char *src = NULL;
    gint64 huge;

    (void)data;
    if (!has_direct(fx) || !(slow = slow_disk(fx))) {
        return;
    }
    src = make_src(fx, "src", 96 * MIB, 9);
    huge = huge_save(fx, src, slow);
    if (huge == 0 && thp_enabled()) {
        huge = huge_save(fx, src, slow);
    }
    if (thp_enabled()) {
        g_assert_cmpint(huge, ==, 2 * MIB);    /* the floor's huge page */
    }
}

static const struct {
    const char *path;
    void (*test)(IohtDir *fx, gconstpointer data);
} tests[] = {
    { "/budget/grow", test_grow },
    { "/budget/grow-odd", test_grow_odd },
    { "/budget/shrink-stall", test_shrink_stall },
    { "/budget/shrink-slow", test_shrink_slow },
    { "/budget/kills", test_budget_kills },
    { "/budget/none-left", test_budget_none_left },
    { "/budget/huge-pages", test_huge_pages },
    { "/budget/fair-share", test_fair_share },
    { "/budget/conf", test_conf },
    { "/budget/fadvise-window", test_fadvise_window },
    { "/budget/lock-held", test_lock_held },
    { "/budget/unprivileged", test_unprivileged },
    { "/budget/lease-overflow", test_lease_overflow },
    { "/budget/dir-full", test_dir_full },
};

int
main(int argc, char **argv)
{
    /* A feed into a helper killed on purpose meets EPIPE, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    /* These tests watch the ring grow and shrink under --direct saves from a pipe, which
     * take io_uring's fixed buffers unless a --memory-budget applies: the ring for all. */
    g_setenv("IOHELPER_IO_URING", "off", TRUE);
    for (gsize i = 0; i < G_N_ELEMENTS(tests); i++) {
        ioht_dir_add(tests[i].path, NULL, tests[i].test);
    }
    return g_test_run();
}
