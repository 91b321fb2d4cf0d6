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
        const char *a[] = { "fd:abc", out, NULL };
        expect(1, "not a file descriptor number", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { "fd:-1", out, NULL };
        expect(1, "not a file descriptor number", a, NULL, 0, NULL);
    }
    {
        const char *a[] = { "fd:99999999999", out, NULL };
        expect(1, "not a file descriptor number", a, NULL, 0, NULL);
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
        const char *a[] = { "--direct", "--offset=512", src, out, NULL };
        expect(1, "O_DIRECT", a, NULL, 0, NULL);
    }
    {
        /* The largest offset the parser takes: the file system refuses it. */
        const char *a[] = { "--offset=9223372036854775807", src, out, NULL };
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
    ret = g_test_run();
    ft_total_bad_inputs = n_tried;
    ft_report();
    ft_cleanup();
    return ret;
}
