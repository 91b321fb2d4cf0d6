/* test-pipeline.c - the helper in shell pipelines, real pipes on both sides:
 * - --checksum=xxh3 and --verify-checksum: the helper's value is what `xxhsum -H3` prints
 *   for the same bytes, on save, restore and copy, in every cache mode, with
 *   --offset/--length and for an empty stream; a wrong expected value fails the copy with
 *   one line;
 * - G_MESSAGES_DEBUG=all: the debug lines go to stderr, the stream on stdout stays exact. */
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ioh-test.h"

#define MiB (1024 * 1024)

static char *workdir;
static gboolean have_direct;

static char *
wpath(const char *name)
{
    return g_build_filename(workdir, name, NULL);
}

/* Runs the bash command @cmd (with pipefail, so the helper's status counts, and $H the
 * helper) and returns its exit code; *ret_err gets its stderr. */
static int
run_shell(const char *cmd, char **ret_err)
{
    g_autofree char *helper = g_shell_quote(ioht_helper_path());
    g_autofree char *script = g_strdup_printf("set -o pipefail; H=%s; %s", helper, cmd);
    const char *argv[] = { "/bin/bash", "-c", script, NULL };
    IohtSpawn sp = { .argv = argv, .in_fd = -1, .out_fd = -1 };

    return ioht_exit_code(ioht_spawn_wait(&sp, ret_err));
}

/* What `xxhsum -H3 FILE` prints as the value: "XXH3 (FILE) = 16 hex digits". */
static char *
xxhsum(const char *file)
{
    const char *argv[] = { "/usr/bin/xxhsum", "-H3", file, NULL };
    g_autofree char *out = NULL;
    char *eq;

    g_assert_cmpint(ioht_run_output((char **)argv, &out), ==, 0);
    eq = strstr(out, " = ");
    g_assert_nonnull(eq);
    g_assert_cmpuint(strlen(g_strstrip(eq + 3)), ==, 16);
    return g_strdup(eq + 3);
}

/* The checksum the helper reported in its --stats=json line on @err. */
static char *
stats_checksum(const char *err)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o;

    g_assert_true(json_parser_load_from_data(parser, err, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpstr(json_object_get_string_member(o, "checksum_algorithm"), ==, "xxh3");
    return g_strdup(json_object_get_string_member(o, "checksum"));
}

/* Runs @cmd, which runs the helper with --checksum=xxh3 --stats=json: it must succeed
 * and report @want. */
static void
assert_reports(const char *cmd, const char *want)
{
    g_autofree char *err = NULL;
    g_autofree char *got = NULL;

    g_assert_cmpint(run_shell(cmd, &err), ==, 0);
    got = stats_checksum(err);
    g_assert_cmpstr(got, ==, want);
}

typedef struct {
    const char *mode;        /* "", "--direct" or "--fadvise" */
    guint64 size;
} Case;

/* Save then restore through pipes: both report xxhsum's value, and a restore that
 * verifies against it passes. */
static void
test_save_restore(gconstpointer data)
{
    const Case *k = data;
    g_autofree char *src = wpath("ck-src"), *img = wpath("ck-img"), *back = wpath("ck-back");
    g_autofree char *want = NULL, *save = NULL, *restore = NULL, *verify = NULL;
    g_autofree char *e3 = NULL;

    if (g_str_equal(k->mode, "--direct") && !have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return;
    }
    ioht_write_random_file(src, k->size, (guint32)k->size + 1);
    want = xxhsum(src);
    save = g_strdup_printf("cat %s | $H %s --checksum=xxh3 --stats=json - %s", src, k->mode,
                           img);
    restore = g_strdup_printf("$H %s --checksum=xxh3 --stats=json %s - | cat > %s", k->mode,
                              img, back);
    verify = g_strdup_printf("$H %s --verify-checksum=%s %s - | cat > %s", k->mode, want,
                             img, back);
    assert_reports(save, want);
    assert_reports(restore, want);
    g_assert_true(ioht_files_equal(src, back));
    g_assert_cmpint(run_shell(verify, &e3), ==, 0);
    g_assert_cmpstr(e3, ==, "");
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
}

/* Only the stream is summed: not the header before --offset, not what lies past
 * --length; a file-to-file copy is summed too. */
static void
test_offset_length(void)
{
    g_autofree char *src = wpath("ol-src"), *img = wpath("ol-img"), *copy = wpath("ol-copy");
    g_autofree char *want = NULL, *save = NULL, *restore = NULL, *cp = NULL, *trail = NULL;
    const guint64 size = 3 * MiB + 4099;

    ioht_write_random_file(src, size, 5);
    want = xxhsum(src);
    g_assert_true(g_file_set_contents(img, "HEADER", -1, NULL));
    save = g_strdup_printf("cat %s | $H --offset=4096 --checksum=xxh3 --stats=json - %s",
                           src, img);
    assert_reports(save, want);
    trail = g_strdup_printf("echo TRAILING >> %s", img);
    g_assert_cmpint(run_shell(trail, NULL), ==, 0);
    restore = g_strdup_printf("$H --offset=4096 --length=%" G_GUINT64_FORMAT " --checksum=xxh3"
                              " --stats=json %s - | cat > /dev/null", size, img);
    assert_reports(restore, want);
    cp = g_strdup_printf("$H --checksum=xxh3 --stats=json %s %s", src, copy);
    assert_reports(cp, want);
    g_unlink(src);
    g_unlink(img);
    g_unlink(copy);
}

/* A wrong expected value: exit 1 and one line naming the image, expected and got. The
 * reader has the bytes by then (the man page says so). */
static void
test_mismatch(void)
{
    g_autofree char *src = wpath("mm-src"), *img = wpath("mm-img"), *back = wpath("mm-back");
    g_autofree char *want = NULL, *cmd = NULL, *err = NULL, *line = NULL;

    ioht_write_random_file(src, MiB + 3, 9);
    want = xxhsum(src);
    cmd = g_strdup_printf("cat %s > %s; $H --verify-checksum=0123456789ABCDEF %s - | cat > %s",
                          src, img, img, back);
    g_assert_cmpint(run_shell(cmd, &err), ==, 1);
    line = g_strdup_printf("iohelper: verify %s: xxh3 checksum mismatch: expected "
                           "0123456789abcdef, got %s (the stream was already delivered)\n",
                           img, want);
    g_assert_cmpstr(err, ==, line);
    g_assert_true(ioht_files_equal(src, back));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
}

/* An unknown algorithm or a malformed value is a usage error: exit 2, nothing copied. */
static void
test_usage(void)
{
    static const char *const bad[] = {
        "--checksum=md5", "--checksum=count", "--checksum=", "--verify-checksum=xyz",
        "--verify-checksum=0123456789abcde", "--verify-checksum=0123456789abcdef0",
        "--verify-checksum=0x23456789abcdef", "--verify-checksum=+123456789abcdef",
    };

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *cmd = g_strdup_printf("$H %s /dev/null /dev/null", bad[i]);
        g_autofree char *err = NULL;

        g_assert_cmpint(run_shell(cmd, &err), ==, 2);
        g_assert_true(g_str_has_prefix(err, "iohelper: --"));
    }
}

/* With every debug message on, a restore to stdout (both forms) still delivers exactly
 * the stream, and the decisions are on stderr. */
static void
test_debug_keeps_stdout(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = wpath("dbg-src"), *img = wpath("dbg-img");
    g_autofree char *back = wpath("dbg-back"), *back2 = wpath("dbg-back2");
    g_autofree char *save = NULL, *restore = NULL, *libvirt = NULL;
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;

    if (g_str_equal(mode, "--direct") && !have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return;
    }
    ioht_write_random_file(src, 2 * MiB + 11, 21);
    save = g_strdup_printf("cat %s | G_MESSAGES_DEBUG=all $H %s - %s", src, mode, img);
    restore = g_strdup_printf("G_MESSAGES_DEBUG=all $H %s %s - | cat > %s", mode, img, back);
    libvirt = g_strdup_printf("G_MESSAGES_DEBUG=all $H %s 3 3<%s | cat > %s", img, img, back2);
    g_assert_cmpint(run_shell(save, &e1), ==, 0);
    g_assert_true(ioht_files_equal(src, img));
    g_assert_cmpint(run_shell(restore, &e2), ==, 0);
    g_assert_true(ioht_files_equal(src, back));
    g_assert_cmpint(run_shell(libvirt, &e3), ==, 0);
    g_assert_true(ioht_files_equal(src, back2));
    g_assert_nonnull(strstr(e1, "iohelper-DEBUG"));
    g_assert_nonnull(strstr(e1, "save in "));
    g_assert_nonnull(strstr(e2, "restore in "));
    g_assert_nonnull(strstr(e2, "stdout: pipe size "));
    g_assert_nonnull(strstr(e3, "libvirt form: fd 3 is O_RDONLY"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
    g_unlink(back2);
}

/* Every cache mode (its option, or none) with sizes around the alignment. */
static void
add_cases(void)
{
    static const struct {
        const char *name, *option;
    } modes[] = { { "buffered", "" }, { "direct", "--direct" }, { "fadvise", "--fadvise" } };
    static const guint64 sizes[] = { 0, 1, 4097, 3 * MiB + 5 };
    static Case cases[G_N_ELEMENTS(modes) * G_N_ELEMENTS(sizes)];

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = NULL;

        cases[i].mode = modes[i / G_N_ELEMENTS(sizes)].option;
        cases[i].size = sizes[i % G_N_ELEMENTS(sizes)];
        path = g_strdup_printf("/checksum/%s/%" G_GUINT64_FORMAT,
                               modes[i / G_N_ELEMENTS(sizes)].name, cases[i].size);
        g_test_add_data_func(path, &cases[i], test_save_restore);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);
    add_cases();
    g_test_add_func("/checksum/offset-length-copy", test_offset_length);
    g_test_add_func("/checksum/mismatch", test_mismatch);
    g_test_add_func("/checksum/usage", test_usage);
    g_test_add_data_func("/debug/stdout-exact/buffered", "", test_debug_keeps_stdout);
    g_test_add_data_func("/debug/stdout-exact/direct", "--direct", test_debug_keeps_stdout);
    g_test_add_data_func("/debug/stdout-exact/fadvise", "--fadvise", test_debug_keeps_stdout);
    return ioht_run_tests(&workdir);
}
