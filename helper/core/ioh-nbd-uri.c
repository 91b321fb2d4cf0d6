/* ioh-nbd-uri.c - NBD URIs as text (ioh-nbd-uri.h)
 *
 * Why a parser of our own and not GUri: what is secret is what libnbd takes, and libnbd
 * 1.14 parses with libxml2's xmlParseURI and splits the query itself (lib/uri.c,
 * parse_uri_queries()): on the next '&', or when none is left on the next ';', names and
 * values percent-decoded as xmlURIUnescapeString() does. GUri splits differently, and
 * the difference leaked "?socket=S;tls-psk-file=KEYS". tests/fuzz/fuzz-nbd-uri.c checks
 * this file against libxml2's parser and libnbd's rule.
 */
#include "ioh-nbd-uri.h"

#include <string.h>

static const char *const schemes[] = {
    "nbd://", "nbd+unix://", "nbd+vsock://", "nbds://", "nbds+unix://", "nbds+vsock://",
};

#define HIDDEN "<hidden>"

gboolean
ioh_nbd_is_uri(const char *spec)
{
    for (gsize i = 0; i < G_N_ELEMENTS(schemes); i++) {
        if (g_str_has_prefix(spec, schemes[i])) {
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
ioh_nbd_is_legacy(const char *spec)
{
    return g_str_has_prefix(spec, "nbd:") && !ioh_nbd_is_uri(spec);
}

/* A URI cut as libxml2 2.9 cuts it (RFC 3986): user information (the characters it may
 * hold, then '@'), a host ("[...]" up to the next ']', wherever that is, or a name), a
 * port, then the path up to '?' or '#', the query up to '#'. Offsets into the text; the
 * query without its '?'. */
typedef struct {
    gsize auth_start;      /* after "://" */
    gsize userinfo_end;    /* after its '@' (auth_start: none) */
    gsize auth_end;
    gsize path_end;
    gsize query_start, query_end;   /* equal: no query */
} UriParts;

static gboolean
is_pct(const char *s)
{
    return s[0] == '%' && g_ascii_isxdigit(s[1]) && g_ascii_isxdigit(s[2]);
}

/* The length of the run of user information or host name characters at @s (unreserved,
 * percent-encoded, sub-delims; ':' too in user information). */
static gsize
span_name(const char *s, gboolean userinfo)
{
    gsize i = 0;

    for (;;) {
        if (g_ascii_isalnum(s[i]) || (s[i] && strchr("-._~!$&'()*+,;=", s[i])) ||
            (userinfo && s[i] == ':')) {
            i++;
        } else if (is_pct(s + i)) {
            i += 3;
        } else {
            return i;
        }
    }
}

/* The path, query and fragment after the authority ending at @auth_end. */
static void
cut_rest(const char *uri, gsize auth_end, UriParts *p)
{
    p->auth_end = auth_end;
    p->path_end = p->auth_end + strcspn(uri + p->auth_end, "?#");
    p->query_start = p->path_end + (uri[p->path_end] == '?' ? 1 : 0);
    p->query_end = p->query_start + strcspn(uri + p->query_start, "#");
}

/* FALSE: an authority that libxml2 would refuse or read otherwise than this cut; @p is
 * then a rough cut (at the first '/', '?' or '#', user information up to its last '@'),
 * enough to find what to redact. */
static gboolean
uri_cut(const char *uri, UriParts *p)
{
    const char *a = strstr(uri, "://") + 3, *h, *at;
    gsize n;

    p->auth_start = a - uri;
    h = a + span_name(a, TRUE);
    h = *h == '@' ? h + 1 : a;
    p->userinfo_end = h - uri;
    n = *h == '[' ? strspn(h + 1, "0123456789abcdefABCDEF:.") : 0;
    if (*h == '[' && h[1 + n] == ']') {
        h += n + 2;
    } else if (*h != '[') {
        h += span_name(h, FALSE);
    }
    if (*h == ':') {
        h += 1 + strspn(h + 1, "0123456789");
    }
    if (!*h || strchr("/?#", *h)) {
        cut_rest(uri, h - uri, p);
        return TRUE;
    }
    cut_rest(uri, p->auth_start + strcspn(a, "/?#"), p);
    at = g_strrstr_len(a, p->auth_end - p->auth_start, "@");
    p->userinfo_end = at ? (gsize)(at + 1 - uri) : p->auth_start;
    return FALSE;
}

static int
hex_value(char c)
{
    return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* @len bytes of @s percent-decoded as xmlURIUnescapeString() does ("%XX" with two hex
 * digits, any other '%' kept), as the C string libnbd then uses (cut at a decoded NUL). */
static char *
unescape(const char *s, gsize len)
{
    GString *out = g_string_sized_new(len);

    for (gsize i = 0; i < len; i++) {
        if (s[i] == '%' && len - i > 2 && hex_value(s[i + 1]) >= 0 &&
            hex_value(s[i + 2]) >= 0) {
            g_string_append_c(out, (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
            i += 2;
        } else {
            g_string_append_c(out, s[i]);
        }
    }
    return g_string_free(out, FALSE);   /* a decoded NUL ends the C string */
}

/* One parameter of a query, as libnbd sees it; raw: its text in the URI. */
typedef struct {
    const char *raw;
    gsize raw_len;
    char *name;       /* decoded */
    char *value;      /* decoded ("" without '=') */
} QueryParam;

static void
query_param_clear(gpointer data)
{
    QueryParam *q = data;

    g_free(q->name);
    g_free(q->value);
}

/* The query's parameters, split as libnbd 1.14's parse_uri_queries(): the next '&' ends
 * one, else the next ';'; an empty one and an "=value" are skipped. */
static GArray *
query_split(const char *q, gsize len)
{
    GArray *params = g_array_new(FALSE, TRUE, sizeof(QueryParam));
    const char *end_all = q + len;

    g_array_set_clear_func(params, query_param_clear);
    while (q < end_all) {
        const char *end = memchr(q, '&', end_all - q);
        const char *eq;

        end = end ? end : memchr(q, ';', end_all - q);
        end = end ? end : end_all;
        eq = memchr(q, '=', end - q);
        if (end != q && eq != q) {
            QueryParam p = { .raw = q, .raw_len = end - q };

            p.name = unescape(q, (eq ? eq : end) - q);
            p.value = eq ? unescape(eq + 1, end - (eq + 1)) : g_strdup("");
            g_array_append_val(params, p);
        }
        q = end < end_all ? end + 1 : end_all;
    }
    return params;
}

/* The decoded value of the last socket= parameter (the one libnbd uses), or NULL. */
static const char *
query_socket(GArray *params)
{
    const char *sock = NULL;

    for (guint i = 0; i < params->len; i++) {
        QueryParam *p = &g_array_index(params, QueryParam, i);

        if (g_str_equal(p->name, "socket")) {
            sock = p->value;
        }
    }
    return sock;
}

/* @len bytes of @text, each byte that is not printable ASCII percent-encoded: libxml2
 * refuses such a byte in a URI (libnbd says "unable to parse URI"), so the name means the
 * same, and a control character, or a C1 one (U+009B is a terminal's CSI), reaches no
 * record file, JSON line or debug output raw. */
static void
append_printable(GString *s, const char *text, gsize len)
{
    for (gsize i = 0; i < len; i++) {
        guchar c = (guchar)text[i];

        if (c <= 0x20 || c >= 0x7f) {
            g_string_append_printf(s, "%%%02X", c);
        } else {
            g_string_append_c(s, (char)c);
        }
    }
}

gboolean
ioh_nbd_has_socket(const char *uri)
{
    UriParts p;
    g_autoptr(GArray) params = NULL;

    if (!ioh_nbd_is_uri(uri)) {
        return FALSE;
    }
    uri_cut(uri, &p);
    params = query_split(uri + p.query_start, p.query_end - p.query_start);
    return query_socket(params) != NULL;
}

char *
ioh_nbd_safe_name(const char *uri)
{
    UriParts p;
    GString *s;
    g_autoptr(GArray) params = NULL;
    const char *sock;

    if (!ioh_nbd_is_uri(uri)) {
        return g_strdup(uri);
    }
    s = g_string_new_len(uri, strstr(uri, "://") + 3 - uri);
    if (!uri_cut(uri, &p)) {
        /* nothing of it can be told safe */
        g_string_append(s, IOH_NBD_UNPARSABLE);
        return g_string_free(s, FALSE);
    }
    append_printable(s, uri + p.userinfo_end, p.path_end - p.userinfo_end);
    params = query_split(uri + p.query_start, p.query_end - p.query_start);
    sock = query_socket(params);
    if (sock) {
        /* encoded again: a ';', '&' or '#' of the path must not split the printed query */
        g_string_append(s, "?socket=");
        g_string_append_uri_escaped(s, sock, "/:@+,", FALSE);
    }
    return g_string_free(s, FALSE);
}

/* Replaces each occurrence of @secret (when not empty) in @text by @by. */
static void
replace(GString *text, const char *secret, gsize len, const char *by)
{
    g_autofree char *needle = g_strndup(secret, len);

    if (*needle) {
        g_string_replace(text, needle, by, 0);
    }
}

/* The secrets of @uri that a message may quote: user information, query, fragment, and
 * each parameter's raw text and decoded value but socket's. */
static void
redact_parts(const char *uri, const UriParts *p, GString *text)
{
    g_autoptr(GArray) params = query_split(uri + p->query_start, p->query_end - p->query_start);
    g_autofree char *user = NULL;

    replace(text, uri + p->query_start, p->query_end - p->query_start, HIDDEN);
    replace(text, uri + p->query_end, strlen(uri + p->query_end), HIDDEN);   /* #fragment */
    replace(text, uri + p->auth_start, p->userinfo_end - p->auth_start, HIDDEN);
    if (p->userinfo_end > p->auth_start) {
        /* libxml2's user: decoded, without the '@' */
        user = unescape(uri + p->auth_start, p->userinfo_end - 1 - p->auth_start);
        replace(text, user, strlen(user), HIDDEN);
    }
    for (guint i = 0; i < params->len; i++) {
        QueryParam *q = &g_array_index(params, QueryParam, i);

        if (!g_str_equal(q->name, "socket")) {
            replace(text, q->raw, q->raw_len, HIDDEN);
            replace(text, q->value, strlen(q->value), HIDDEN);
        }
    }
}

char *
ioh_nbd_redact(const char *uri, const char *text)
{
    GString *s = g_string_new(text);
    g_autofree char *safe = ioh_nbd_safe_name(uri);
    UriParts p;

    if (!ioh_nbd_is_uri(uri)) {
        return g_string_free(s, FALSE);
    }
    replace(s, uri, strlen(uri), safe);
    uri_cut(uri, &p);     /* a rough cut is as good to redact */
    redact_parts(uri, &p, s);
    return g_string_free(s, FALSE);
}
