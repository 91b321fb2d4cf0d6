/* test-splice.c - the splice path of the engine (helper/engine/strategies/ioh-strategy-splice.c),
 * through the real binary: a buffered or --fadvise save from a pipe and restore into a
 * pipe, with no filter, take it (the debug line "strategy splice", splice calls counted in
 * --stats=json) and deliver every byte at the edges: 0, 1, 4095 and 1 MiB + 7 bytes,
 * with --offset and --length. A filter, an O_DIRECT save or ranged restore and an
 * O_APPEND file (which the kernel refuses to splice into) take read/write, byte-exact all
 * the same. A whole --direct restore into a pipe splices through the parallel readers'
 * own pipes (ioh-strategy-parallel-splice.c). */
#include "ioh-test.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#define MiB (1024 * 1024)

static char *workdir;

typedef struct {
    const char *mode;     /* "" (buffered), "--fadvise", "--direct" */
    guint64 size;
    gboolean restore;
    gboolean ranged;      /* --offset=4096 and --length */
    const char *extra;    /* one more option (a filter), or NULL */
} SpliceCase;

typedef struct {
    int code;
    char *err;            /* the helper's stderr */
    JsonObject *stats;    /* its --stats=json line */
    JsonParser *parser;
} SpliceRun;

static void
splice_run_clear(SpliceRun *r)
{
    g_free(r->err);
    g_clear_object(&r->parser);
}

/* The last line of @err that starts with '{': the --stats=json object. */
static void
parse_stats(SpliceRun *r)
{
    g_auto(GStrv) lines = g_strsplit(r->err, "\n", -1);
    const char *json = NULL;

    for (char **l = lines; *l; l++) {
        if ((*l)[0] == '{') {
            json = *l;
        }
    }
    g_assert_nonnull(json);
    r->parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(r->parser, json, -1, NULL));
    r->stats = json_node_get_object(json_parser_get_root(r->parser));
}

/* Runs the helper on @args with the debug log on, a pipe on the stream side: fed from
 * @feed (a save) or drained into @drain (a restore). */
static void
run_helper(const char *const *args, const char *feed, const char *drain, SpliceRun *r)
{
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "G_MESSAGES_DEBUG", "iohelper",
                                         TRUE);
    IohtPumpOpts o = { .path = feed ? feed : drain };
    IohtSpawn s = { .args = args, .env = (const char *const *)env, .in_fd = -1,
                    .out_fd = -1 };
    IohtPump *pump;
    int p[2];

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    if (feed) {
        s.in_fd = p[0];
        pump = ioht_feed_start(p[1], &o);
    } else {
        s.out_fd = p[1];
        pump = ioht_drain_start(p[0], &o);
    }
    r->code = ioht_exit_code(ioht_spawn_wait(&s, &r->err));
    close(feed ? p[0] : p[1]);
    ioht_pump_join(pump, NULL);
}

/* The arguments of one case: mode, ranges, --stats=json, then IN OUT. */
static GPtrArray *
case_args(const SpliceCase *t, const char *img, guint64 length)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);

    if (*t->mode) {
        g_ptr_array_add(a, g_strdup(t->mode));
    }
    if (t->extra) {
        g_ptr_array_add(a, g_strdup(t->extra));
    }
    if (t->ranged) {
        g_ptr_array_add(a, g_strdup("--offset=4096"));
        g_ptr_array_add(a, g_strdup_printf("--length=%" G_GUINT64_FORMAT, length));
    }
    g_ptr_array_add(a, g_strdup("--stats=json"));
    g_ptr_array_add(a, g_strdup(t->restore ? img : "-"));
    g_ptr_array_add(a, g_strdup(t->restore ? "-" : img));
    g_ptr_array_add(a, NULL);
    return a;
}

/* The path the copy took, as the debug log and the counts tell. */
static void
assert_path(const SpliceCase *t, const SpliceRun *r)
{
    gboolean splice = !t->extra && !g_str_equal(t->mode, "--direct");
    gint64 splices = json_object_get_int_member(r->stats, "splices");
    gint64 syscalls = json_object_get_int_member(r->stats, "syscalls");

    g_test_message("%s: %" G_GINT64_FORMAT " splices, %" G_GINT64_FORMAT " syscalls",
                   splice ? "splice" : "read/write", splices, syscalls);
    g_assert_cmpint(syscalls, >=, splices);
    if (g_str_equal(t->mode, "--direct") && t->restore && !t->ranged && !t->extra) {
        /* parallel O_DIRECT readers splicing through pipes of their own: a read and a
         * write for each slot at least */
        g_assert_nonnull(strstr(r->err, "pipes of their own"));
        g_assert_cmpint(splices, >=, t->size > 0 ? 2 : 0);
        return;
    }
    if (!splice) {
        g_assert_null(strstr(r->err, "strategy splice"));
        g_assert_cmpint(splices, ==, 0);
        return;
    }
    g_assert_nonnull(strstr(r->err, "strategy splice"));
    /* every read of a save is a splice; a --fadvise restore copies its last pipe-full */
    if (!t->restore) {
        g_assert_cmpint(splices, >=, t->size > 0 ? 1 : 0);
        g_assert_cmpint(json_object_get_int_member(r->stats, "reads"), ==, splices);
    } else if (!*t->mode && t->size > 0) {
        g_assert_cmpint(splices, >=, 1);
    }
}

/* Runs case @t on @img (fed from @feed or drained into @drain): exit 0, the stream's
 * length in --stats=json, the path the case must take. */
static void
run_checked(const SpliceCase *t, const char *img, const char *feed, const char *drain)
{
    g_autoptr(GPtrArray) args = case_args(t, img, t->size);
    SpliceRun r = { 0 };

    run_helper((const char *const *)args->pdata, feed, drain, &r);
    g_assert_cmpint(r.code, ==, 0);
    parse_stats(&r);
    g_assert_cmpint(json_object_get_int_member(r.stats, "bytes"), ==, (gint64)t->size);
    assert_path(t, &r);
    splice_run_clear(&r);
}

/* One case: a save of @t->size bytes (into an image whose first 4096 bytes stay, when
 * ranged), or a restore of as many (from byte 4096 of an image 3 bytes longer, when
 * ranged: --length stops it exactly there). The stream's bytes must be the image's. */
static void
test_case(gconstpointer data)
{
    const SpliceCase *t = data;
    g_autofree char *stream = g_build_filename(workdir, "stream", NULL);
    g_autofree char *img = g_build_filename(workdir, "img", NULL);
    g_autofree char *s_data = NULL, *i_data = NULL;
    gsize s_len = 0, i_len = 0;
    guint64 start = t->ranged ? 4096 : 0;

    if (t->restore) {
        ioht_write_random_file(img, start + t->size + (t->ranged ? 3 : 0), (guint32)t->size);
        run_checked(t, img, NULL, stream);
    } else {
        ioht_write_random_file(stream, t->size, (guint32)t->size + 1);
        ioht_write_random_file(img, start, 99);
        run_checked(t, img, stream, NULL);
    }
    g_assert_true(g_file_get_contents(stream, &s_data, &s_len, NULL));
    g_assert_true(g_file_get_contents(img, &i_data, &i_len, NULL));
    g_assert_cmpuint(s_len, ==, t->size);
    g_assert_cmpuint(i_len, ==, start + t->size + (t->restore && t->ranged ? 3 : 0));
    g_assert_cmpmem(i_data + start, t->size, s_data, s_len);
    g_unlink(stream);
    g_unlink(img);
}

/* A --direct restore's readers beyond the first take their pipes' share of the memory
 * budget: none left, one reader splices alone; room for one more, two. Byte-exact. */
static void
test_direct_budget(void)
{
    g_autofree char *img = g_build_filename(workdir, "db-img", NULL);
    g_autofree char *stream = g_build_filename(workdir, "db-stream", NULL);
    g_autofree char *rundir = g_build_filename(workdir, "db-run", NULL);
    static const char *const budgets[] = { "--memory-budget=0", "--memory-budget=1M" };

    ioht_write_random_file(img, 5 * MiB + 9, 11);
    g_assert_cmpint(g_mkdir_with_parents(rundir, 0700), ==, 0);
    g_setenv("IOHELPER_RUNDIR", rundir, TRUE);
    for (gsize i = 0; i < G_N_ELEMENTS(budgets); i++) {
        const char *args[] = { "--direct", budgets[i], img, "-", NULL };
        g_autofree char *want = g_strdup_printf("%zu O_DIRECT readers splicing", i + 1);
        SpliceRun r = { 0 };

        run_helper(args, NULL, stream, &r);
        g_assert_cmpint(r.code, ==, 0);
        g_test_message("%s", r.err);
        g_assert_nonnull(strstr(r.err, want));
        g_assert_true(ioht_files_equal(img, stream));
        splice_run_clear(&r);
    }
    g_unsetenv("IOHELPER_RUNDIR");
    g_unlink(img);
    g_unlink(stream);
    g_rmdir(rundir);
}

/* An O_APPEND file refuses splice (EINVAL): the save goes on with write(), and appends. */
static void
test_append_falls_back(void)
{
    g_autofree char *src = g_build_filename(workdir, "ap-src", NULL);
    g_autofree char *img = g_build_filename(workdir, "ap-img", NULL);
    g_autofree char *got = NULL, *want = NULL;
    const char *args[] = { "--stats=json", "-", "fd:1", NULL };
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "G_MESSAGES_DEBUG", "iohelper",
                                         TRUE);
    IohtPumpOpts o = { .path = src };
    IohtSpawn s = { .args = args, .env = (const char *const *)env, .err_fd = -1 };
    gsize got_len = 0, want_len = 0;
    char *err = NULL;
    IohtPump *pump;
    int p[2];

    ioht_write_random_file(src, 3 * MiB + 5, 7);
    ioht_write_random_file(img, 100, 8);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    s.in_fd = p[0];
    s.out_fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(s.out_fd, >=, 0);
    pump = ioht_feed_start(p[1], &o);
    g_assert_cmpint(ioht_exit_code(ioht_spawn_wait(&s, &err)), ==, 0);
    close(p[0]);
    close(s.out_fd);
    ioht_pump_join(pump, NULL);
    g_test_message("%s", err);
    g_assert_nonnull(strstr(err, "strategy splice"));
    g_assert_nonnull(strstr(err, "splice refused"));
    g_free(err);
    g_assert_true(g_file_get_contents(img, &got, &got_len, NULL));
    g_assert_true(g_file_get_contents(src, &want, &want_len, NULL));
    g_assert_cmpuint(got_len, ==, 100 + want_len);
    g_assert_cmpmem(got + 100, got_len - 100, want, want_len);
    g_unlink(src);
    g_unlink(img);
}

static void
add_case(const char *mode, guint64 size, gboolean restore, gboolean ranged, const char *extra)
{
    SpliceCase *t = g_new0(SpliceCase, 1);
    g_autofree char *path = NULL;

    *t = (SpliceCase){ mode, size, restore, ranged, extra };
    path = g_strdup_printf("/splice/%s/%s/%" G_GUINT64_FORMAT "%s%s", restore ? "restore"
                           : "save", *mode ? mode + 2 : "buffered", size,
                           ranged ? "/offset-length" : "", extra ? "/filter" : "");
    g_test_add_data_func_full(path, t, test_case, g_free);
}

int
main(int argc, char **argv)
{
    static const char *const modes[] = { "", "--fadvise" };
    static const guint64 sizes[] = { 0, 1, 4095, MiB + 7, 3 * MiB + 4097 };

    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
            for (int restore = 0; restore < 2; restore++) {
                add_case(modes[m], sizes[i], restore, FALSE, NULL);
                add_case(modes[m], sizes[i], restore, TRUE, NULL);
            }
        }
        /* a filter needs the bytes: read/write */
        add_case(modes[m], MiB + 7, FALSE, FALSE, "--checksum=xxh3");
        add_case(modes[m], MiB + 7, TRUE, FALSE, "--checksum=xxh3");
    }
    if (ioht_dir_supports_direct(workdir)) {
        add_case("--direct", MiB + 7, FALSE, TRUE, NULL);
        add_case("--direct", MiB + 7, TRUE, TRUE, NULL);
        for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
            add_case("--direct", sizes[i], TRUE, FALSE, NULL);
        }
        add_case("--direct", 9 * MiB + 4097, TRUE, FALSE, NULL);
        add_case("--direct", MiB + 7, TRUE, FALSE, "--checksum=xxh3");
        g_test_add_func("/splice/restore/direct/budget-limits-readers", test_direct_budget);
    }
    g_test_add_func("/splice/save/append-falls-back", test_append_falls_back);
    return ioht_run_tests(&workdir);
}
