/* ioh-rbd-name.c - RBD image names as text (ioh-rbd-name.h)
 *
 * Why a parser of our own: librbd takes a pool, an image and a snapshot as separate
 * strings; the "rbd:" form is QEMU's, parsed by QEMU itself (qemu_rbd_parse_filename()),
 * which also passes any other option to rados_conf_set(). We take only what a save or
 * restore needs, so that a name means one thing and a secret never rides in it.
 */
#include "ioh-rbd-name.h"

#include <errno.h>
#include <string.h>

#include "ioh-error.h"

#define PREFIX "rbd:"
#define NAME_MAX_LEN 255
#define VALUE_MAX_LEN 4095

gboolean
ioh_rbd_is_name(const char *spec)
{
    return g_str_has_prefix(spec, PREFIX);
}

static gboolean
fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return ioh_error_set(error, EINVAL, NULL, NULL, "%s", msg);
}

static gboolean
is_name_char(char ch)
{
    return g_ascii_isalnum(ch) || ch == '.' || ch == '_' || ch == '-' || ch == '+';
}

/* The name of @what at *@p up to a byte of @stops (or the end), moved past it. */
static gboolean
take_name(const char **p, const char *stops, const char *what, char **ret, GError **error)
{
    gsize n = 0;

    while ((*p)[n] && !strchr(stops, (*p)[n])) {
        if (!is_name_char((*p)[n])) {
            return fail(error, "%s name: character %s not allowed (letters, digits, "
                        "'.', '_', '-', '+')", what,
                        (*p)[n] == '\\' ? "'\\' (QEMU's escapes)" : "outside them");
        }
        n++;
    }
    if (n == 0) {
        return fail(error, "empty %s name", what);
    }
    if (n > NAME_MAX_LEN) {
        return fail(error, "%s name longer than %d bytes", what, NAME_MAX_LEN);
    }
    *ret = g_strndup(*p, n);
    *p += n;
    return TRUE;
}

/* POOL/[NS/]IMAGE[@SNAP]: up to the first ':' (the options) or the end. */
static gboolean
take_image(const char **p, IohRbdName *ret, GError **error)
{
    char *second = NULL;

    if (!take_name(p, "/@:", "pool", &ret->pool, error)) {
        return FALSE;
    }
    if (**p != '/') {
        return fail(error, "'/' expected after the pool name (rbd:POOL/IMAGE)");
    }
    (*p)++;
    if (!take_name(p, "/@:", "image", &second, error)) {
        return FALSE;
    }
    if (**p == '/') {
        (*p)++;
        ret->ns = second;
        if (!take_name(p, "/@:", "image", &ret->image, error)) {
            return FALSE;
        }
        if (**p == '/') {
            return fail(error, "too many '/' (rbd:POOL/[NAMESPACE/]IMAGE)");
        }
    } else {
        ret->image = second;
    }
    if (**p == '@') {
        (*p)++;
        if (!take_name(p, "/@:", "snapshot", &ret->snap, error)) {
            return FALSE;
        }
        if (**p == '/' || **p == '@') {
            return fail(error, "'%c' after the snapshot name", **p);
        }
    }
    return TRUE;
}

/* A value: 1 to VALUE_MAX_LEN printable bytes up to the next ':'. Never quoted. */
static gboolean
take_value(const char **p, const char *key, char **ret, GError **error)
{
    gsize n = strcspn(*p, ":");

    if (n == 0) {
        return fail(error, "option %s= has an empty value", key);
    }
    if (n > VALUE_MAX_LEN) {
        return fail(error, "option %s= longer than %d bytes", key, VALUE_MAX_LEN);
    }
    for (gsize i = 0; i < n; i++) {
        if ((guchar)(*p)[i] < 0x20 || (*p)[i] == 0x7f || (*p)[i] == '\\') {
            return fail(error, "option %s= holds a control character or '\\'", key);
        }
    }
    if (*ret) {
        return fail(error, "option %s= given twice", key);
    }
    *ret = g_strndup(*p, n);
    *p += n;
    return TRUE;
}

/* The key of an option at *@p, up to '='; shown in a message only when it is a word. */
static gboolean
take_option(const char **p, IohRbdName *ret, GError **error)
{
    static const char *const keys[] = { "conf", "id", "keyring" };
    gsize n = strcspn(*p, "=:");
    char **slots[] = { &ret->conf, &ret->id, &ret->keyring };
    g_autofree char *key = g_strndup(*p, n);

    if ((*p)[n] != '=') {
        return fail(error, "option without '=' (conf=PATH, id=USER, keyring=PATH)");
    }
    *p += n + 1;
    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
        if (g_str_equal(key, keys[i])) {
            return take_value(p, keys[i], slots[i], error);
        }
    }
    if (g_str_equal(key, "key") || g_str_equal(key, "password-secret")) {
        return fail(error, "option %s= would put the secret key on the command line: give "
                    "keyring=PATH", key);
    }
    for (gsize i = 0; i < n; i++) {
        if (!g_ascii_isalnum(key[i]) && key[i] != '_' && key[i] != '-') {
            return fail(error, "unknown option (conf, id, keyring)");
        }
    }
    return fail(error, "unknown option '%s' (conf, id, keyring)", key);
}

static gboolean
check_id(const IohRbdName *name, GError **error)
{
    for (const char *s = name->id; s && *s; s++) {
        if (!is_name_char(*s)) {
            return fail(error, "id=: a user name of letters, digits, '.', '_', '-', '+' "
                        "(without \"client.\")");
        }
    }
    if (name->id && g_str_has_prefix(name->id, "client.")) {
        return fail(error, "id=: the user name without \"client.\" (as QEMU's id=)");
    }
    return TRUE;
}

gboolean
ioh_rbd_name_parse(const char *spec, IohRbdName *ret, GError **error)
{
    const char *p = spec;

    memset(ret, 0, sizeof(*ret));
    if (!ioh_rbd_is_name(spec)) {
        return fail(error, "not an RBD name (rbd:POOL/IMAGE)");
    }
    p += strlen(PREFIX);
    if (!take_image(&p, ret, error)) {
        goto fail;
    }
    while (*p == ':') {
        p++;
        if (!take_option(&p, ret, error)) {
            goto fail;
        }
    }
    if (*p) {
        fail(error, "unexpected text after the image name");
        goto fail;
    }
    if (check_id(ret, error)) {
        return TRUE;
    }
fail:
    ioh_rbd_name_clear(ret);
    return FALSE;
}

void
ioh_rbd_name_clear(IohRbdName *name)
{
    if (!name) {
        return;
    }
    g_clear_pointer(&name->pool, g_free);
    g_clear_pointer(&name->ns, g_free);
    g_clear_pointer(&name->image, g_free);
    g_clear_pointer(&name->snap, g_free);
    g_clear_pointer(&name->conf, g_free);
    g_clear_pointer(&name->id, g_free);
    g_clear_pointer(&name->keyring, g_free);
}

char *
ioh_rbd_name_format(const IohRbdName *n)
{
    return g_strdup_printf(PREFIX "%s/%s%s%s%s%s", n->pool, n->ns ? n->ns : "",
                           n->ns ? "/" : "", n->image, n->snap ? "@" : "",
                           n->snap ? n->snap : "");
}

char *
ioh_rbd_safe_name(const char *spec)
{
    g_auto(IohRbdName) name = { 0 };

    if (!ioh_rbd_is_name(spec)) {
        return g_strdup(spec);
    }
    if (!ioh_rbd_name_parse(spec, &name, NULL)) {
        return g_strdup(PREFIX IOH_RBD_UNPARSABLE);
    }
    return ioh_rbd_name_format(&name);
}
