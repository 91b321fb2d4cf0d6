/* fuzz-nbd-uri.c - libFuzzer target: the NBD URI sanitizer against libnbd's own parser
 *
 * libnbd 1.14 has no call that parses a URI without connecting (nbd_aio_connect_uri()
 * starts the connection, nbd_get_uri() answers only after one), so this oracle is the
 * parser libnbd calls: libxml2's xmlParseURI() for the parts, and libnbd's own query
 * rule (libnbd v1.14.2 lib/uri.c, parse_uri_queries(): a parameter ends at the next '&',
 * or when none is left at the next ';'; empty parameters and "=value" are skipped; name
 * and value decoded by xmlURIUnescapeString()), written here again on purpose, apart
 * from the code under test. For any text, ioh_nbd_safe_name() must be a URI that libnbd
 * reads as the same scheme, server, port, export and socket, and nothing else: no user
 * information (libnbd's TLS user name, "user:password" included), no fragment, no query
 * parameter but socket. Text that libxml2 refuses (libnbd then takes nothing) must still
 * lose its user information, fragment and every parameter but socket; an authority the
 * sanitizer cannot cut as libxml2 does may be named by its scheme alone. A safe name is
 * printable ASCII whatever the text holds (control and C1 characters). And the redacted
 * form of a message quoting the URI must not quote it whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <libxml/uri.h>

#include "ioh-nbd-uri.h"

static void
check(gboolean ok, const char *what, const char *in, const char *out)
{
    if (!ok) {
        fprintf(stderr, "fuzz-nbd-uri: invariant broken: %s\n  in:  %s\n  out: %s\n", what,
                in, out);
        abort();
    }
}

/* libnbd's query rule: the decoded names in @names, the last socket's value in *@sock. */
static void
oracle_query(const char *query, GPtrArray *names, char **sock)
{
    size_t pos = 0, n = query ? strlen(query) : 0;

    *sock = NULL;
    while (pos < n) {
        const char *start = query + pos;
        const char *amp = strchr(start, '&');
        size_t len = amp ? (size_t)(amp - start) : strcspn(start, ";");
        const char *eq = memchr(start, '=', len);
        size_t name_len = eq ? (size_t)(eq - start) : len;

        if (len > 0 && name_len > 0) {
            char *name = xmlURIUnescapeString(start, (int)name_len, NULL);

            if (strcmp(name, "socket") == 0) {
                g_free(*sock);
                *sock = eq && len > name_len + 1
                            ? xmlURIUnescapeString(eq + 1, (int)(len - name_len - 1), NULL)
                            : g_strdup("");
            }
            g_ptr_array_add(names, name);
        }
        pos += len + 1;
    }
}

static gboolean
same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Text libxml2 refuses: the name keeps no user information, fragment or parameter. */
static void
check_unparsed(const char *in, const char *out)
{
    const char *auth = strstr(out, "://") + 3;
    const char *q = strchr(out, '?');
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(free);
    g_autofree char *sock = NULL;

    check(memchr(auth, '@', strcspn(auth, "/?#")) == NULL, "no user information", in, out);
    check(strchr(out, '#') == NULL, "no fragment", in, out);
    oracle_query(q ? q + 1 : NULL, names, &sock);
    for (guint i = 0; i < names->len; i++) {
        check(strcmp(names->pdata[i], "socket") == 0, "socket only", in, out);
    }
}

static void
check_parsed(xmlURIPtr u, const char *in, const char *out)
{
    xmlURIPtr v = xmlParseURI(out);
    g_autoptr(GPtrArray) names_in = g_ptr_array_new_with_free_func(free);
    g_autoptr(GPtrArray) names_out = g_ptr_array_new_with_free_func(free);
    char *sock_in = NULL, *sock_out = NULL;

    check(v != NULL, "libxml2 parses the name", in, out);
    check(v->user == NULL, "no user information", in, out);
    check(v->fragment == NULL, "no fragment", in, out);
    check(same(u->scheme, v->scheme), "the same scheme", in, out);
    check(same(u->server, v->server), "the same server", in, out);
    check(u->port == v->port, "the same port", in, out);
    check(same(u->path, v->path), "the same export", in, out);
    oracle_query(u->query_raw, names_in, &sock_in);
    oracle_query(v->query_raw, names_out, &sock_out);
    for (guint i = 0; i < names_out->len; i++) {
        check(strcmp(names_out->pdata[i], "socket") == 0, "socket only", in, out);
    }
    check(same(sock_in, sock_out), "the same socket", in, out);
    free(sock_in);
    free(sock_out);
    xmlFreeURI(v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *in = g_strndup((const char *)data, size);
    g_autofree char *out = NULL;
    g_autofree char *msg = NULL;
    g_autofree char *redacted = NULL;
    xmlURIPtr u;

    if (strlen(in) != size || !ioh_nbd_is_uri(in)) {
        return 0;
    }
    out = ioh_nbd_safe_name(in);
    /* printed raw in records, JSON lines and debug output: no control, C1 or space (but
     * in the marker of an unparsable one) */
    for (const char *p = out; !g_str_has_suffix(out, IOH_NBD_UNPARSABLE) && *p; p++) {
        check((guchar)*p > 0x20 && (guchar)*p < 0x7f, "a safe name is printable ASCII", in,
              out);
    }
    u = xmlParseURI(in);
    if (g_str_has_suffix(out, "://" IOH_NBD_UNPARSABLE)) {
        /* named by its scheme only: nothing to leak */
        xmlFreeURI(u);
    } else if (u) {
        check_parsed(u, in, out);
        xmlFreeURI(u);
    } else {
        check_unparsed(in, out);
    }
    /* libnbd's "unable to parse URI: %s" */
    msg = g_strdup_printf("unable to parse URI: %s", in);
    redacted = ioh_nbd_redact(in, msg);
    check(strstr(out, in) || !strstr(redacted, in), "a message loses the URI", in,
          redacted);
    return 0;
}
