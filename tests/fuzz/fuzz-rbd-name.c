/* fuzz-rbd-name.c - libFuzzer target: the RBD name parser (helper/core/ioh-rbd-name.c)
 *
 * For any text: the parser never crashes; a name that parses is made of what the grammar
 * allows (names of letters, digits and "._-+", values without ':' or control bytes),
 * its safe name is exactly "rbd:POOL/[NS/]IMAGE[@SNAP]" and holds no option, and the name
 * written back from its parts (options in a fixed order) parses to the same parts; a
 * refusal's message is printable ASCII and quotes no option value (an unknown option's
 * name it may). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ioh-rbd-name.h"

static void
check(gboolean ok, const char *what, const char *in)
{
    if (!ok) {
        fprintf(stderr, "fuzz-rbd-name: invariant broken: %s\n  in: %s\n", what, in);
        abort();
    }
}

static gboolean
is_name(const char *s)
{
    if (!s || !*s) {
        return FALSE;
    }
    for (; *s; s++) {
        if (!g_ascii_isalnum(*s) && !strchr("._-+", *s)) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
is_value(const char *s)
{
    if (!s) {
        return TRUE;
    }
    if (!*s) {
        return FALSE;
    }
    for (; *s; s++) {
        if ((guchar)*s < 0x20 || *s == 0x7f || *s == ':' || *s == '\\') {
            return FALSE;
        }
    }
    return TRUE;
}

static char *
rebuild(const IohRbdName *n)
{
    g_autofree char *base = ioh_rbd_name_format(n);

    return g_strdup_printf("%s%s%s%s%s%s%s", base, n->conf ? ":conf=" : "",
                           n->conf ? n->conf : "", n->id ? ":id=" : "", n->id ? n->id : "",
                           n->keyring ? ":keyring=" : "", n->keyring ? n->keyring : "");
}

static void
check_parsed(const char *in, const IohRbdName *n)
{
    g_autofree char *safe = ioh_rbd_safe_name(in);
    g_autofree char *again = rebuild(n);
    g_auto(IohRbdName) m = { 0 };

    check(is_name(n->pool) && is_name(n->image) && (!n->ns || is_name(n->ns)) &&
          (!n->snap || is_name(n->snap)) && (!n->id || is_name(n->id)),
          "a name outside the grammar", in);
    check(is_value(n->conf) && is_value(n->keyring), "a value outside the grammar", in);
    check(g_str_has_prefix(safe, "rbd:") && !strchr(safe + 4, ':'), "an option in the safe "
          "name", in);
    check(ioh_rbd_name_parse(again, &m, NULL), "the rebuilt name does not parse", in);
    check(g_strcmp0(m.pool, n->pool) == 0 && g_strcmp0(m.ns, n->ns) == 0 &&
          g_strcmp0(m.image, n->image) == 0 && g_strcmp0(m.snap, n->snap) == 0 &&
          g_strcmp0(m.conf, n->conf) == 0 && g_strcmp0(m.id, n->id) == 0 &&
          g_strcmp0(m.keyring, n->keyring) == 0, "the rebuilt name parses otherwise", in);
}

/* Every literal text of ioh-rbd-name.c's messages. */
static const char vocabulary[] =
    "character not allowed (letters, digits, '.', '_', '-', '+') '\\' (QEMU's escapes) "
    "outside them empty pool image snapshot name longer than 255 4095 bytes '/' expected "
    "after the pool name (rbd:POOL/IMAGE) too many '/' (rbd:POOL/[NAMESPACE/]IMAGE) "
    "after the snapshot name option conf= id= keyring= has an empty value holds a control "
    "character or '\\' given twice option without '=' (conf=PATH, id=USER, "
    "keyring=PATH) key= password-secret= would put the secret key on the command line: "
    "give keyring=PATH unknown option (conf, id, keyring) id=: a user name of letters, "
    "digits, '.', '_', '-', '+' (without \"client.\") id=: the user name without "
    "\"client.\" (as QEMU's id=) not an RBD name (rbd:POOL/IMAGE) unexpected text after "
    "the image name";

/* The option names of @in (after each ':', up to '=' or ':'): an unknown one is named in
 * its refusal on purpose (a name, not a value). */
static char *
option_names(const char *in)
{
    GString *names = g_string_new(vocabulary);

    for (const char *p = strchr(in, ':'); p; p = strchr(p + 1, ':')) {
        g_string_append_c(names, ' ');
        g_string_append_len(names, p + 1, (gssize)strcspn(p + 1, "=:"));
    }
    return g_string_free(names, FALSE);
}

static void
check_refused(const char *in, const GError *err)
{
    const char *eq = strchr(in, '=');
    g_autofree char *known = option_names(in);

    for (const char *p = err->message; *p; p++) {
        check((guchar)*p >= 0x20 && (guchar)*p < 0x7f, "a message byte not printable", in);
    }
    /* a value: from '=' to the next ':'; one of at least 4 bytes that is not also a
     * piece of the messages' own words (ioh-rbd-name.c's texts) must not appear */
    while (eq) {
        gsize len = strcspn(eq + 1, ":");
        g_autofree char *value = g_strndup(eq + 1, len);

        if (len >= 4 && !strstr(known, value)) {
            check(!strstr(err->message, value), "a value quoted in a refusal", in);
        }
        eq = strchr(eq + 1, '=');
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree char *in = g_strndup((const char *)data, size);
    g_auto(IohRbdName) n = { 0 };
    g_autoptr(GError) err = NULL;

    if (ioh_rbd_name_parse(in, &n, &err)) {
        check_parsed(in, &n);
    } else {
        check(err != NULL, "a refusal without an error", in);
        check_refused(in, err);
    }
    return 0;
}
