/* test-uring.c - faults of the io_uring save (helper/engine/strategies/ioh-strategy-uring.c)
 *
 * io_uring submissions bypass the fault shim's libc wrappers, so the strategy asks the
 * shim about each read and write before it submits it (ioh_fault_uring()): a failed
 * completion (EIO, ENOSPC, EAGAIN, EINVAL), a short read or write, a failed submission, a
 * kernel that refuses io_uring. Each run ends in a non-zero exit and one line on stderr,
 * or in byte-exact data; a rule that never fired fails the test. A --direct save from a
 * pipe takes io_uring unless the kernel refuses it: then every test is skipped. Each case
 * runs twice: without a filter, and through a filter (--checksum=xxh3, which hands on the
 * stream as it is, so the image is still the stream) on the filter stage's writes
 * (ioh-uring-stage.c, chosen with IOHELPER_IO_URING=filters), which must say so in
 * --stats.
 */
#include "faults-util.h"
#include "ioh-protocol.h"
#include "ioh-test.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <glib/gstdio.h>

#define MiB (1024 * 1024)

typedef struct {
    const char *name;
    const char *fault;       /* IOH_FAULT, on the image and the pipe */
    const char *needle;      /* in stderr; NULL: the save must succeed, byte-exact */
    const char *stats;       /* a success's --stats must say this */
    gboolean norelay;        /* IOHELPER_URING_RELAY=off: io_uring reads the pipe itself */
} Case;

static const Case cases[] = {
    { "write-EIO-2nd", "write:2:EIO", "write %s: Input/output error", NULL, FALSE },
    { "write-ENOSPC-at-5M", "write:@5M:ENOSPC", "write %s: No space left on device", NULL,
      FALSE },
    /* The end of the 12 MiB + 123 byte stream: the last aligned O_DIRECT write (its last
     * byte), then the unaligned tail the file sink writes after the stage's last write. */
    { "write-ENOSPC-last-block", "write:@12582911:ENOSPC", "write %s: No space left on device",
      NULL, FALSE },
    { "write-ENOSPC-tail", "write:unaligned:ENOSPC", "write %s: No space left on device",
      NULL, FALSE },
    /* The reads: splices of the pipe into the relay pipe (ioh-relay.c)... */
    { "read-EIO-3rd", "read:3:EIO", "read stdin: Input/output error", NULL, FALSE },
    { "submit-EIO-3rd", "io_uring_submit:3:EIO", "write %s: io_uring: Input/output error",
      NULL, FALSE },
    { "read-short-every", "read:every:short", NULL, "io_uring used, registered buffers, "
      "relay pipe", FALSE },
    { "write-short-every", "write:every:short", NULL, "io_uring used", FALSE },
    { "read-EAGAIN-2nd", "read:2:EAGAIN", NULL, "io_uring used", FALSE },
    { "write-EAGAIN-2nd", "write:2:EAGAIN", NULL, "io_uring used", FALSE },
    { "write-EINTR-every-3rd", "write:%3:EINTR", NULL, "io_uring used", FALSE },
    /* The file sink writes what an O_DIRECT write refused (it tells EFBIG from a refusal):
     * here it takes it. */
    { "write-EINVAL-2nd", "write:2:EINVAL", NULL, "io_uring used", FALSE },
    /* ... and without the relay, io_uring's reads of the pipe. */
    { "read-EIO-3rd-norelay", "read:3:EIO", "read stdin: Input/output error", NULL, TRUE },
    { "read-short-every-norelay", "read:every:short", NULL, "io_uring used", TRUE },
    { "read-EAGAIN-2nd-norelay", "read:2:EAGAIN", NULL, "io_uring used", TRUE },
    { "setup-refused", "io_uring_setup:1:ENOMEM", NULL,
      "io_uring refused by the kernel (Cannot allocate memory), threads instead", FALSE },
};

/* The filter of the cases' second run, and what --stats says of the stage. */
#define FILTER "--checksum=xxh3"
#define STAGE_USED "filters on its thread"

/* One case, without a filter or through @filter. */
typedef struct {
    const Case *t;
    const char *filter;
} Run;

/* A save of @size random bytes with --direct --stats (and @filter unless NULL) and @fault
 * on the image and the pipe (each call traced into @trace unless NULL); the image's path
 * into *@ret_dst, the source's into *@ret_src. The pipe is the helper's stdin, named by its
 * number: the relay pipe the helper makes is its own, and a splice into it is no write of
 * the image. */
static void
save_traced(const char *fault, const char *trace, guint64 size, const char *filter,
            FtResult *r, char **ret_src, char **ret_dst)
{
    const char *const opts[] = { "--direct", "--stats", filter, NULL };
    char *src = ft_make_source("src", size, 3);

    if (filter) {
        g_setenv("IOHELPER_IO_URING", "filters", TRUE);    /* the helper inherits it */
    } else {
        g_unsetenv("IOHELPER_IO_URING");
    }
    char *dst = g_build_filename(ft_workdir(), "img", NULL);
    FtSpawn how = { .fault = fault, .fault_path = dst, .fault_fds = "0",
                    .fault_trace = trace };

    ft_save(src, dst, opts, &how, r, NULL);
    *ret_src = src;
    *ret_dst = dst;
}

static void
save(const char *fault, guint64 size, const char *filter, FtResult *r, char **ret_src,
     char **ret_dst)
{
    save_traced(fault, NULL, size, filter, r, ret_src, ret_dst);
}

/* TRUE when a clean --direct save from a pipe (through @filter unless NULL) took
 * io_uring here (the filter stage with @filter); skips the test where the kernel refuses
 * it or the build has no liburing, fails it where the save did not choose io_uring
 * otherwise. */
static gboolean
uring_used(const char *filter)
{
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;
    FtResult r;
    gboolean used;

    save("", 2 * MiB + 1, filter, &r, &src, &dst);
    g_assert_cmpint(r.code, ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    used = strstr(r.err, "io_uring used") != NULL;
    if (used && filter && !strstr(r.err, STAGE_USED)) {
        g_test_fail_printf("a filtered save did not take the filter stage: %s", r.err);
    }
    if (!strstr(r.err, "io_uring")) {
        g_test_skip("built without liburing (meson -Dio_uring)");
    } else if (strstr(r.err, "io_uring refused by the kernel")) {
        g_test_skip_printf("the kernel refuses io_uring here: %s", r.err);
    } else if (!used) {
        g_test_fail_printf("a --direct save from a pipe did not take io_uring: %s", r.err);
    }
    ft_result_clear(&r);
    g_unlink(src);
    g_unlink(dst);
    return used;
}

static void
test_case(gconstpointer data)
{
    const Run *run = data;
    const Case *t = run->t;
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;
    FtResult r;
    guint n;

    if (!uring_used(run->filter)) {
        return;
    }
    if (t->norelay) {
        g_setenv("IOHELPER_URING_RELAY", "off", TRUE);
    }
    save(t->fault, 12 * MiB + 123, run->filter, &r, &src, &dst);
    g_unsetenv("IOHELPER_URING_RELAY");
    n = ft_faults_logged();
    g_assert_cmpuint(n, >, 0);     /* a rule that never fired proves nothing */
    ft_count_faults(n);
    if (t->needle) {
        g_autofree char *needle = strstr(t->needle, "%s") ? g_strdup_printf(t->needle, dst)
                                                          : g_strdup(t->needle);

        g_assert_cmpint(r.code, ==, 1);
        g_assert_true(WIFEXITED(r.status));
        g_assert_true(ft_one_line(r.err));
        if (!strstr(r.err, needle)) {
            g_test_fail_printf("stderr '%s' does not say '%s'", r.err, needle);
        }
    } else {
        g_assert_cmpint(r.code, ==, 0);
        if (!ioht_files_equal(src, dst)) {
            ft_total_data_loss++;
            g_test_fail_printf("exit 0 but %s differs from %s", dst, src);
        }
        if (!strstr(r.err, t->stats)) {
            g_test_fail_printf("--stats '%s' does not say '%s'", r.err, t->stats);
        }
        if (run->filter && strstr(t->stats, "io_uring used") && !strstr(r.err, STAGE_USED)) {
            g_test_fail_printf("--stats '%s' does not say '%s'", r.err, STAGE_USED);
        }
    }
    ft_result_clear(&r);
    g_unlink(src);
    g_unlink(dst);
}

/* Every write shortened, each span down to its last block: a short O_DIRECT write the
 * shim injects must be one a real kernel can return, whole O_DIRECT blocks, so that the
 * kernel takes the rest where the engine resubmits it. The shim once halved them below
 * the device's block (256 bytes on a 512-byte device): the kernel refused that shortened
 * write (EINVAL) in every run, the engine took the refusal through the file sink, which
 * cleared O_DIRECT for the unaligned rest, and the other write in flight, refused in the
 * same batch, then failed the save whenever the two completed together (about half the
 * runs under load). No call may fail here, whatever the timing. */
static void
test_short_whole_blocks(gconstpointer data)
{
    const char *filter = data;
    g_autofree char *trace = g_build_filename(ft_workdir(), "uring.trace", NULL);
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;
    g_autofree char *text = NULL;
    FtResult r;

    if (!uring_used(filter)) {
        return;
    }
    save_traced("write:every:short", trace, 2 * MiB + 123, filter, &r, &src, &dst);
    ft_count_faults(ft_faults_logged());
    g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
    if (strstr(text, "ret=-1")) {
        g_test_fail_printf("a shortened write failed: %s", strstr(text, "ret=-1"));
    }
    g_assert_cmpint(r.code, ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    ft_result_clear(&r);
    g_unlink(trace);
    g_unlink(src);
    g_unlink(dst);
}

/* The counts in @status_file's progress lines: stored never falls, synced (stored bytes
 * written O_DIRECT) is never ahead of it, nor (@filtered: FALSE, the stream stored as it
 * is) stored ahead of written; the number of lines. A filter's output can be stored
 * before its input counts as written (the stage writes inside the filter's call). */
static guint
check_progress_lines(const char *status_file, gboolean filtered)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    guint64 last_stored = 0;
    guint n = 0;

    g_assert_true(g_file_get_contents(status_file, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l && **l; l++) {
        g_auto(IohProtocolMsg) m = { 0 };
        g_autoptr(GError) error = NULL;

        g_assert_true(ioh_protocol_decode(*l, strlen(*l), &m, &error));
        g_assert_no_error(error);
        if (m.kind != IOH_PROTOCOL_PROGRESS) {
            continue;
        }
        if (m.synced > m.stored || (!filtered && m.stored > m.written) ||
            m.stored < last_stored) {
            g_test_fail_printf("progress out of order: %s", *l);
        }
        last_stored = m.stored;
        n++;
    }
    return n;
}

/* Progress while a write is short: the first write moves half its bytes and is submitted
 * again for the rest. Its first half (and the other write in flight, done before it) are
 * not stored until it is, in stream order, and so not synced either: a status line once
 * said synced 29 MiB of 24 MiB written (libwrap's progress check caught it under load).
 * The first write's completion is the first progress line, whatever the timing. */
typedef struct {
    const char *name;
    const char *filter;    /* NULL or FILTER */
    const char *fault;     /* IOH_FAULT on the image */
} ProgressCase;

static void
test_progress_in_order(gconstpointer data)
{
    const ProgressCase *pc = data;
    const char *filter = pc->filter;
    g_autofree char *status = g_build_filename(ft_workdir(), "status", NULL);
    g_autofree char *src = NULL;
    g_autofree char *dst = g_build_filename(ft_workdir(), "img", NULL);
    const char *const opts[] = { "--direct", "--status-fd=3", "--status-interval=10", filter,
                                 NULL };
    int target = 3;
    int fd;
    FtResult r;

    if (!uring_used(filter)) {
        return;
    }
    src = ft_make_source("src", 12 * MiB + 123, 5);    /* uring_used() removed its own */
    fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    FtSpawn how = { .fault = pc->fault, .fault_path = dst, .fault_fds = "0",
                    .extra_fds = &fd, .extra_targets = &target, .n_extra = 1 };
    if (filter) {
        g_setenv("IOHELPER_IO_URING", "filters", TRUE);
    }
    ft_save(src, dst, opts, &how, &r, NULL);
    g_unsetenv("IOHELPER_IO_URING");
    close(fd);
    ft_count_faults(ft_faults_logged());
    g_assert_cmpint(r.code, ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    g_assert_cmpuint(check_progress_lines(status, filter != NULL), >, 0);
    ft_result_clear(&r);
    g_unlink(status);
    g_unlink(src);
    g_unlink(dst);
}

int
main(int argc, char **argv)
{
    static Run runs[2 * G_N_ELEMENTS(cases)];
    /* write:2:EINVAL: the O_DIRECT write refused, written through the file sink, which
     * counts what it writes O_DIRECT as synced at once: that must wait, like the write's
     * own bytes, until the write retires in stream order (a status line said synced
     * 2 MiB, stored 0, while the first write was still in flight). */
    static const ProgressCase progress[] = {
        { "progress-in-order", NULL, "write:1:short" },
        { "progress-in-order", FILTER, "write:1:short" },
        { "progress-einval", NULL, "write:2:EINVAL" },
        { "progress-einval", FILTER, "write:2:EINVAL" },
    };
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p = g_strdup_printf("/faults/uring/%s", cases[i].name);
        g_autofree char *pf = g_strdup_printf("/faults/uring/filtered/%s", cases[i].name);

        runs[2 * i] = (Run){ &cases[i], NULL };
        runs[2 * i + 1] = (Run){ &cases[i], FILTER };
        g_test_add_data_func(p, &runs[2 * i], test_case);
        g_test_add_data_func(pf, &runs[2 * i + 1], test_case);
    }
    g_test_add_data_func("/faults/uring/write-short-whole-blocks", NULL,
                         test_short_whole_blocks);
    g_test_add_data_func("/faults/uring/filtered/write-short-whole-blocks", FILTER,
                         test_short_whole_blocks);
    for (gsize i = 0; i < G_N_ELEMENTS(progress); i++) {
        g_autofree char *p = g_strdup_printf("/faults/uring/%s%s",
                                             progress[i].filter ? "filtered/" : "",
                                             progress[i].name);

        g_test_add_data_func(p, &progress[i], test_progress_in_order);
    }
    ret = g_test_run();
    ft_report();
    ft_cleanup();
    return ret;
}
