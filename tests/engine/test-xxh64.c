/* test-xxh64.c - ioh_xxh64_many (the raw zstd frames' checksums, many at a time, and their
 * copy) against libxxhash's XXH64 of each region and memcmp: counts around its group of
 * eight, lengths around its 32-byte stripe, unaligned regions and copies. The vector path
 * runs where the CPU has AVX-512DQ. */
#include <glib.h>
#include <string.h>
#include <xxhash.h>

#include "ioh-xxh64.h"

static void
test_many(void)
{
    static const gsize lens[] = { 0, 1, 31, 32, 33, 100, 4096, 131072, 131077 };
    static const guint counts[] = { 0, 1, 7, 8, 9, 16, 17 };
    gsize size = 17 * (131077 + 3);
    g_autofree guint8 *data = g_malloc(size);
    g_autofree guint8 *copy = g_malloc(size + 1);
    GRand *rand = g_rand_new_with_seed(12);

    for (gsize i = 0; i < size; i++) {
        data[i] = (guint8)g_rand_int(rand);
    }
    g_rand_free(rand);
    g_test_message("AVX-512DQ: %s", __builtin_cpu_supports("avx512dq") ? "yes" : "no");
    for (guint l = 0; l < G_N_ELEMENTS(lens); l++) {
        for (guint c = 0; c < G_N_ELEMENTS(counts); c++) {
            const guint8 *p[17];
            guint8 *dst[17];
            guint64 got[17], copied[17];

            memset(copy, 0, size + 1);
            for (guint i = 0; i < counts[c]; i++) {
                p[i] = data + i * (lens[l] + 3) + i % 3;    /* unaligned, apart */
                dst[i] = copy + (p[i] - data) + 1;          /* ... differently */
            }
            ioh_xxh64_many(p, NULL, counts[c], lens[l], got);
            ioh_xxh64_many(p, dst, counts[c], lens[l], copied);
            for (guint i = 0; i < counts[c]; i++) {
                g_assert_cmphex(got[i], ==, XXH64(p[i], lens[l], 0));
                g_assert_cmphex(copied[i], ==, got[i]);
                g_assert_cmpmem(dst[i], lens[l], p[i], lens[l]);
                g_assert_cmpint(dst[i][-1], ==, 0);         /* nothing written around */
                g_assert_cmpint(dst[i][lens[l]], ==, 0);
            }
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/engine/xxh64/many", test_many);
    return g_test_run();
}
