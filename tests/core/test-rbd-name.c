/* test-rbd-name.c - RBD image names (helper/core/ioh-rbd-name): QEMU's form parsed
 * strictly, named without options, and refusals that never quote a value.
 * tests/fuzz/fuzz-rbd-name.c checks the same parser on any text. */
#include <string.h>

#include <glib.h>

#include "ioh-rbd-name.h"

static void
test_parse(void)
{
    g_auto(IohRbdName) n = { 0 };
    g_autoptr(GError) err = NULL;

    g_assert_true(ioh_rbd_name_parse("rbd:rbd/vm1", &n, &err));
    g_assert_cmpstr(n.pool, ==, "rbd");
    g_assert_cmpstr(n.image, ==, "vm1");
    g_assert_null(n.ns);
    g_assert_null(n.snap);
    g_assert_null(n.conf);
    ioh_rbd_name_clear(&n);
    g_assert_true(ioh_rbd_name_parse("rbd:p-1/ns.a/img_2@s+1:conf=/etc/c e.conf:id=bk"
                                     ":keyring=/k/ring", &n, &err));
    g_assert_cmpstr(n.pool, ==, "p-1");
    g_assert_cmpstr(n.ns, ==, "ns.a");
    g_assert_cmpstr(n.image, ==, "img_2");
    g_assert_cmpstr(n.snap, ==, "s+1");
    g_assert_cmpstr(n.conf, ==, "/etc/c e.conf");
    g_assert_cmpstr(n.id, ==, "bk");
    g_assert_cmpstr(n.keyring, ==, "/k/ring");
}

static const struct {
    const char *in;
    const char *cause;       /* part of the message */
} bad[] = {
    { "rbd:", "empty pool name" },
    { "rbd:/img", "empty pool name" },
    { "rbd:pool", "'/' expected" },
    { "rbd:pool@s", "'/' expected" },
    { "rbd:pool/", "empty image name" },
    { "rbd:pool/img@", "empty snapshot name" },
    { "rbd:pool/a/b/c", "too many '/'" },
    { "rbd:pool/img@s/x", "'/' after the snapshot" },
    { "rbd:pool/im\\:g", "QEMU's escapes" },
    { "rbd:pool/im g", "not allowed" },
    { "rbd:pool/img:", "option without '='" },
    { "rbd:pool/img:conf", "option without '='" },
    { "rbd:pool/img:conf=", "empty value" },
    { "rbd:pool/img:conf=/a:conf=/b", "given twice" },
    { "rbd:pool/img:mon_host=1.2.3.4", "unknown option 'mon_host'" },
    { "rbd:pool/img:id=client.admin", "without \"client.\"" },
    { "rbd:pool/img:id=a b", "user name" },
    { "rbd:pool/img:conf=/a\nb", "control character" },
};

/* every refusal says why, and never quotes a value */
static void
test_refused(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_auto(IohRbdName) n = { 0 };
        g_autoptr(GError) err = NULL;
        g_autofree char *safe = ioh_rbd_safe_name(bad[i].in);

        g_test_message("%s", bad[i].in);
        g_assert_false(ioh_rbd_name_parse(bad[i].in, &n, &err));
        g_assert_nonnull(strstr(err->message, bad[i].cause));
        g_assert_null(n.pool);
        g_assert_cmpstr(safe, ==, "rbd:" IOH_RBD_UNPARSABLE);
    }
}

/* QEMU's key= and password-secret= carry the secret itself: refused, never quoted */
static void
test_secret_refused(void)
{
    const char *specs[] = { "rbd:p/i:key=AQBSECRETSECRET==", "rbd:p/i:password-secret=s1" };

    for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
        g_auto(IohRbdName) n = { 0 };
        g_autoptr(GError) err = NULL;

        g_assert_false(ioh_rbd_name_parse(specs[i], &n, &err));
        g_assert_nonnull(strstr(err->message, "keyring=PATH"));
        g_assert_null(strstr(err->message, "SECRET"));
        g_assert_null(strstr(err->message, "s1"));
    }
}

static void
test_safe_name(void)
{
    g_autofree char *a = ioh_rbd_safe_name("rbd:rbd/vm1:conf=/c:id=u:keyring=/k");
    g_autofree char *b = ioh_rbd_safe_name("rbd:p/ns/i@s:keyring=/k");
    g_autofree char *c = ioh_rbd_safe_name("/a/file");

    g_assert_cmpstr(a, ==, "rbd:rbd/vm1");
    g_assert_cmpstr(b, ==, "rbd:p/ns/i@s");
    g_assert_cmpstr(c, ==, "/a/file");
    g_assert_true(ioh_rbd_is_name("rbd:x"));
    g_assert_false(ioh_rbd_is_name("./rbd:x"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rbd-name/parse", test_parse);
    g_test_add_func("/rbd-name/refused", test_refused);
    g_test_add_func("/rbd-name/secret-refused", test_secret_refused);
    g_test_add_func("/rbd-name/safe-name", test_safe_name);
    return g_test_run();
}
