/* test-uring-filters.c - with IOHELPER_IO_URING=filters, a filtered --direct save from a
 * pipe takes the io_uring strategy's filter stage
 * (helper/engine/strategies/ioh-uring-stage.c), not the ring's threads (without, the
 * ring, which measured faster, and --stats says so):
 * age encryption (read back by Debian's `age -d`), --compress=auto (read back by
 * `zstd -dc`) and --checksum=xxh3 (the image is the stream), at sizes around the O_DIRECT
 * alignment, the stage's 4 MiB writes and its 16 MiB ring, each saying in --stats=json
 * (member io_uring) that it took the stage. Where the kernel refuses io_uring (an
 * unfiltered --direct save says so) or the directory has no O_DIRECT, skipped. */
#include <string.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ioh-test.h"

#define MiB (1024 * 1024)

static char *workdir;
static char *recipient;      /* key.txt's, or NULL without age-keygen */

#define sh(ret_err, ...) ioht_sh(workdir, ret_err, __VA_ARGS__)

/* The io_uring member of the last --stats=json line of @err ("" when absent). */
static char *
uring_said(const char *err)
{
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = ioht_sh_last_json(err, p);

    return g_strdup(json_object_has_member(o, "io_uring")
                    ? json_object_get_string_member(o, "io_uring") : "");
}

/* TRUE when an unfiltered --direct save from a pipe takes io_uring here; else skips. */
static gboolean
uring_here(void)
{
    g_autofree char *err = NULL;
    g_autofree char *said = NULL;

    if (!ioht_dir_supports_direct(workdir)) {
        g_test_skip("no O_DIRECT here");
        return FALSE;
    }
    g_assert_cmpint(sh(&err, "head -c 1048576 /dev/zero | $H --direct --stats=json - plain"),
                    ==, 0);
    said = uring_said(err);
    if (!g_str_has_prefix(said, "used")) {
        g_test_skip_printf("no io_uring save here: '%s'", said);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    const char *name;
    const char *opts;        /* the filter's options (%s: the recipient) */
    const char *back;        /* the shell command that turns img back into the stream */
    gboolean age;
} Filter;

static const Filter filters[] = {
    { "age", "--recipient=%s", "age -d -i key.txt img", TRUE },
    { "compress-auto", "--compress=auto", "zstd -q -dc img", FALSE },
    { "age-compress-auto", "--compress=auto --recipient=%s",
      "age -d -i key.txt img | zstd -q -dc", TRUE },
    { "checksum", "--checksum=xxh3", "cat img", FALSE },
};

static void
test_filter(gconstpointer data)
{
    const Filter *f = data;
    static const gsize sizes[] = { 0, 1, 4095, 4097, 4 * MiB + 1, 37 * MiB + 513 };
    g_autofree char *opts = NULL;

    if (f->age && !recipient) {
        g_test_skip("age and age-keygen are not installed (Debian package age)");
        return;
    }
    if (!uring_here()) {
        return;
    }
    opts = g_strdup_printf(f->opts, recipient);
    for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *err = NULL;
        g_autofree char *said = NULL;
        g_autofree char *s = g_build_filename(workdir, "s", NULL);

        ioht_write_random_file(s, sizes[i], (guint32)i);
        g_assert_cmpint(sh(&err, "rm -f img; cat s | $H --direct %s --stats=json - img", opts),
                        ==, 0);
        said = uring_said(err);
        g_test_message("%zu bytes: io_uring %s", sizes[i], said);
        g_assert_true(g_str_has_prefix(said, "used"));
        g_assert_nonnull(strstr(said, "filters on its thread"));
        g_assert_cmpint(sh(NULL, "%s | cmp - s", f->back), ==, 0);
    }
}

/* Without IOHELPER_IO_URING=filters a filtered save takes the ring, saying why. */
static void
test_default_ring(void)
{
    g_autofree char *err = NULL;
    g_autofree char *said = NULL;

    if (!uring_here()) {
        return;
    }
    g_assert_cmpint(sh(&err, "head -c 5000000 /dev/urandom > s; "
                       "cat s | IOHELPER_IO_URING= $H --direct --checksum=xxh3 --stats=json "
                       "- img && cmp img s"), ==, 0);
    said = uring_said(err);
    g_assert_cmpstr(said, ==, "not used (filters: threads, measured faster)");
}

int
main(int argc, char **argv)
{
    g_autofree char *age = g_find_program_in_path("age");
    g_autofree char *keygen = g_find_program_in_path("age-keygen");
    int rc;

    g_test_init(&argc, &argv, NULL);
    g_setenv("IOHELPER_IO_URING", "filters", TRUE);    /* the helpers inherit it */
    workdir = ioht_workdir();
    if (age && keygen) {
        g_autofree char *out = NULL;

        g_assert_cmpint(sh(&out, "umask 077; age-keygen -o key.txt >/dev/null 2>&1"), ==, 0);
        g_assert_cmpint(sh(&recipient, "age-keygen -y key.txt >&2"), ==, 0);
        g_strchomp(recipient);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(filters); i++) {
        g_autofree char *path = g_strdup_printf("/uring-filters/%s", filters[i].name);

        g_test_add_data_func(path, &filters[i], test_filter);
    }
    g_test_add_func("/uring-filters/default-ring", test_default_ring);
    rc = g_test_run();
    ioht_workdir_remove(workdir);
    g_free(recipient);
    return rc;
}
