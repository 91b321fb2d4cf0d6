/* test-badinput.c - every option with bad values, unknown flags, bad operands, fds that
 * are not open or open read-write: exit 2 (usage) or 1 (runtime), one line on stderr
 * starting "iohelper: ", never a signal, and no image created by a usage error. The
 * same inputs also go through ioh_args_parse() in-process, where a leak or a crash
 * would show under ASan. */
#include "faults-util.h"
#include "ioh-args.h"
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

static guint n_tried;

/* Runs iohelper with @args (the image operand, if any, is OUT) and checks the verdict. */
static void
expect(int code, const char *needle, const char *const *args, const int *extra, int n_extra,
       const char *out)
{
    static const int three = 3;
    /* An extra fd is always handed in as fd 3. */
    FtSpawn s = { .args = args, .in_fd = -1, .out_fd = -1, .extra_fds = extra,
                  .extra_targets = &three, .n_extra = n_extra };
    g_autofree char *shown = g_strjoinv(" ", (char **)args);
    FtChild c;
    FtResult r;

    if (out) {
        g_unlink(out);
    }
    c = ft_spawn(&s);
    ft_wait(&c, &r);
    n_tried++;
    if (WIFSIGNALED(r.status)) {
        g_test_fail_printf("iohelper %s: killed by signal %d", shown, WTERMSIG(r.status));
    } else if (r.code != code) {
        g_test_fail_printf("iohelper %s: exit %d, expected %d (%s)", shown, r.code, code,
                           r.err);
    } else if (!ft_one_line(r.err)) {
        g_test_fail_printf("iohelper %s: stderr is not one 'iohelper: ' line", shown);
    } else if (needle && !strstr(r.err, needle)) {
        g_test_fail_printf("iohelper %s: stderr '%s' lacks '%s'", shown, r.err, needle);
    } else if (code == 2 && out && g_file_test(out, G_FILE_TEST_EXISTS)) {
        g_test_fail_printf("iohelper %s: a usage error created %s", shown, out);
    }
    ft_result_clear(&r);
}

/* In-process: the parser must reject (return FALSE, one-line message) without leaking. */
static void
expect_parse_fails(const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    IohArgs a;

    g_ptr_array_add(argv, (gpointer) "iohelper");
    for (const char *const *p = args; *p; p++) {
        g_ptr_array_add(argv, (gpointer)*p);
    }
    g_ptr_array_add(argv, NULL);
    if (ioh_args_parse((int)argv->len - 1, (char **)argv->pdata, &a, &error)) {
        g_autofree char *shown = g_strjoinv(" ", (char **)args);
        g_test_fail_printf("ioh_args_parse accepted: %s", shown);
        ioh_args_clear(&a);
        return;
    }
    g_assert_nonnull(error);
    g_assert_null(strchr(error->message, '\n'));
    n_tried++;
}

typedef struct {
    const char *opt;
    const char *const *bad;
} OptCase;

static const char *const bad_sizes[] = {
    "-1", "-0", "+5", "", " ", "abc", "1x", "1KK", "1.5M", "0x10", "1e9", " 1", "1 ",
    "18446744073709551615", "18446744073709551616", "99999999999999999999999",
    "9223372036854775808", "8E", "8P", "16384P", "9007199254740992K", "8796093022208M",
    "M", "k1", "1KiBB", "1MiBs", "1\n", "1\t", "\xff", "１", "1-", "--1", "1K1", "0b1",
    NULL,
};

static const char *const bad_pipe_sizes[] = { "0", "1", "4095", "2G", "1T", NULL };
static const char *const bad_buffer_sizes[] = { "0", "4095", "257M", "1G", NULL };
static const char *const bad_windows[] = { "0", "1K", "1048575", "2G", NULL };
static const char *const bad_offsets[] = { "8796093022208T", NULL };
static const char *const bad_rings[] = {
    "0", "65", "-1", "x", "", "1.0", "99999999999999999999", "1K", " 4", "0x4", NULL,
};
static const char *const bad_status_fds[] = {
    "-1", "x", "2147483648", "", "1.5", "99999999999999999999", "3K", NULL,
};
static const char *const bad_intervals[] = {
    "0", "9", "3600001", "-5", "x", "", "1e3", "99999999999999999999", NULL,
};
static const char *const bad_stats[] = { "bogus", "", "TEXT", "json ", "yaml", NULL };
/* 1MB: 10^6 or 2^20? Refused, whatever the case, for every size option. */
static const char *const ambiguous_sizes[] = {
    "1MB", "1KB", "1kB", "1kb", "1GB", "1TB", "4096mb", "1Mb", "8GB", NULL,
};

static void
test_bad_values(void)
{
    g_autofree char *out = g_build_filename(ft_workdir(), "img", NULL);
    const OptCase cases[] = {
        { "--pipe-size", bad_sizes },       { "--pipe-size", bad_pipe_sizes },
        { "--buffer-size", bad_sizes },     { "--buffer-size", bad_buffer_sizes },
        { "--offset", bad_sizes },          { "--offset", bad_offsets },
        { "--length", bad_sizes },          { "--length", bad_offsets },
        { "--fadvise-window", bad_sizes },  { "--fadvise-window", bad_windows },
        { "--ring", bad_rings },            { "--status-fd", bad_status_fds },
        { "--status-interval", bad_intervals }, { "--stats", bad_stats },
        { "--pipe-size", ambiguous_sizes }, { "--buffer-size", ambiguous_sizes },
        { "--offset", ambiguous_sizes },    { "--length", ambiguous_sizes },
        { "--fadvise-window", ambiguous_sizes },
    };
    guint before = n_tried;

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (const char *const *v = cases[i].bad; *v; v++) {
            g_autofree char *joined = g_strdup_printf("%s=%s", cases[i].opt, *v);
            const char *eq[] = { joined, "-", out, NULL };
            const char *sep[] = { cases[i].opt, *v, "-", out, NULL };
            const char *lv[] = { out, "1", joined, NULL };

            expect(2, cases[i].opt, eq, NULL, 0, out);
            expect_parse_fails(eq);
            expect_parse_fails(lv);
            /* "--stats VALUE" is an optional value: VALUE is then an operand. */
            if (!g_str_equal(cases[i].opt, "--stats")) {
                expect(2, cases[i].opt, sep, NULL, 0, out);
                expect_parse_fails(sep);
            }
        }
    }
    g_test_message("bad option values tried: %u", n_tried - before);
}

static void
test_bad_flags(void)
{
    g_autofree char *out = g_build_filename(ft_workdir(), "img", NULL);
    static const char *const unknown[] = {
        "--bogus", "-x", "-d", "---", "--dir", "--DIRECT", "-hx", "-Vh", "--direct-",
        "--=1", "--pipe_size=1M", "-direct", "--o_direct", "--len=1", "-\xff", NULL,
    };
    static const char *const valued_flags[] = {
        "--direct=1", "--fadvise=yes", "--progress=1", "--help=x", "--version=", NULL,
    };
    guint before = n_tried;

    for (const char *const *u = unknown; *u; u++) {
        const char *args[] = { *u, "-", out, NULL };
        expect(2, "unknown option", args, NULL, 0, out);
        expect_parse_fails(args);
    }
    for (const char *const *f = valued_flags; *f; f++) {
        const char *args[] = { *f, "-", out, NULL };
        expect(2, "takes no value", args, NULL, 0, out);
        expect_parse_fails(args);
    }
    {
        static const char *const needing[] = {
            "--pipe-size", "--buffer-size", "--ring", "--offset", "--length",
            "--fadvise-window", "--status-fd", "--status-interval", "--record", NULL,
        };
        for (const char *const *n = needing; *n; n++) {
            const char *args[] = { "-", out, *n, NULL };
            expect(2, "needs a value", args, NULL, 0, out);
            expect_parse_fails(args);
        }
    }
    {
        const char *both[] = { "--direct", "--fadvise", "-", out, NULL };
        const char *rec[] = { "--record=", "-", out, NULL };
        expect(2, "cannot be combined", both, NULL, 0, out);
        expect_parse_fails(both);
        expect(2, "--record", rec, NULL, 0, out);
        expect_parse_fails(rec);
    }
    g_test_message("unknown or malformed flags tried: %u", n_tried - before);
}

static void
test_bad_operands(void)
{
    g_autofree char *out = g_build_filename(ft_workdir(), "img", NULL);
    const char *none[] = { NULL };
    const char *one[] = { "-", NULL };
    const char *three[] = { "-", "-", out, NULL };
    const char *empty[] = { "", out, NULL };
    const char *empty2[] = { "-", "", NULL };
    const char *empty_path[] = { "", "3", NULL };
    const char *dashdash[] = { "--", "--direct", NULL };
    const char *many[] = { "a", "b", "c", "d", "e", NULL };
    guint before = n_tried;

    expect(2, "operand", none, NULL, 0, NULL);
    expect(2, "operand", one, NULL, 0, NULL);
    expect(2, "operand", three, NULL, 0, out);
    expect(2, "empty", empty, NULL, 0, out);
    expect(2, "empty", empty2, NULL, 0, NULL);
    expect(2, "empty PATH", empty_path, NULL, 0, NULL);
    expect(2, "operand", dashdash, NULL, 0, NULL);
    expect(2, "operand", many, NULL, 0, NULL);
    expect_parse_fails(none);
    expect_parse_fails(one);
    expect_parse_fails(three);
    expect_parse_fails(empty);
    expect_parse_fails(empty_path);
    expect_parse_fails(many);
    g_test_message("bad operand lists tried: %u", n_tried - before);
}

/* Runtime errors: the command line parses, the fds or files do not work: exit 1. */
static void
test_runtime(void)
{
    const char *dir = ft_workdir();
    g_autofree char *out = g_build_filename(dir, "img", NULL);
    g_autofree char *missing = g_build_filename(dir, "no", "such", "dir", NULL);
    g_autofree char *src = g_build_filename(dir, "src", NULL);
    guint before = n_tried;
    int fd;

    ioht_write_random_file(src, 1 << 20, 9);
    {
        const char *a[] = { "fd:57", out, NULL };
        expect(1, "fd 57: not an open file descriptor", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { "-", "fd:57", NULL };
        expect(1, "fd 57: not an open file descriptor", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { out, "57", NULL };
        expect(1, "failure with", a, NULL, 0, NULL);
    }
    {
        /* ... and an existing image is left as it was */
        const char *a[] = { "--status-fd=57", src, out, NULL };
        ioht_write_random_file(out, 12345, 10);
        expect(1, "--status-fd 57", a, NULL, 0, NULL);
        g_assert_cmpuint(ft_file_size(out), ==, 12345);
        g_unlink(out);
    }
    {
        const char *a[] = { missing, out, NULL };
        expect(1, "No such file or directory", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { src, missing, NULL };
        expect(1, "No such file or directory", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { src, dir, NULL };
        expect(1, "Is a directory", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { dir, out, NULL };
        expect(1, "Is a directory", a, NULL, 0, NULL);
    }
    {
        /* A path with a newline and an escape: still one line. */
        g_autofree char *odd = g_build_filename(dir, "no\nsuch\x1b[2J", "img", NULL);
        const char *a[] = { src, odd, NULL };
        const char *lv[] = { odd, "57", NULL };
        expect(1, "No such file or directory", a, NULL, 0, NULL);
        expect(1, "failure with", lv, NULL, 0, NULL);
    }
    if (ioht_dir_supports_direct(dir)) {
        const char *a[] = { "--direct", "--offset=512", "-", out, NULL };
        expect(1, "O_DIRECT", a, NULL, 0, NULL);
    }
    {
        /* The largest offset the parser takes: the file system refuses it. */
        const char *a[] = { "--offset=9223372036854775807", "-", out, NULL };
        expect(1, "iohelper: ", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { "--length=1T", src, out, NULL };
        expect(1, "stream ended after 1048576 of 1099511627776 bytes", a, NULL, 0, NULL);
    }
    /* libvirt's form with a read-write fd: which direction would it be? */
    fd = open(out, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    {
        const char *a[] = { out, "3", NULL };
        expect(1, "read-write", a, &fd, 1, NULL);
    }
    /* ... and with an fd that is a directory */
    close(fd);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    {
        const char *a[] = { dir, "3", NULL };
        expect(1, "failure with", a, &fd, 1, NULL);
    }
    close(fd);
    g_unlink(src);
    g_unlink(out);
    g_test_message("runtime errors tried: %u", n_tried - before);
}

/* ---- colliding parts (issue 10, cases 1, 2, 5, 6): refused as usage errors, exit 2,
 * with the image exactly as it was. The class, not one command: every side channel
 * against IN and OUT, every operand form (path, hard link, symlink, "-", fd:N, libvirt's
 * PATH FD), files and pipes. ---- */

typedef struct {
    const char *img;         /* the existing image every case must leave intact */
    const char *pristine;    /* a copy of it */
} Collide;

/* Kills a helper that did not refuse at once (a copy onto itself can run forever on the
 * code this guards against): the test then fails on its exit status, and does not hang. */
typedef struct {
    GMutex lock;
    GCond cond;
    gboolean done;
    GPid pid;
} Watchdog;

static gpointer
watchdog_main(gpointer data)
{
    Watchdog *w = data;
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    g_mutex_lock(&w->lock);
    while (!w->done) {
        if (!g_cond_wait_until(&w->cond, &w->lock, deadline)) {
            kill(w->pid, SIGKILL);
            break;
        }
    }
    g_mutex_unlock(&w->lock);
    return NULL;
}

/* Runs iohelper with @args, stdin @in_fd, stdout @out_fd (-1: /dev/null) and @n fds
 * @fds at @targets; expects exit @code with @needle and the image untouched. */
static void
expect_fds(const Collide *co, int code, const char *needle, const char *const *args,
           int in_fd, int out_fd, const int *fds, const int *targets, int n)
{
    FtSpawn s = { .args = args, .in_fd = in_fd, .out_fd = out_fd, .extra_fds = fds,
                  .extra_targets = targets, .n_extra = n };
    g_autofree char *shown = g_strjoinv(" ", (char **)args);
    FtChild c = ft_spawn(&s);
    Watchdog w = { .pid = c.pid };
    GThread *t = g_thread_new("watchdog", watchdog_main, &w);
    FtResult r;

    ft_wait(&c, &r);
    g_mutex_lock(&w.lock);
    w.done = TRUE;
    g_cond_signal(&w.cond);
    g_mutex_unlock(&w.lock);
    g_thread_join(t);
    n_tried++;
    if (r.code != code) {
        g_test_fail_printf("iohelper %s: exit %d, expected %d (%s)", shown, r.code, code,
                           r.err);
    } else if (code != 0 && !ft_one_line(r.err)) {
        g_test_fail_printf("iohelper %s: stderr is not one 'iohelper: ' line", shown);
    } else if (needle && !strstr(r.err, needle)) {
        g_test_fail_printf("iohelper %s: stderr '%s' lacks '%s'", shown, r.err, needle);
    } else if (co && !ioht_files_equal(co->img, co->pristine)) {
        g_test_fail_printf("iohelper %s: the image changed", shown);
    }
    ft_result_clear(&r);
}

static int
open_or_die(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static Collide
collide_setup(const char *name)
{
    Collide co = {
        .img = g_build_filename(ft_workdir(), name, NULL),
        .pristine = g_strconcat(ft_workdir(), "/", name, ".pristine", NULL),
    };

    ioht_write_random_file(co.img, 8192 + 100, 77);
    ioht_write_random_file(co.pristine, 8192 + 100, 77);
    return co;
}

static void
collide_clear(Collide *co)
{
    g_unlink(co->img);
    g_unlink(co->pristine);
    g_free((char *)co->img);
    g_free((char *)co->pristine);
}

/* --status-fd aimed at OUT or IN, through every form that can name the same file. */
static void
test_status_fd_collisions(void)
{
    Collide co = collide_setup("sc-img");
    g_autofree char *sym = g_build_filename(ft_workdir(), "sc-link", NULL);
    g_autofree char *hard = g_build_filename(ft_workdir(), "sc-hard", NULL);
    const char *needle = "--status-fd";
    static const int t3[] = { 3 }, t34[] = { 3, 4 };
    int p[2], w, r, a, fds[2];
    guint before = n_tried;

    g_assert_cmpint(symlink(co.img, sym), ==, 0);
    g_assert_cmpint(link(co.img, hard), ==, 0);
    w = open_or_die(co.img, O_WRONLY);
    a = open_or_die(co.img, O_WRONLY | O_APPEND);
    r = open_or_die(co.img, O_RDONLY);
    ft_pipe(p);
    {   /* status on the stdout pipe that carries the stream (restore) */
        const char *args[] = { "--status-fd=1", co.img, "-", NULL };
        expect_fds(&co, 2, needle, args, -1, p[1], NULL, NULL, 0);
    }
    {   /* ... and in libvirt's restore form */
        const char *args[] = { "--status-fd=1", co.img, "3", NULL };
        expect_fds(&co, 2, needle, args, -1, p[1], &r, t3, 1);
    }
    {   /* status on the stdin pipe the stream comes from */
        const char *args[] = { "--status-fd=0", "-", co.img, NULL };
        expect_fds(&co, 2, needle, args, p[0], -1, NULL, NULL, 0);
    }
    {   /* OUT is fd:3, status also fd 3; OUT a path, status an fd on it (plain, O_APPEND,
         * a hard link, a symlink) */
        const char *a1[] = { "--status-fd=3", "-", "fd:3", NULL };
        const char *a2[] = { "--status-fd=3", "-", co.img, NULL };
        const char *a3[] = { "--status-fd=3", "-", hard, NULL };
        const char *a4[] = { "--status-fd=3", "-", sym, NULL };
        expect_fds(&co, 2, needle, a1, -1, -1, &w, t3, 1);
        expect_fds(&co, 2, needle, a2, -1, -1, &w, t3, 1);
        expect_fds(&co, 2, needle, a2, -1, -1, &a, t3, 1);
        expect_fds(&co, 2, needle, a3, -1, -1, &a, t3, 1);
        expect_fds(&co, 2, needle, a4, -1, -1, &w, t3, 1);
    }
    {   /* status aimed at the source of a restore, in both forms */
        const char *a1[] = { "--status-fd=3", co.img, "-", NULL };
        const char *a2[] = { "--status-fd=3", "fd:4", "-", NULL };
        const char *a3[] = { "--status-fd=3", co.img, "4", NULL };
        fds[0] = a;
        fds[1] = r;
        expect_fds(&co, 2, needle, a1, -1, -1, &a, t3, 1);
        expect_fds(&co, 2, needle, a2, -1, -1, fds, t34, 2);
        expect_fds(&co, 2, needle, a3, -1, -1, fds, t34, 2);
    }
    {   /* libvirt's save form: status on the image fd */
        const char *args[] = { "--status-fd=3", co.img, "4", NULL };
        fds[0] = a;
        fds[1] = w;
        expect_fds(&co, 2, needle, args, -1, -1, fds, t34, 2);
    }
    {   /* status on stderr while OUT is stderr too */
        const char *args[] = { "--status-fd=2", co.img, "fd:2", NULL };
        expect_fds(NULL, 2, needle, args, -1, -1, NULL, NULL, 0);
    }
    close(p[0]);
    close(p[1]);
    close(w);
    close(a);
    close(r);
    g_unlink(sym);
    g_unlink(hard);
    collide_clear(&co);
    g_test_message("status fd collisions tried: %u", n_tried - before);
}

/* --record naming IN or OUT (by any name), and --stats on stderr when stderr is OUT. */
static void
test_record_stats_collisions(void)
{
    Collide co = collide_setup("rs-img");
    g_autofree char *sym = g_build_filename(ft_workdir(), "rs-link", NULL);
    g_autofree char *fresh = g_build_filename(ft_workdir(), "rs-new", NULL);
    g_autofree char *opt_img = g_strdup_printf("--record=%s", co.img);
    g_autofree char *opt_link = g_strdup_printf("--record=%s", sym);
    g_autofree char *opt_fresh = g_strdup_printf("--record=%s", fresh);
    static const int t3[] = { 3 };
    int p[2], w, r;
    guint before = n_tried;

    g_assert_cmpint(symlink(co.img, sym), ==, 0);
    w = open_or_die(co.img, O_WRONLY);
    r = open_or_die(co.img, O_RDONLY);
    ft_pipe(p);
    {
        const char *save[] = { opt_img, "-", co.img, NULL };
        const char *save_link[] = { opt_link, "-", co.img, NULL };
        const char *restore[] = { opt_img, co.img, "-", NULL };
        const char *fd_out[] = { opt_link, "-", "fd:3", NULL };
        const char *lv_save[] = { opt_img, co.img, "3", NULL };
        const char *lv_restore[] = { opt_link, co.img, "3", NULL };
        const char *rec_stdout[] = { "--record=/dev/stdout", co.img, "-", NULL };
        expect_fds(&co, 2, "--record", save, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, "--record", save_link, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, "--record", restore, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, "--record", fd_out, -1, -1, &w, t3, 1);
        expect_fds(&co, 2, "--record", lv_save, -1, -1, &w, t3, 1);
        expect_fds(&co, 2, "--record", lv_restore, -1, -1, &r, t3, 1);
        expect_fds(&co, 2, "--record", rec_stdout, -1, p[1], NULL, NULL, 0);
    }
    {   /* a record and an OUT that do not exist yet, named alike: neither is created */
        const char *args[] = { opt_fresh, "-", fresh, NULL };
        expect_fds(NULL, 2, "--record", args, -1, -1, NULL, NULL, 0);
        if (g_file_test(fresh, G_FILE_TEST_EXISTS)) {
            g_test_fail_printf("a refused --record created %s", fresh);
        }
    }
    {   /* --stats (text or json) printed into OUT */
        const char *text[] = { "--stats", co.img, "fd:2", NULL };
        const char *json[] = { "--stats=json", "-", "fd:2", NULL };
        expect_fds(&co, 2, "--stats", text, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, "--stats", json, -1, -1, NULL, NULL, 0);
    }
    close(p[0]);
    close(p[1]);
    close(w);
    close(r);
    g_unlink(sym);
    collide_clear(&co);
    g_test_message("record and stats collisions tried: %u", n_tried - before);
}

/* IN and OUT the same file or pipe, whatever the operand forms. */
static void
test_same_data(void)
{
    Collide co = collide_setup("sd-img");
    g_autofree char *sym = g_build_filename(ft_workdir(), "sd-link", NULL);
    g_autofree char *hard = g_build_filename(ft_workdir(), "sd-hard", NULL);
    const char *needle = "same file";
    static const int t3[] = { 3 };
    int p[2], w, a, r;
    guint before = n_tried;

    g_assert_cmpint(symlink(co.img, sym), ==, 0);
    g_assert_cmpint(link(co.img, hard), ==, 0);
    w = open_or_die(co.img, O_WRONLY);
    a = open_or_die(co.img, O_WRONLY | O_APPEND);
    r = open_or_die(co.img, O_RDONLY);
    ft_pipe(p);
    {
        const char *to_stdout[] = { co.img, "-", NULL };       /* iohelper img - >>img */
        const char *to_fd[] = { co.img, "fd:3", NULL };
        const char *from_fd[] = { "fd:3", co.img, NULL };
        const char *from_stdin[] = { "-", co.img, NULL };       /* iohelper - img <img */
        const char *both_stdio[] = { "-", "-", NULL };
        const char *by_link[] = { sym, co.img, NULL };
        const char *by_hard[] = { co.img, hard, NULL };
        const char *both_fd[] = { "fd:0", "fd:1", NULL };
        expect_fds(&co, 2, needle, to_stdout, -1, a, NULL, NULL, 0);
        expect_fds(&co, 2, needle, to_stdout, -1, w, NULL, NULL, 0);
        expect_fds(&co, 2, needle, to_fd, -1, -1, &a, t3, 1);
        expect_fds(&co, 2, needle, from_fd, -1, -1, &r, t3, 1);
        expect_fds(&co, 2, needle, from_stdin, r, -1, NULL, NULL, 0);
        expect_fds(&co, 2, needle, both_stdio, r, a, NULL, NULL, 0);
        expect_fds(&co, 2, needle, by_link, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, needle, by_hard, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, needle, both_fd, r, w, NULL, NULL, 0);
        /* a pipe copied into itself */
        expect_fds(&co, 2, needle, both_stdio, p[0], p[1], NULL, NULL, 0);
    }
    {   /* libvirt's form: the image fd is also the stream's stdin or stdout
         * (iohelper P 1 with fd 1 read-only; the stock helper closed fd 1 twice) */
        const char *restore[] = { co.img, "1", NULL };
        const char *save[] = { co.img, "0", NULL };
        const char *save3[] = { co.img, "3", NULL };
        expect_fds(&co, 2, needle, restore, -1, r, NULL, NULL, 0);
        expect_fds(&co, 2, needle, save, w, -1, NULL, NULL, 0);
        expect_fds(&co, 2, needle, save3, r, -1, &a, t3, 1);
    }
    close(p[0]);
    close(p[1]);
    close(w);
    close(a);
    close(r);
    g_unlink(sym);
    g_unlink(hard);
    collide_clear(&co);
    g_test_message("same-file collisions tried: %u", n_tried - before);
}

/* Options that cannot apply to what IN and OUT are. */
static void
test_options_cannot_apply(void)
{
    Collide co = collide_setup("oc-img");
    g_autofree char *other = g_build_filename(ft_workdir(), "oc-other", NULL);
    static const int t3[] = { 3 };
    static const char *const storage_opts[] = { "--offset=4096", "--direct", "--fadvise",
                                                NULL };
    int p[2], q[2], a;
    guint before = n_tried;

    ioht_write_random_file(other, 4096, 78);
    a = open_or_die(co.img, O_WRONLY | O_APPEND);
    ft_pipe(p);
    ft_pipe(q);
    for (const char *const *o = storage_opts; *o; o++) {
        /* pipe to pipe, a pipe as fd:N, and libvirt's form on a pipe */
        const char *stdio[] = { *o, "-", "-", NULL };
        const char *fd[] = { *o, "fd:3", "-", NULL };
        const char *lv[] = { *o, co.img, "3", NULL };
        expect_fds(&co, 2, "applies to a file or block device", stdio, p[0], q[1], NULL,
                   NULL, 0);
        expect_fds(&co, 2, "applies to a file or block device", fd, -1, q[1], &p[0], t3, 1);
        expect_fds(&co, 2, "applies to a file or block device", lv, q[0], -1, &p[1], t3, 1);
    }
    {   /* --offset with a file on both sides: which one? */
        const char *paths[] = { "--offset=4096", other, co.img, NULL };
        const char *fd_out[] = { "--offset=4096", other, "fd:3", NULL };
        const char *restore[] = { "--offset=4096", co.img, other, NULL };
        int w = open_or_die(other, O_RDONLY);
        expect_fds(&co, 2, "both files", paths, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 2, "both files", fd_out, -1, -1, &a, t3, 1);
        expect_fds(&co, 2, "both files", restore, -1, -1, NULL, NULL, 0);
        close(w);
    }
    {   /* --offset into an O_APPEND destination: the writes land at the end anyway */
        const char *fd[] = { "--offset=4096", "-", "fd:3", NULL };
        const char *out[] = { "--offset=4096", "-", "-", NULL };
        const char *lv[] = { "--offset=4096", co.img, "3", NULL };
        expect_fds(&co, 2, "O_APPEND", fd, p[0], -1, &a, t3, 1);
        expect_fds(&co, 2, "O_APPEND", out, p[0], a, NULL, NULL, 0);
        expect_fds(&co, 2, "O_APPEND", lv, p[0], -1, &a, t3, 1);
    }
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(q[1]);
    close(a);
    g_unlink(other);
    collide_clear(&co);
    g_test_message("options that cannot apply tried: %u", n_tried - before);
}

/* A restore from past the end of the file is an error, not an empty success, in every
 * form and mode; --length=0 asks for nothing and gets it; the end itself is an empty
 * stream. */
static void
test_offset_past_end(void)
{
    Collide co = collide_setup("pe-img");
    static const int t3[] = { 3 };
    static const char *const modes[] = { "--fadvise", "--direct", "--stats", NULL };
    int r = open_or_die(co.img, O_RDONLY);
    guint before = n_tried;

    for (const char *const *m = modes; *m; m++) {
        const char *path[] = { *m, "--offset=16K", co.img, "-", NULL };
        const char *fd[] = { *m, "--offset=1M", "fd:3", "-", NULL };
        const char *lv[] = { *m, "--offset=12K", co.img, "3", NULL };
        const char *none[] = { *m, "--offset=16K", "--length=0", co.img, "-", NULL };
        if (g_str_equal(*m, "--direct") && !ioht_dir_supports_direct(ft_workdir())) {
            continue;
        }
        expect_fds(&co, 1, "past its end (8292 bytes)", path, -1, -1, NULL, NULL, 0);
        expect_fds(&co, 1, "past its end (8292 bytes)", fd, -1, -1, &r, t3, 1);
        expect_fds(&co, 1, "past its end (8292 bytes)", lv, -1, -1, &r, t3, 1);
        expect_fds(&co, 0, NULL, none, -1, -1, NULL, NULL, 0);
    }
    {
        const char *at_end[] = { "--offset=8292", co.img, "-", NULL };
        FtSpawn s = { .args = at_end, .in_fd = -1, .out_fd = -1 };
        FtChild c = ft_spawn(&s);
        FtResult res;
        ft_wait(&c, &res);
        g_assert_cmpint(res.code, ==, 0);
        ft_result_clear(&res);
    }
    close(r);
    collide_clear(&co);
    g_test_message("offsets past the end tried: %u", n_tried - before);
}

/* Operand and option grammar: fd:WORD is a usage error; only a bare "-" is stdio;
 * "--stats json" is refused with the fix in the message; 1MB is ambiguous. */
static void
test_grammar(void)
{
    g_autofree char *out = g_build_filename(ft_workdir(), "gr-img", NULL);
    static const char *const bad_fds[] = {
        "fd:abc", "fd:", "fd:-1", "fd:+1", "fd: 1", "fd:1x", "fd:0x1", "fd:99999999999",
        "fd:1.0", NULL,
    };
    static const char *const words[] = { "json", "text", NULL };
    guint before = n_tried;

    for (const char *const *f = bad_fds; *f; f++) {
        const char *as_in[] = { *f, out, NULL };
        const char *as_out[] = { "-", *f, NULL };
        expect(2, "not a file descriptor number", as_in, NULL, 0, out);
        expect(2, "not a file descriptor number", as_out, NULL, 0, NULL);
        expect_parse_fails(as_in);
        expect_parse_fails(as_out);
    }
    for (const char *const *w = words; *w; w++) {
        g_autofree char *hint = g_strdup_printf("--stats=%s", *w);
        const char *four[] = { "--stats", *w, "-", out, NULL };
        const char *three[] = { "--stats", *w, out, NULL };
        const char *after[] = { "-", out, "--stats", *w, NULL };
        expect(2, hint, four, NULL, 0, out);
        expect(2, hint, three, NULL, 0, out);
        expect(2, hint, after, NULL, 0, out);
        expect_parse_fails(four);
        expect_parse_fails(three);
    }
    {
        const char *mb[] = { "--buffer-size=1MB", "-", out, NULL };
        expect(2, "ambiguous", mb, NULL, 0, out);
    }
    g_unlink(out);
    g_test_message("operand and option grammar tried: %u", n_tried - before);
}

int
main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_func("/faults/input/bad-values", test_bad_values);
    g_test_add_func("/faults/input/bad-flags", test_bad_flags);
    g_test_add_func("/faults/input/bad-operands", test_bad_operands);
    g_test_add_func("/faults/input/runtime-errors", test_runtime);
    g_test_add_func("/faults/input/collide/status-fd", test_status_fd_collisions);
    g_test_add_func("/faults/input/collide/record-stats", test_record_stats_collisions);
    g_test_add_func("/faults/input/collide/same-data", test_same_data);
    g_test_add_func("/faults/input/options-cannot-apply", test_options_cannot_apply);
    g_test_add_func("/faults/input/offset-past-end", test_offset_past_end);
    g_test_add_func("/faults/input/grammar", test_grammar);
    ret = g_test_run();
    ft_total_bad_inputs = n_tried;
    ft_report();
    ft_cleanup();
    return ret;
}
