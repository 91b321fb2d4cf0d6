/* test-hostile-files.c - every file the helper opens where another local user can write:
 * in the budget directory ($IOHELPER_RUNDIR, mode 1777 as /run/iohelper) its lock, the
 * leases (PID.lease) and the --fadvise marks (PID.fadvise), and the config file
 * ($IOHELPER_CONF). Under each name, planted: a FIFO, a symbolic link to /dev/zero and to
 * a file, a sparse 256 MiB file and a hard link to a 0600 file. The real helper saves 8 MiB
 * from a pipe: it must neither hang (killed past HANG_S) nor read a file whole (its
 * resident memory watched, killed past RSS_MAX_KIB), change nothing it did not make, count
 * nothing planted, and save byte-exact (or, for a config it cannot trust, refuse at once
 * naming the file). The budget directory itself, a symbolic link or open to all without
 * the sticky bit, is not used. */
#include "ioh-test.h"
#include "ioh-budget.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define HANG_S 60
#define RSS_MAX_KIB (128 * 1024)    /* a save holds a few buffers; a file read whole: 256 MiB */

typedef enum { AT_LEASE, AT_MARK, AT_LOCK, AT_CONF } Where;
typedef enum { PLANT_FIFO, PLANT_LINK_ZERO, PLANT_LINK_FILE, PLANT_HUGE, PLANT_HARD_LINK } Plant;

static const char *const where_names[] = { "lease", "fadvise", "lock", "conf" };
static const char *const plant_names[] = { "fifo", "symlink-zero", "symlink-file", "huge",
                                           "hardlink" };

typedef struct {
    Where where;
    Plant plant;
} Case;

typedef struct {
    char *run;           /* the budget directory, 1777 */
    char *src, *dst;
    char *victim;        /* a 0600 file a link points to */
    char *victim_text;
    char *entry;         /* the planted name */
    char *conf;          /* $IOHELPER_CONF */
    const char *mode;    /* --direct or --fadvise */
    const char *budget;  /* --memory-budget=..., NULL: from the config */
    gboolean as_nobody;
} Setup;

/* ---- running the helper under watch ---- */

typedef struct {
    GPid pid;
    GThread *thread;
    gint done;
    const char *killed;    /* why the watch killed it, or NULL */
    gint64 peak_kib;       /* the most VmHWM seen */
} Watch;

/* A field of /proc/PID/status in KiB, or -1. */
static gint64
status_kib(GPid pid, const char *field)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
    g_autofree char *text = NULL;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strstr(text, field))) {
        return -1;
    }
    return g_ascii_strtoll(p + strlen(field), NULL, 10);
}

/* Samples the helper's peak resident memory every 5 ms: VmHWM counts the helper's own
 * memory since its exec (getrusage's ru_maxrss of a child also counts the test's memory
 * copied by fork, which grows test after test, fastest under ASan). Kills it
 * when it runs past HANG_S or grows past RSS_MAX_KIB, before it can take the machine's
 * memory (a read of /dev/zero grows by GB/s); a helper that outgrew the bound and exited
 * within one sample would be missed, not failed at random. */
static gpointer
watch_main(gpointer data)
{
    Watch *w = data;
    gint64 end = g_get_monotonic_time() + HANG_S * G_USEC_PER_SEC;

    while (!g_atomic_int_get(&w->done)) {
        w->peak_kib = MAX(w->peak_kib, status_kib(w->pid, "VmHWM:"));
        if (status_kib(w->pid, "VmRSS:") > RSS_MAX_KIB) {
            w->killed = "grew past " G_STRINGIFY(RSS_MAX_KIB) " KiB";
        } else if (g_get_monotonic_time() > end) {
            w->killed = "hung (" G_STRINGIFY(HANG_S) " s)";
        }
        if (w->killed) {
            kill(w->pid, SIGKILL);
            break;
        }
        g_usleep(5000);
    }
    return NULL;
}

/* Stops the watch before the helper is reaped: its pid is never reused under it. */
static void
watch_stop(gpointer data)
{
    Watch *w = data;

    g_atomic_int_set(&w->done, 1);
    g_thread_join(w->thread);
}

/* Runs `iohelper MODE [BUDGET] - -` on @st's src (a pipe) into its dst (stdout), watched:
 * the exit code, what it printed into *@ret_err; fails the test when killed by the watch
 * or when its peak resident memory passed RSS_MAX_KIB. */
static int
run_watched(const Setup *st, char **ret_err)
{
    g_auto(GStrv) env = g_get_environ();
    const char *args[] = { st->mode, st->budget, "-", "-", NULL };
    IohtSpawn s = { .args = st->budget ? args : (const char *[]){ st->mode, "-", "-", NULL },
                    .setup = st->as_nobody ? ioht_drop_to_nobody : NULL };
    Watch w = { 0 };
    IohtResult r = { 0 };
    IohtChild c;
    IohtPump *feed;
    int p[2];

    env = g_environ_setenv(env, "IOHELPER_RUNDIR", st->run, TRUE);
    env = g_environ_setenv(env, "IOHELPER_CONF", st->conf, TRUE);
    env = g_environ_setenv(env, "G_MESSAGES_DEBUG", "iohelper", TRUE);
    s.env = (const char *const *)env;
    s.out_fd = open(st->dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    g_assert_cmpint(s.out_fd, >=, 0);
    g_assert_no_errno(pipe2(p, O_CLOEXEC));
    s.in_fd = p[0];
    c = ioht_spawn(&s);
    close(p[0]);
    close(s.out_fd);
    feed = ioht_feed_start(p[1], &(IohtPumpOpts){ .path = st->src });
    w.pid = c.pid;
    w.thread = g_thread_new("watch", watch_main, &w);
    c.before_reap = watch_stop;
    c.before_reap_data = &w;
    ioht_child_wait(&c, &r);
    ioht_pump_join(feed, NULL);
    g_test_message("helper (exit %d, peak %" G_GINT64_FORMAT " KiB):\n%s", r.code,
                   w.peak_kib, r.err);
    if (w.killed) {
        g_test_fail_printf("the helper %s", w.killed);
    }
    g_assert_cmpint(w.peak_kib, <, RSS_MAX_KIB);
    *ret_err = g_steal_pointer(&r.err);
    return r.code;
}

/* ---- planting ---- */

/* TRUE when a user of no group and no ownership can reach @path (every folder above it
 * searchable by others): the helper run as nobody must find its binary and directory. */
static gboolean
others_can_reach(const char *path)
{
    g_autofree char *p = g_strdup(path);
    char *slash;
    struct stat st;

    do {
        if (stat(*p ? p : "/", &st) < 0 || !(st.st_mode & S_IXOTH)) {
            return FALSE;
        }
        slash = strrchr(p, '/');
        if (slash) {
            *slash = '\0';
        }
    } while (slash);
    return TRUE;
}

/* A 0600 file with @text: what a link points to. */
static void
make_victim(Setup *st, const char *text)
{
    st->victim_text = g_strdup(text);
    g_assert_true(g_file_set_contents(st->victim, text, -1, NULL));
    g_assert_no_errno(chmod(st->victim, 0600));
}

/* The victim as it was made: its mode and its bytes. */
static void
assert_victim_intact(const Setup *st)
{
    g_autofree char *text = NULL;
    struct stat sb;

    g_assert_no_errno(stat(st->victim, &sb));
    g_assert_cmpint(sb.st_mode & 07777, ==, 0600);
    g_assert_true(g_file_get_contents(st->victim, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, st->victim_text);
}

static void
plant(const Setup *st, Plant what)
{
    int fd;

    switch (what) {
    case PLANT_FIFO:
        /* 0444: not even its owner can open it for writing (root can: see lock/fifo) */
        g_assert_no_errno(mkfifo(st->entry, 0444));
        break;
    case PLANT_LINK_ZERO:
        g_assert_no_errno(symlink("/dev/zero", st->entry));
        break;
    case PLANT_LINK_FILE:
        g_assert_no_errno(symlink(st->victim, st->entry));
        break;
    case PLANT_HUGE:
        fd = open(st->entry, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_no_errno(ftruncate(fd, 256 * MIB));
        close(fd);
        break;
    case PLANT_HARD_LINK:
        g_assert_no_errno(link(st->victim, st->entry));
        break;
    }
}

/* This process's own live lease or mark (@mark), as a helper writes it: what a planted
 * link points to, so that a helper that follows it counts it. */
static char *
live_text(const char *run, gboolean mark)
{
    g_autoptr(IohBudget) b = ioh_budget_new(8 * MIB, run);
    g_autofree char *path = g_strdup_printf("%s/%d.%s", run, (int)getpid(),
                                            mark ? "fadvise" : "lease");
    char *text = NULL;

    if (mark) {
        g_assert_cmpuint(ioh_budget_fadvise_saves(run, TRUE), ==, 1);
    } else {
        g_assert_cmpuint(ioh_budget_take(b, 8 * MIB, MIB), ==, 8 * MIB);
    }
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    if (mark) {
        ioh_budget_fadvise_leave(run);
    }
    return text;    /* the lease goes with @b */
}

static void
setup_init(Setup *st, const IohtDir *fx, Where where)
{
    g_autofree char *name = where == AT_LEASE ? g_strdup_printf("%d.lease", (int)getpid())
                            : where == AT_MARK ? g_strdup_printf("%d.fadvise", (int)getpid())
                                               : g_strdup("lock");

    g_assert_no_errno(chmod(fx->dir, 0755));    /* for nobody */
    st->run = ioht_dir_path(fx, "run");
    g_assert_no_errno(mkdir(st->run, 0755));
    g_assert_no_errno(chmod(st->run, 01777));
    st->src = ioht_dir_path(fx, "src");
    st->dst = ioht_dir_path(fx, "dst");
    st->victim = ioht_dir_path(fx, "victim");
    st->conf = ioht_dir_path(fx, "iohelper.conf");
    st->entry = where == AT_CONF ? g_strdup(st->conf) : g_build_filename(st->run, name, NULL);
    st->mode = where == AT_MARK ? "--fadvise" : "--direct";
    st->budget = where == AT_MARK ? "--fadvise-window=8M"
                 : where == AT_CONF ? NULL : "--memory-budget=8M";
    ioht_write_random_file(st->src, 8 * MIB, 26);
}

static void
setup_clear(Setup *st)
{
    g_free(st->run);
    g_free(st->src);
    g_free(st->dst);
    g_free(st->victim);
    g_free(st->victim_text);
    g_free(st->entry);
    g_free(st->conf);
}

/* setup_init(), unless @skip: then the test is skipped saying @why (FALSE). */
static gboolean
setup_unless(Setup *st, const IohtDir *fx, Where where, gboolean skip, const char *why)
{
    setup_init(st, fx, where);
    if (skip) {
        g_test_skip(why);
        setup_clear(st);
        return FALSE;
    }
    return TRUE;
}

/* ---- the cases ---- */

/* A lease or mark planted: counted for nothing and removed (the name only: the victim
 * a link points to stays as it was); the save takes the whole budget. */
static void
check_lease_or_mark(const Setup *st, Where where, const char *err, int code)
{
    g_assert_cmpint(code, ==, 0);
    g_assert_true(ioht_files_equal(st->src, st->dst));
    if (where == AT_MARK) {
        ioht_assert_contains(err, "drop-behind window 8388608 bytes (1 saves at once)");
    } else {
        ioht_assert_contains(err, "(others hold 0, 1 helpers");
    }
    g_assert_false(g_file_test(st->entry, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK));
}

/* A lock planted: the budget unused (the helper keeps to its floor) unless it is a
 * regular file of one link, which serves as the lock unchanged (its mode kept). */
static void
check_lock(const Setup *st, Plant what, const char *err, int code)
{
    struct stat sb;

    g_assert_cmpint(code, ==, 0);
    g_assert_true(ioht_files_equal(st->src, st->dst));
    g_assert_no_errno(lstat(st->entry, &sb));
    if (what == PLANT_HUGE) {
        ioht_assert_contains(err, "(others hold 0, 1 helpers");
        g_assert_cmpint(sb.st_mode & 07777, ==, 0644);
        g_assert_cmpint(sb.st_size, ==, 256 * MIB);
    } else {
        ioht_assert_contains(err, "nothing beyond the floor");
        g_assert_null(strstr(err, "budget: took"));
    }
    g_assert_true(what != PLANT_FIFO || S_ISFIFO(sb.st_mode));
}

/* A config planted: a regular file the caller owns (a link to it, or a hard link)
 * serves; anything else is refused at once, naming the file and the cause (exit 2). */
static void
check_conf(const Setup *st, Plant what, const char *err, int code)
{
    static const char *const causes[] = {
        [PLANT_FIFO] = "a pipe, not a regular file",
        [PLANT_LINK_ZERO] = "a character device, not a regular file",
        [PLANT_HUGE] = "larger than 65536 bytes",
    };

    if (what == PLANT_LINK_FILE || what == PLANT_HARD_LINK) {
        g_assert_cmpint(code, ==, 0);
        g_assert_true(ioht_files_equal(st->src, st->dst));
        ioht_assert_contains(err, "budget 8388608)");
        return;
    }
    g_assert_cmpint(code, ==, 2);
    ioht_assert_contains(err, st->conf);
    ioht_assert_contains(err, causes[what]);
}

/* The lock as a FIFO hangs a helper that cannot open it for writing (it then fell back
 * to a blocking read-only open): nobody, when the test runs as root (root opens any FIFO
 * for writing, unless fs.protected_fifos stops it), else the owner of the 0444 FIFO. */
static gboolean
lock_fifo_as_nobody(const Setup *st)
{
    if (geteuid() != 0) {
        return FALSE;
    }
    if (!others_can_reach(ioht_helper_path()) || !others_can_reach(st->run)) {
        g_test_message("nobody cannot reach %s or %s: the helper runs as root",
                       ioht_helper_path(), st->run);
        return FALSE;
    }
    return TRUE;
}

static void
test_plant(IohtDir *fx, gconstpointer data)
{
    const Case *c = data;
    g_autofree char *err = NULL;
    Setup st = { 0 };
    int code;

    setup_init(&st, fx, c->where);
    if (c->where != AT_MARK && !ioht_dir_supports_direct(fx->dir)) {
        g_test_skip("no O_DIRECT here: the budget serves O_DIRECT saves");
        setup_clear(&st);
        return;
    }
    if (c->where == AT_CONF) {
        make_victim(&st, "[iohelper]\nmemory-budget=8M\n");
    } else if (c->where == AT_LOCK) {
        make_victim(&st, "secret\n");
    } else {
        g_autofree char *text = live_text(st.run, c->where == AT_MARK);

        make_victim(&st, text);
    }
    plant(&st, c->plant);
    st.as_nobody = c->where == AT_LOCK && c->plant == PLANT_FIFO && lock_fifo_as_nobody(&st);
    code = run_watched(&st, &err);
    if (c->where == AT_CONF) {
        check_conf(&st, c->plant, err, code);
    } else if (c->where == AT_LOCK) {
        check_lock(&st, c->plant, err, code);
    } else {
        check_lease_or_mark(&st, c->where, err, code);
    }
    assert_victim_intact(&st);
    setup_clear(&st);
}

/* A config the caller cannot trust: owned by another user (root only: chown), writable
 * by its group: refused naming the file, as sudo and sshd refuse theirs. */
static void
test_conf_untrusted(IohtDir *fx, gconstpointer data)
{
    gboolean other_owner = GPOINTER_TO_INT(data);
    g_autofree char *err = NULL;
    Setup st = { 0 };

    if (!setup_unless(&st, fx, AT_CONF, other_owner && geteuid() != 0,
                      "needs root (gives the config to nobody)")) {
        return;
    }
    g_assert_true(g_file_set_contents(st.conf, "[iohelper]\nmemory-budget=8M\n", -1, NULL));
    g_assert_no_errno(chmod(st.conf, other_owner ? 0644 : 0664));
    if (other_owner) {
        g_assert_no_errno(chown(st.conf, IOHT_NOBODY, (gid_t)-1));
    }
    g_assert_cmpint(run_watched(&st, &err), ==, 2);
    ioht_assert_contains(err, st.conf);
    ioht_assert_contains(err, other_owner ? "owned by uid 65534, neither root nor the caller"
                                          : "writable by group or others (mode 0664)");
    setup_clear(&st);
}

typedef enum { CONF_DIR_OTHER, CONF_LINK_OTHER, CONF_NOT_KEY_FILE } ConfPath;

#define SECRET_LINE "root:$6$SECRET-HASH:19000:0:99999:7:::\n"

/* A config reached through what another user controls, or that is no key file at all:
 * refused (exit 2) naming the file and never quoting it (GKeyFile's message quoted the
 * line it refused: root's helper, told to read a config in a user's directory, printed
 * the first line of a file of root's the user linked there, a password hash).
 * CONF_DIR_OTHER: the config a link to that file, in a directory of nobody's;
 * CONF_LINK_OTHER: a link of nobody's in the sticky budget directory (fs.protected_symlinks
 * off, as here, lets root follow it); both root only. CONF_NOT_KEY_FILE: the caller's own
 * 0644 file holding such a line. */
static void
test_conf_path(IohtDir *fx, gconstpointer data)
{
    ConfPath what = GPOINTER_TO_INT(data);
    g_autofree char *dir = ioht_dir_path(fx, "alice");
    g_autofree char *err = NULL;
    Setup st = { 0 };

    if (!setup_unless(&st, fx, AT_CONF, what != CONF_NOT_KEY_FILE && geteuid() != 0,
                      "needs root (makes a directory or a link of nobody's)")) {
        return;
    }
    make_victim(&st, SECRET_LINE);
    if (what == CONF_DIR_OTHER) {
        g_assert_no_errno(mkdir(dir, 0755));
        g_assert_no_errno(chown(dir, IOHT_NOBODY, (gid_t)-1));
        g_free(st.conf);
        st.conf = g_build_filename(dir, "iohelper.conf", NULL);
    } else if (what == CONF_LINK_OTHER) {
        g_free(st.conf);
        st.conf = g_build_filename(st.run, "iohelper.conf", NULL);
    }
    if (what == CONF_NOT_KEY_FILE) {
        g_assert_true(g_file_set_contents(st.conf, SECRET_LINE, -1, NULL));
        g_assert_no_errno(chmod(st.conf, 0644));
    } else {
        g_assert_no_errno(symlink(st.victim, st.conf));
        g_assert_no_errno(lchown(st.conf, IOHT_NOBODY, (gid_t)-1));
    }
    g_assert_cmpint(run_watched(&st, &err), ==, 2);
    ioht_assert_contains(err, st.conf);
    ioht_assert_contains(err, what == CONF_DIR_OTHER ? "owned by uid 65534, neither root"
                              : what == CONF_LINK_OTHER ? "the symbolic link iohelper.conf in"
                              : "line 1 is neither [group], key=value nor a comment");
    g_assert_null(strstr(err, "SECRET"));
    assert_victim_intact(&st);
    setup_clear(&st);
}

/* The budget directory a symbolic link (to a good one), or open to all without the
 * sticky bit (anyone could rename over a lease): not used, nothing made there, the save
 * keeps to its floor and succeeds. */
static void
test_rundir(IohtDir *fx, gconstpointer data)
{
    gboolean link = GPOINTER_TO_INT(data);
    g_autofree char *real = ioht_dir_path(fx, "real");
    g_autofree char *err = NULL;
    Setup st = { 0 };

    if (!setup_unless(&st, fx, AT_LEASE, !ioht_dir_supports_direct(fx->dir),
                      "no O_DIRECT here: the budget serves O_DIRECT saves")) {
        return;
    }
    g_assert_no_errno(rename(st.run, real));
    if (link) {
        g_assert_no_errno(symlink(real, st.run));
    } else {
        g_assert_no_errno(mkdir(st.run, 0755));
        g_assert_no_errno(chmod(st.run, 0777));
    }
    g_assert_cmpint(run_watched(&st, &err), ==, 0);
    g_assert_true(ioht_files_equal(st.src, st.dst));
    ioht_assert_contains(err, link ? "a symbolic link, not followed, nothing beyond the floor"
                                   : "not sticky (mode 0777), nothing beyond the floor");
    g_assert_cmpuint(ioht_count_prefix(link ? real : st.run, ""), ==, 0);
    setup_clear(&st);
}

int
main(int argc, char **argv)
{
    static Case cases[G_N_ELEMENTS(where_names) * G_N_ELEMENTS(plant_names)];
    gsize n = 0;

    /* A feed into a helper that refused its config meets EPIPE, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    for (Where w = AT_LEASE; w <= AT_CONF; w++) {
        for (Plant p = PLANT_FIFO; p <= PLANT_HARD_LINK; p++, n++) {
            g_autofree char *path = g_strdup_printf("/hostile/%s/%s", where_names[w],
                                                    plant_names[p]);

            cases[n] = (Case){ w, p };
            ioht_dir_add(path, &cases[n], test_plant);
        }
    }
    ioht_dir_add("/hostile/conf/group-writable", GINT_TO_POINTER(FALSE), test_conf_untrusted);
    ioht_dir_add("/hostile/conf/other-owner", GINT_TO_POINTER(TRUE), test_conf_untrusted);
    ioht_dir_add("/hostile/conf/dir-of-another", GINT_TO_POINTER(CONF_DIR_OTHER),
                 test_conf_path);
    ioht_dir_add("/hostile/conf/link-of-another", GINT_TO_POINTER(CONF_LINK_OTHER),
                 test_conf_path);
    ioht_dir_add("/hostile/conf/not-quoted", GINT_TO_POINTER(CONF_NOT_KEY_FILE),
                 test_conf_path);
    ioht_dir_add("/hostile/rundir/symlink", GINT_TO_POINTER(TRUE), test_rundir);
    ioht_dir_add("/hostile/rundir/not-sticky", GINT_TO_POINTER(FALSE), test_rundir);
    return g_test_run();
}
