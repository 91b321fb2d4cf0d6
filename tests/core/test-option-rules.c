/* test-option-rules.c - the rules between the helper's options that iohelper, libwrap
 * and qemu-iohelper share (helper/core/ioh-option-rules.c): each rule, the direction
 * rules waiting for a known direction, and the order in which they are checked. */
#include <glib.h>

#include "ioh-option-rules.h"

static IohOptionRule
check(IohOptionSet set)
{
    return ioh_option_rules_check(&set);
}

static void
test_each(void)
{
    g_assert_cmpint(check((IohOptionSet){ 0 }), ==, IOH_OPTION_RULE_OK);
    g_assert_cmpint(check((IohOptionSet){ .direct = TRUE, .fadvise = TRUE }), ==,
                    IOH_OPTION_RULE_DIRECT_AND_FADVISE);
    g_assert_cmpint(check((IohOptionSet){ .compress = TRUE, .decompress = TRUE }), ==,
                    IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS);
    g_assert_cmpint(check((IohOptionSet){ .nbd_options = TRUE }), ==,
                    IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD);
    g_assert_cmpint(check((IohOptionSet){ .nbd_options = TRUE, .nbd = TRUE }), ==,
                    IOH_OPTION_RULE_OK);
    g_assert_cmpint(check((IohOptionSet){ .threads = 2 }), ==,
                    IOH_OPTION_RULE_THREADS_NEED_COMPRESS);
    g_assert_cmpint(check((IohOptionSet){ .threads = 2, .compress = TRUE }), ==,
                    IOH_OPTION_RULE_OK);
}

static void
test_direction(void)
{
    for (int d = IOH_DIRECTION_COPY; d <= IOH_DIRECTION_RESTORE; d++) {
        IohOptionSet c = { .compress = TRUE, .direction_known = TRUE, .direction = d };
        IohOptionSet u = { .decompress = TRUE, .direction_known = TRUE, .direction = d };

        g_assert_cmpint(check(c), ==, d == IOH_DIRECTION_SAVE
                                          ? IOH_OPTION_RULE_OK
                                          : IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE);
        g_assert_cmpint(check(u), ==, d == IOH_DIRECTION_RESTORE
                                          ? IOH_OPTION_RULE_OK
                                          : IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE);
        /* not known yet: the direction rules wait */
        c.direction_known = u.direction_known = FALSE;
        g_assert_cmpint(check(c), ==, IOH_OPTION_RULE_OK);
        g_assert_cmpint(check(u), ==, IOH_OPTION_RULE_OK);
    }
}

/* age (issue 28): recipients for a save, an identity for a restore, never both; the
 * threads are age's too. */
static void
test_encryption(void)
{
    g_assert_cmpint(check((IohOptionSet){ .encrypt = TRUE, .decrypt = TRUE }), ==,
                    IOH_OPTION_RULE_ENCRYPT_AND_DECRYPT);
    g_assert_cmpint(check((IohOptionSet){ .threads = 2, .encrypt = TRUE }), ==,
                    IOH_OPTION_RULE_OK);
    g_assert_cmpint(check((IohOptionSet){ .threads = 2, .decrypt = TRUE }), ==,
                    IOH_OPTION_RULE_OK);
    for (int d = IOH_DIRECTION_COPY; d <= IOH_DIRECTION_RESTORE; d++) {
        IohOptionSet e = { .encrypt = TRUE, .direction_known = TRUE, .direction = d };
        IohOptionSet u = { .decrypt = TRUE, .direction_known = TRUE, .direction = d };

        g_assert_cmpint(check(e), ==, d == IOH_DIRECTION_SAVE
                                          ? IOH_OPTION_RULE_OK
                                          : IOH_OPTION_RULE_ENCRYPT_NEEDS_SAVE);
        g_assert_cmpint(check(u), ==, d == IOH_DIRECTION_RESTORE
                                          ? IOH_OPTION_RULE_OK
                                          : IOH_OPTION_RULE_DECRYPT_NEEDS_RESTORE);
    }
}

/* The first broken rule in the enum's order is the one reported. */
static void
test_order(void)
{
    IohOptionSet all = { .direct = TRUE, .fadvise = TRUE, .compress = TRUE,
                         .decompress = TRUE, .nbd_options = TRUE, .threads = 1,
                         .direction_known = TRUE, .direction = IOH_DIRECTION_COPY };

    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_DIRECT_AND_FADVISE);
    all.fadvise = FALSE;
    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS);
    all.decompress = FALSE;
    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD);
    all.nbd = TRUE;
    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE);
    all.compress = FALSE;
    all.decompress = TRUE;
    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE);
    all.direction = IOH_DIRECTION_RESTORE;
    g_assert_cmpint(check(all), ==, IOH_OPTION_RULE_THREADS_NEED_COMPRESS);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/option-rules/each", test_each);
    g_test_add_func("/option-rules/direction", test_direction);
    g_test_add_func("/option-rules/order", test_order);
    g_test_add_func("/option-rules/encryption", test_encryption);
    return g_test_run();
}
