/* test-behind.c - faults on the writes behind the filters (ioh-filter-behind.c): a
 * filtered --direct save (age, --compress=auto, zstd:1) whose output buffers a thread of
 * its own writes while the filter makes the next ones:
 * - EIO and ENOSPC on the 3rd write of the image (earlier ones done, later ones queued):
 *   exit 1, one line naming the image and the cause, no success claimed;
 * - EIO on the image's unaligned tail (its last write, after the stream ended, while the
 *   flush waits for the writes behind): exit 1, never a success;
 * - every write short, and the 2nd write stalled so the stream ends with writes in flight:
 *   success, and the image decodes to the stream byte for byte (age -d, zstd -dc);
 * - --stats says the writes went behind, and counts them (the writer thread's write calls
 *   moved into the copy's stats).
 * - age's sealed 1 MiB reads go out in writes of about 4 MiB (several sealed into one
 *   output buffer), and streams ending around 1 MiB and 4 MiB multiples decode exactly.
 * Skipped without age-keygen/age (the age cases) or zstd (the others). */
#include "faults-util.h"
#include "ioh-test.h"

#include <signal.h>
#include <string.h>
#include <glib/gstdio.h>

#define MiB (1024 * 1024)

static char *key;            /* an age identity file, or NULL */
static char *recipient;      /* --recipient=age1... */

typedef struct {
    const char *name;        /* in the test's path */
    const char *filter;      /* the option that makes the filter */
    const char *tool;        /* the CLI that decodes the image */
} Filter;

static const Filter filters[] = {
    { "age", NULL, "age" },
    { "auto", "--compress=auto", "zstd" },
    { "zstd1", "--compress=zstd:1", "zstd" },
};

/* The filter's option ("" when its tool or key is missing: skipped). */
static const char *
filter_opt(const Filter *f)
{
    g_autofree char *tool = g_find_program_in_path(f->tool);

    if (!tool || (g_str_has_prefix(f->name, "age") && !key)) {
        g_test_skip("age, age-keygen or zstd is not installed");
        return "";
    }
    return f->filter ? f->filter : recipient;
}

/* TRUE when @img decodes (age -d -i KEY, zstd -dc) to exactly @src's bytes. */
static gboolean
decodes_to(const Filter *f, const char *img, const char *src)
{
    g_autofree char *out = g_build_filename(ft_workdir(), "decoded", NULL);
    g_autofree char *cmd = g_str_has_prefix(f->name, "age")
                               ? g_strdup_printf("age -d -i '%s' -o '%s' '%s'", key, out, img)
                               : g_strdup_printf("zstd -q -d -f -o '%s' '%s'", out, img);
    int status = -1;

    g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL));
    return status == 0 && ioht_files_equal(src, out);
}

/* A stream like a guest's RAM (random and text MiBs) with an odd tail. */
static char *
make_source(void)
{
    return ft_make_mixed_source("src", 24 * MiB + 4097, 7);
}

typedef struct {
    const Filter *f;
    const char *fault;       /* the shim's rule on the image */
    const char *needle;      /* NULL: succeeds, byte-exact */
} Case;

static void
test_fault(gconstpointer data)
{
    const Case *t = data;
    const char *opt = filter_opt(t->f);
    g_autofree char *src = NULL;
    g_autofree char *img = g_build_filename(ft_workdir(), "img", NULL);
    const char *o[] = { "--direct", "--stats", opt, NULL };
    FtSpawn how = { .fault = t->fault };
    FtResult r;

    if (!*opt) {
        return;
    }
    src = make_source();
    ft_save(src, img, o, &how, &r, NULL);
    g_assert_cmpuint(ft_faults_logged(), >, 0);    /* a rule that never fired proves nothing */
    ft_count_faults(1);
    g_test_message("stderr: %s", r.err);
    if (t->needle) {
        g_assert_cmpint(r.code, ==, 1);
        g_assert_true(ft_one_line(r.err));     /* the error, and no stats: no success */
        g_assert_nonnull(strstr(r.err, img));
        g_assert_nonnull(strstr(r.err, t->needle));
    } else {
        g_assert_cmpint(r.code, ==, 0);
        g_assert_nonnull(strstr(r.err, "writes behind the filters"));
        g_assert_true(decodes_to(t->f, img, src));
    }
    ft_result_clear(&r);
}

/* The write calls in the shim's @trace: how many, and how many under @min bytes. */
static guint
write_calls(const char *trace, gsize min, guint *ret_small)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    guint calls = 0;

    *ret_small = 0;
    g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *len = strstr(lines[i], " len=");

        if (g_str_has_prefix(lines[i], "write") && len) {
            calls++;
            *ret_small += g_ascii_strtoull(len + 5, NULL, 10) < min ? 1 : 0;
        }
    }
    return calls;
}

/* Saves the source with @f, --direct and @more, the image's write calls traced: their
 * number in *@ret_calls, those under @min bytes in *@ret_small. The save succeeds and the
 * image decodes to the stream. FALSE: skipped (no tool). */
static gboolean
traced_save(const Filter *f, const char *more, gsize min, FtResult *r, guint *ret_calls,
            guint *ret_small)
{
    const char *opt = filter_opt(f);
    g_autofree char *src = NULL;
    g_autofree char *img = g_build_filename(ft_workdir(), "img", NULL);
    g_autofree char *trace = g_build_filename(ft_workdir(), "trace", NULL);
    const char *o[] = { "--direct", opt, more, NULL };
    FtSpawn how = { .fault = "write:99999:EIO", .fault_trace = trace };

    if (!*opt) {
        return FALSE;
    }
    src = make_source();
    g_unlink(trace);
    ft_save(src, img, o, &how, r, NULL);
    g_assert_cmpint(r->code, ==, 0);
    *ret_calls = write_calls(trace, min, ret_small);
    g_assert_true(decodes_to(f, img, src));
    return TRUE;
}

/* Without faults: --stats=json says the writes went behind, counts the image's write
 * calls as the shim's trace saw them, and the image decodes to the stream. */
static void
test_stats(gconstpointer data)
{
    g_autofree char *want = NULL;
    guint calls = 0, small = 0;
    FtResult r;

    if (!traced_save(data, "--stats=json", 0, &r, &calls, &small)) {
        return;
    }
    g_assert_nonnull(strstr(r.err, "\"writes_behind\":true"));
    want = g_strdup_printf("\"writes\":%u,", calls);
    g_test_message("trace: %u write calls; stats: %s", calls, r.err);
    g_assert_nonnull(strstr(r.err, want));
    ft_result_clear(&r);
}

/* An encrypted save read 1 MiB at a time writes about 4 MiB per call: sealed reads are
 * gathered in one output buffer (ioh-filter-age.c, age_append_direct). Inline, where each
 * read is 1 MiB (the ring hands on 1-4 MiB as its reader is ahead or not). Before,
 * each 1 MiB read was a write of its own unless the writer lagged (most calls under
 * 3 MiB). At most the first, the last aligned one and the unaligned tail are smaller. */
static void
test_age_writes(gconstpointer data)
{
    guint calls = 0, small = 0;
    FtResult r;

    if (!traced_save(data, NULL, 3 * MiB, &r, &calls, &small)) {
        return;
    }
    g_test_message("%u write calls, %u under 3 MiB", calls, small);
    g_assert_cmpuint(small, <=, 3);
    g_assert_cmpuint(calls, <=, 24 / 3 + 3);
    ft_result_clear(&r);
}

/* Streams ending at and around 1 MiB and 4 MiB multiples (the reads, the output buffers,
 * the chunks) decode to themselves on both ways. */
static void
test_age_lengths(gconstpointer data)
{
    static const guint64 sizes[] = { MiB - 1, MiB, 4 * MiB - 65536, 4 * MiB - 1, 4 * MiB + 1,
                                     4 * MiB + 65536 + 1, 8 * MiB - 16, 9 * MiB + 65535,
                                     16 * MiB + 65537 };
    const Filter *f = data;
    const char *opt = filter_opt(f);
    g_autofree char *img = g_build_filename(ft_workdir(), "img", NULL);
    const char *o[] = { "--direct", opt, NULL };

    if (!*opt) {
        return;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *src = ft_make_mixed_source("src", sizes[i], (guint32)i);
        FtResult r;

        ft_save(src, img, o, NULL, &r, NULL);
        g_test_message("%" G_GUINT64_FORMAT " bytes: exit %d", sizes[i], r.code);
        g_assert_cmpint(r.code, ==, 0);
        g_assert_true(decodes_to(f, img, src));
        ft_result_clear(&r);
    }
}

static void
add_cases(void)
{
    static const struct { const char *name, *fault, *needle; } cases[] = {
        { "EIO-3rd-write", "write:3:EIO", "Input/output error" },
        { "ENOSPC-3rd-write", "write:3:ENOSPC", "No space left" },
        /* the unaligned tail, the last write, after the stream ended (the image's size
         * is not known before: zstd's output depends on how the ring hands it the stream) */
        { "EIO-tail", "write:unaligned:EIO", "Input/output error" },
        { "short-writes", "write:every:short", NULL },
        { "stream-ends-in-flight", "write:2:stall1500", NULL },
    };

    for (gsize f = 0; f < G_N_ELEMENTS(filters); f++) {
        g_autofree char *sp = g_strdup_printf("/faults/behind/stats/%s", filters[f].name);

        for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
            Case *t = g_new0(Case, 1);
            g_autofree char *path = g_strdup_printf("/faults/behind/%s/%s", cases[i].name,
                                                    filters[f].name);

            *t = (Case){ &filters[f], cases[i].fault, cases[i].needle };
            g_test_add_data_func_full(path, t, test_fault, g_free);
        }
        g_test_add_data_func(sp, &filters[f], test_stats);
    }
    g_test_add_data_func("/faults/behind/age-writes-4MiB", &filters[0], test_age_writes);
    g_test_add_data_func("/faults/behind/lengths/age", &filters[0], test_age_lengths);
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);    /* a helper that is gone gives EPIPE to the feed */
    key = ft_age_keygen(&recipient);
    add_cases();
    rc = g_test_run();
    ft_report();
    ft_cleanup();
    g_free(recipient);
    g_free(key);
    return rc;
}
