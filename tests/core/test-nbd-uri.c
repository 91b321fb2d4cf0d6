/* test-nbd-uri.c - NBD URIs named without their secrets (helper/core/ioh-nbd-uri): the
 * cases of issue 26 (a query split on ';' by libnbd, a password in the user information),
 * and messages from libnbd that quote a URI's secrets. tests/fuzz/fuzz-nbd-uri.c checks
 * the same sanitizer against libxml2's parser on any text. */
#include <string.h>

#include <glib.h>

#include "ioh-nbd-uri.h"

static const struct {
    const char *in;
    const char *out;
} table[] = {
    { "nbd://host/export", "nbd://host/export" },
    { "nbd://host:10810/", "nbd://host:10810/" },
    { "nbd://alice:PASSWORD@host/export", "nbd://host/export" },
    { "nbds+unix://alice@/?socket=/run/s;tls-psk-file=/etc/psk.keys",
      "nbds+unix:///?socket=/run/s" },
    { "nbd+unix:///e?socket=/s&tls-certificates=/etc/pki", "nbd+unix:///e?socket=/s" },
    { "nbd+unix:///e?tls-psk-file=/k&socket=/s#frag", "nbd+unix:///e?socket=/s" },
    /* libnbd: '&' first, ';' only once no '&' is left; the last socket= counts */
    { "nbd+unix:///?socket=a;b&tls-psk-file=k;socket=c", "nbd+unix:///?socket=c" },
    { "nbd+unix:///?socket=a;b&x=y", "nbd+unix:///?socket=a%3Bb" },
    /* names and values percent-decoded as libnbd does */
    { "nbd+unix:///?so%63ket=/s;%74ls-psk-file=/k", "nbd+unix:///?socket=/s" },
    { "nbds://[::1]:10810/e%2Fx?tls-psk-file=%2Fk", "nbds://[::1]:10810/e%2Fx" },
    { "nbd+vsock://2:10809/e", "nbd+vsock://2:10809/e" },
    /* an authority libxml2 refuses or reads otherwise: the scheme only */
    { "nbd://a@b@host/x", "nbd://" IOH_NBD_UNPARSABLE },
    { "nbd://[::1@x/?socket=s]", "nbd://" IOH_NBD_UNPARSABLE },
    /* raw bytes libxml2 refuses: encoded, a control or C1 character never printed raw */
    { "nbd+unix:///a\033[31mX b?socket=/s", "nbd+unix:///a%1B[31mX%20b?socket=/s" },
    { "nbd+unix:///a\302\233X?socket=/s\302\233", "nbd+unix:///a%C2%9BX?socket=/s%C2%9B" },
    { "nbd://h/\177\n", "nbd://h/%7F%0A" },
    { "/not/a/uri", "/not/a/uri" },
};

/* nbd+unix:// needs socket=, found as libnbd splits and decodes the query */
static void
test_has_socket(void)
{
    g_assert_true(ioh_nbd_has_socket("nbd+unix:///?socket=/s"));
    g_assert_true(ioh_nbd_has_socket("nbd+unix:///?tls-psk-file=/k;socket=/s"));
    g_assert_true(ioh_nbd_has_socket("nbd+unix:///e?x=1&%73ocket=/s"));
    g_assert_false(ioh_nbd_has_socket("nbd+unix:///?xsocket=/s"));
    g_assert_false(ioh_nbd_has_socket("nbd+unix:///?a=1;socket=/s&b=2"));
    g_assert_false(ioh_nbd_has_socket("nbd+unix:///#?socket=/s"));
    g_assert_false(ioh_nbd_has_socket("/not/a/uri?socket=/s"));
}

static void
test_safe_name(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree char *out = ioh_nbd_safe_name(table[i].in);

        g_assert_cmpstr(out, ==, table[i].out);
    }
}

/* libnbd's own messages about a URI: "unable to parse URI: URI", "open: PSKFILE: ...",
 * "PSKFILE: username USER was not found in PSK file". */
static void
test_redact(void)
{
    const char *uri = "nbds+unix://alice:PASSWORD@/?socket=/run/s;tls-psk-file=/etc/psk.keys";
    g_autofree char *a = ioh_nbd_redact(uri, "unable to parse URI: nbds+unix://alice:"
                                             "PASSWORD@/?socket=/run/s;tls-psk-file=/etc/psk.keys");
    g_autofree char *b = ioh_nbd_redact(uri, "/etc/psk.keys: username alice:PASSWORD was "
                                             "not found in PSK file");
    g_autofree char *c = ioh_nbd_redact("nbd://a@b@h/?x=%2Fsecret", "open: /secret: ENOENT");

    g_assert_cmpstr(a, ==, "unable to parse URI: nbds+unix:///?socket=/run/s");
    g_assert_cmpstr(b, ==, "<hidden>: username <hidden> was not found in PSK file");
    g_assert_cmpstr(c, ==, "open: <hidden>: ENOENT");
}

static void
test_legacy(void)
{
    g_assert_true(ioh_nbd_is_legacy("nbd:127.0.0.1"));
    g_assert_true(ioh_nbd_is_legacy("nbd:unix:/run/s:exportname=x"));
    g_assert_false(ioh_nbd_is_legacy("nbd://h/x"));
    g_assert_false(ioh_nbd_is_legacy("./nbd:x"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nbd-uri/safe-name", test_safe_name);
    g_test_add_func("/nbd-uri/redact", test_redact);
    g_test_add_func("/nbd-uri/has-socket", test_has_socket);
    g_test_add_func("/nbd-uri/legacy", test_legacy);
    return g_test_run();
}
