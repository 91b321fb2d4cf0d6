/* test-layers.c - the engine's layers through its public API: the filter table (the
 * example filter "count" of docs/engine.md and "xxh3"), a chain of two, an unknown name,
 * and the layers chosen, as the g_debug lines tell them. File to file: no threads here. */
#include <errno.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "ioh-copy.h"
#include "ioh-error.h"
#include "ioh-filter.h"
#include "engine-util.h"

static char *workdir;

/* Copies a new file of @size bytes through @filters; returns the result. */
static gboolean
copy_through(const char *const *filters, guint64 size, IohStats *stats, GError **error)
{
    g_autofree char *in = g_build_filename(workdir, "in", NULL);
    g_autofree char *out = g_build_filename(workdir, "out", NULL);
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    gboolean ok;

    ioht_write_random_file(in, size, 3);
    src = ioh_end_open(in, FALSE, 0, NULL);
    dst = ioh_end_open(out, TRUE, 0, NULL);
    g_assert_nonnull(src);
    g_assert_nonnull(dst);
    ioh_copy_options_init(&opts);
    opts.filters = filters;
    engt_log_clear();
    ok = ioh_copy(src, dst, &opts, stats, error);
    if (ok) {
        g_assert_true(ioht_files_equal(in, out));
    }
    g_unlink(in);
    g_unlink(out);
    return ok;
}

static void
test_count(void)
{
    static const char *const filters[] = { "count", NULL };
    g_autoptr(GError) error = NULL;
    IohStats stats;

    g_assert_true(copy_through(filters, 5 * 1024 * 1024 + 3, &stats, &error));
    g_assert_no_error(error);
    g_assert_true(engt_logged("count: 5242883 bytes from "));
    g_assert_null(stats.checksum_algorithm);
    g_assert_true(copy_through(filters, 0, &stats, &error));
    g_assert_true(engt_logged("count: 0 bytes from "));
}

/* Two filters in a row both see the stream; "xxh3" of the empty stream is XXH3's seed-0
 * value of nothing. */
static void
test_chain(void)
{
    static const char *const filters[] = { "count", "xxh3", NULL };
    g_autoptr(GError) error = NULL;
    IohStats stats;

    g_assert_true(copy_through(filters, 0, &stats, &error));
    g_assert_true(engt_logged("count: 0 bytes"));
    g_assert_cmpstr(stats.checksum_algorithm, ==, "xxh3");
    g_assert_cmphex(stats.checksum, ==, 0x2d06800538d394c2ULL);
    g_assert_true(copy_through(filters, 4097, &stats, &error));
    g_assert_true(engt_logged("count: 4097 bytes"));
    g_assert_cmphex(stats.checksum, !=, 0x2d06800538d394c2ULL);
}

/* The table: registered names, the checksum ones, and an unknown name refused before
 * anything is written. */
static void
test_table(void)
{
    static const char *const unknown[] = { "count", "lz4", NULL };
    g_autoptr(GError) error = NULL;
    IohStats stats;

    g_assert_nonnull(ioh_filter_lookup("count"));
    g_assert_false(ioh_filter_lookup("count")->checksum);
    g_assert_true(ioh_filter_lookup("xxh3")->checksum);
    g_assert_null(ioh_filter_lookup("lz4"));
    g_assert_nonnull(ioh_filter_lookup("zstd"));
    g_assert_cmpstr(ioh_filter_checksum_names(), ==, "xxh3");
    g_assert_false(copy_through(unknown, 10, &stats, &error));
    g_assert_error(error, IOH_ERROR, EINVAL);
    g_assert_cmpstr(error->message, ==, "filter 'lz4': no such filter");
}

/* The decisions are logged: the layers and strategy chosen, and the alignment. */
static void
test_decisions_logged(void)
{
    g_autoptr(GError) error = NULL;
    IohStats stats;

    g_assert_true(copy_through(NULL, 100, &stats, &error));
    g_assert_true(engt_logged("copy in buffered mode: file source "));
    g_assert_true(engt_logged(", file sink "));
    g_assert_true(engt_logged("strategy inline, alignment 4096, buffers of 1048576 bytes"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    engt_log_start();
    workdir = ioht_workdir();
    g_test_add_func("/layers/filter/count", test_count);
    g_test_add_func("/layers/filter/chain", test_chain);
    g_test_add_func("/layers/filter/table", test_table);
    g_test_add_func("/layers/decisions-logged", test_decisions_logged);
    return ioht_run_tests(&workdir);
}
