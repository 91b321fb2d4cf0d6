/* test-encrypt.c - faults around an age-encrypted save or restore (--recipient,
 * --identity), in every cache mode, from the fault shim and from the processes:
 * - EIO and ENOSPC on the image inside a chunk (at 100 KiB: chunk 1) on a save, EIO on
 *   a restore, short reads of the image (which must still restore byte-exact);
 * - the producer gone mid-chunk (with --length: an error, not a shorter image), the
 *   image it left restored (refused, naming the chunk), the consumer gone mid-restore.
 * Every failure is exit 1 and one line; a restore never delivers a byte that differs
 * from the stream, nor past the chunks that authenticated. Skipped without age-keygen. */
#include "faults-util.h"
#include "ioh-test.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define MiB (1024 * 1024)
#define CHUNK 65536

static const char *const modes[] = { "buffered", "--direct", "--fadvise" };
static char *key;            /* the identity file */
static char *recipient;      /* --recipient=age1... */
static char *identity;       /* --identity=FILE */

/* The options of mode @m with @extra. */
static const char *const *
opts_of(const char *m, const char *extra, const char *extra2)
{
    static const char *o[4];
    int i = 0;

    if (m[0] == '-') {
        o[i++] = m;
    }
    o[i++] = extra;
    o[i++] = extra2;
    o[i] = NULL;
    return o;
}

static gboolean
skip_without_key(void)
{
    if (!key) {
        g_test_skip("age-keygen is not installed (Debian package age)");
    }
    return !key;
}

/* An image of @src made without faults: its path. */
static char *
make_image(const char *src, const char *mode)
{
    char *img = g_build_filename(ft_workdir(), "img", NULL);
    FtResult r;

    ft_save(src, img, opts_of(mode, recipient, NULL), NULL, &r, NULL);
    g_assert_cmpint(r.code, ==, 0);
    ft_result_clear(&r);
    return img;
}

/* Exit 1, one line holding @needle. */
static void
assert_failed(const FtResult *r, const char *needle)
{
    g_test_message("stderr: %s", r->err);
    g_assert_cmpint(r->code, ==, 1);
    g_assert_true(ft_one_line(r->err));
    g_assert_nonnull(strstr(r->err, needle));
}

/* What a restore delivered into @out: at most @max bytes, and those the stream's. */
static void
assert_delivered_prefix(const char *src, const char *out, guint64 max)
{
    guint64 n = g_file_test(out, G_FILE_TEST_EXISTS) ? ft_file_size(out) : 0;

    g_test_message("delivered %" G_GUINT64_FORMAT " bytes", n);
    g_assert_cmpuint(n, <=, max);
    g_assert_true(ft_prefix_equal(src, out, n));
    if (n > max) {
        ft_total_data_loss++;
    }
}

typedef struct {
    const char *mode;
    const char *fault;       /* the shim's rule on the image */
    gboolean restore;
    const char *needle;      /* NULL: succeeds, byte-exact */
} Case;

static void
test_inject(gconstpointer data)
{
    const Case *t = data;
    g_autofree char *src = NULL;
    g_autofree char *img = NULL;
    g_autofree char *out = g_build_filename(ft_workdir(), "out", NULL);
    FtSpawn how = { .fault = t->fault };
    FtResult r;
    guint n;

    if (skip_without_key()) {
        return;
    }
    src = ft_make_source("src", 3 * MiB + 5, 3);
    g_unlink(out);
    if (t->restore) {
        img = make_image(src, "buffered");
        ft_restore(img, out, opts_of(t->mode, identity, NULL), &how, &r, NULL);
    } else {
        img = g_build_filename(ft_workdir(), "img", NULL);
        ft_save(src, img, opts_of(t->mode, recipient, NULL), &how, &r, NULL);
    }
    n = ft_faults_logged();
    g_assert_cmpuint(n, >, 0);     /* a rule that never fired would prove nothing */
    ft_count_faults(n);
    if (t->needle) {
        assert_failed(&r, t->needle);
        if (t->restore) {
            /* the read at 100 KiB failed: chunk 0 at most (the chunk in flight never) */
            assert_delivered_prefix(src, out, CHUNK);
        }
    } else {
        g_assert_cmpint(r.code, ==, 0);
        g_assert_true(ioht_files_equal(src, out));
    }
    ft_result_clear(&r);
}

/* The producer gone after 100000 bytes (inside chunk 1): with --length the save fails;
 * without, the image holds a shorter stream whose last chunk is chunk 1 (a whole one). */
static void
test_producer_gone(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = NULL;
    g_autofree char *img = g_build_filename(ft_workdir(), "img", NULL);
    g_autofree char *out = g_build_filename(ft_workdir(), "out", NULL);
    g_autofree const char **args = NULL;
    const char *const *o;
    FtSpawn s = { 0 };
    FtResult r;
    FtChild c;
    FtFeed *f;
    int p[2];

    if (skip_without_key()) {
        return;
    }
    src = ft_make_source("src", 3 * MiB, 4);
    o = opts_of(mode, recipient, "--length=3M");
    args = g_new0(const char *, 6);
    for (int i = 0; o[i]; i++) {
        args[i] = o[i];
    }
    args[g_strv_length((char **)args)] = "-";
    args[g_strv_length((char **)args)] = img;
    s.args = args;
    s.out_fd = -1;
    ft_pipe(p);
    s.in_fd = p[0];
    c = ft_spawn(&s);
    close(p[0]);
    f = ft_feed_start(p[1], src, 100000, 0, 0, FALSE);
    ft_wait(&c, &r);
    ft_feed_join(f);
    assert_failed(&r, "stream ended after 100000 of 3145728");
    ft_result_clear(&r);
    /* what is on disk, if anything, restores to no byte past the stream's first chunks */
    if (g_file_test(img, G_FILE_TEST_EXISTS) && ft_file_size(img) > 0) {
        ft_restore(img, out, opts_of(mode, identity, NULL), NULL, &r, NULL);
        if (r.code != 0) {
            assert_failed(&r, "img");
        }
        assert_delivered_prefix(src, out, 100000);
        ft_result_clear(&r);
    }
}

/* The consumer gone after 100000 bytes of a restore: exit 1, one line. */
static void
test_consumer_gone(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = NULL;
    g_autofree char *img = NULL;
    const char *args[] = { NULL, NULL, NULL, NULL, NULL };
    FtSpawn s = { 0 };
    FtResult r;
    FtChild c;
    FtDrain *d;
    int p[2], i = 0;

    if (skip_without_key()) {
        return;
    }
    src = ft_make_source("src", 8 * MiB, 5);
    img = make_image(src, "buffered");
    if (mode[0] == '-') {
        args[i++] = mode;
    }
    args[i++] = identity;
    args[i++] = img;
    args[i] = "-";
    s.args = args;
    s.in_fd = -1;
    ft_pipe(p);
    s.out_fd = p[1];
    c = ft_spawn(&s);
    close(p[1]);
    d = ft_drain_start(p[0], NULL, 100000, 0, 0);
    g_assert_cmpuint(ft_drain_join(d), ==, 100000);
    ft_wait(&c, &r);
    assert_failed(&r, "Broken pipe");
    ft_result_clear(&r);
}

static void
add_cases(void)
{
    static const struct { const char *name, *fault; gboolean restore; const char *needle; }
    cases[] = {
        { "save/EIO-in-chunk-1", "write:@100K:EIO", FALSE, "Input/output error" },
        { "save/ENOSPC-in-chunk-1", "write:@100K:ENOSPC", FALSE, "No space left" },
        { "restore/EIO-in-chunk-1", "read:@100K:EIO,pread:@100K:EIO", TRUE,
          "Input/output error" },
        { "restore/short-reads", "read:every:short,pread:every:short", TRUE, NULL },
    };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        const char *mname = modes[m][0] == '-' ? modes[m] + 2 : modes[m];
        g_autofree char *pg = g_strdup_printf("/faults/encrypt/save/producer-gone/%s", mname);
        g_autofree char *cg = g_strdup_printf("/faults/encrypt/restore/consumer-gone/%s",
                                              mname);

        for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
            Case *t = g_new0(Case, 1);
            g_autofree char *path = g_strdup_printf("/faults/encrypt/%s/%s", cases[i].name,
                                                    mname);

            *t = (Case){ modes[m], cases[i].fault, cases[i].restore, cases[i].needle };
            g_test_add_data_func_full(path, t, test_inject, g_free);
        }
        g_test_add_data_func(pg, modes[m], test_producer_gone);
        g_test_add_data_func(cg, modes[m], test_consumer_gone);
    }
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);    /* a helper that is gone gives EPIPE to the pumps */
    key = ft_age_keygen(&recipient);
    if (key) {
        identity = g_strdup_printf("--identity=%s", key);
    }
    add_cases();
    rc = g_test_run();
    ft_report();
    ft_cleanup();
    return rc;
}
