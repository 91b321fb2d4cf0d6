/* ioh-error.c - the one GError domain, with the operation and path as fields */
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

#define IOH_ERROR_NAME "ioh-error-quark"

typedef struct {
    char *operation;
    char *path;
    int errsv;          /* the errno of a registered domain (IOH_ERROR: the code) */
} IohErrorPrivate;

/* The domains whose errors carry an IohErrorPrivate: IOH_ERROR and those of
 * ioh_error_domain_register(). The core is one shared library (helper/meson.build), so
 * this list is the only one in a process. */
static GMutex domains_lock;
static GQuark domains[4];
static guint n_domains;

/* Where GLib puts the private part: just before the GError, aligned as in gtype.c. This
 * is G_DEFINE_EXTENDED_ERROR's arithmetic, which GLib offers only inside that macro; the
 * macro cannot be used here: it names the domain after the type (an "IohError" quark),
 * and these names are fixed ("ioh-error-quark", passed through libwrap to its callers,
 * and libwrap's public "ioh-wrap-error-quark"), and it gives each domain its own type,
 * where the domains here share one. */
static IohErrorPrivate *
ioh_error_private(const GError *error)
{
    const gsize sa = 2 * sizeof(gsize);
    const gsize as = (sizeof(IohErrorPrivate) + (sa - 1)) & -sa;

    return (IohErrorPrivate *)(((guint8 *)error) - as);
}

static void
ioh_error_private_init(GError *error)
{
    IohErrorPrivate *p = ioh_error_private(error);

    p->operation = NULL;
    p->path = NULL;
    p->errsv = 0;
}

static void
ioh_error_private_copy(const GError *src, GError *dest)
{
    const IohErrorPrivate *s = ioh_error_private(src);
    IohErrorPrivate *d = ioh_error_private(dest);

    d->operation = g_strdup(s->operation);
    d->path = g_strdup(s->path);
    d->errsv = s->errsv;
}

static void
ioh_error_private_clear(GError *error)
{
    IohErrorPrivate *p = ioh_error_private(error);

    g_clear_pointer(&p->operation, g_free);
    g_clear_pointer(&p->path, g_free);
}

/* The index of @domain in domains[], or -1. Called with domains_lock held. */
static int
domain_index(GQuark domain)
{
    for (guint i = 0; i < n_domains; i++) {
        if (domains[i] == domain) {
            return (int)i;
        }
    }
    return -1;
}

static gboolean
has_fields(const GError *error)
{
    gboolean known;

    if (!error) {
        return FALSE;
    }
    g_mutex_lock(&domains_lock);
    known = domain_index(error->domain) >= 0;
    g_mutex_unlock(&domains_lock);
    return known;
}

GQuark
ioh_error_domain_register(const char *name)
{
    GQuark q;

    g_return_val_if_fail(name && *name, 0);
    g_mutex_lock(&domains_lock);
    q = g_quark_try_string(name);
    if (q == 0 || domain_index(q) < 0) {
        if (n_domains == G_N_ELEMENTS(domains)) {
            g_mutex_unlock(&domains_lock);
            g_return_val_if_reached(0);
        }
        q = g_error_domain_register_static(name, sizeof(IohErrorPrivate),
                                           ioh_error_private_init, ioh_error_private_copy,
                                           ioh_error_private_clear);
        domains[n_domains++] = q;
    }
    g_mutex_unlock(&domains_lock);
    return q;
}

GQuark
ioh_error_quark(void)
{
    static GQuark q;
    static gsize once;

    if (g_once_init_enter(&once)) {
        q = ioh_error_domain_register(IOH_ERROR_NAME);
        g_once_init_leave(&once, 1);
    }
    return q;
}

static void
set_fields(GError *error, int errsv, const char *what, const char *path)
{
    IohErrorPrivate *p = ioh_error_private(error);

    g_free(p->operation);
    g_free(p->path);
    p->operation = g_strdup(what);
    p->path = g_strdup(path);
    p->errsv = errsv;
}

GError *
ioh_error_new_from(GQuark domain, int code, const GError *from)
{
    GError *e = g_error_new_literal(domain, code, from ? from->message : "");

    g_return_val_if_fail(has_fields(e), e);
    set_fields(e, ioh_error_get_errno(from), ioh_error_get_operation(from),
               ioh_error_get_path(from));
    return e;
}

GError *
ioh_error_new_literal(int errsv, const char *what, const char *path, const char *message)
{
    GError *e;

    if (errsv == ECANCELED) {
        /* the one "cancelled" (see ioh-error.h): GLib's, which carries no fields */
        return g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, message ? message : "");
    }
    e = g_error_new_literal(IOH_ERROR, errsv, message ? message : "");
    set_fields(e, errsv, what, path);
    return e;
}

/* "<what> <path>: <cause>", with the parts that are NULL left out. */
static char *
compose(const char *what, const char *path, const char *cause)
{
    if (what && path) {
        return g_strdup_printf("%s %s: %s", what, path, cause);
    }
    if (what || path) {
        return g_strdup_printf("%s: %s", what ? what : path, cause);
    }
    return g_strdup(cause);
}

static gboolean
set_composed(GError **error, int errsv, const char *what, const char *path,
             const char *cause)
{
    g_autofree char *msg = NULL;

    if (!error) {
        return FALSE;
    }
    msg = compose(what, path, cause);
    g_propagate_error(error, ioh_error_new_literal(errsv, what, path, msg));
    return FALSE;
}

gboolean
ioh_error_set_errno(GError **error, int errsv, const char *what, const char *path)
{
    return set_composed(error, errsv, what, path, g_strerror(errsv));
}

gboolean
ioh_error_set(GError **error, int errsv, const char *what, const char *path,
              const char *fmt, ...)
{
    g_autofree char *cause = NULL;
    va_list ap;

    if (!error) {
        return FALSE;
    }
    va_start(ap, fmt);
    cause = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return set_composed(error, errsv, what, path, cause);
}

gboolean
ioh_error_set_cancelled(GError **error, const char *what, const char *path)
{
    return ioh_error_set_errno(error, ECANCELED, what, path);
}

gboolean
ioh_error_check_cancellable(GCancellable *cancellable, const char *what, const char *path,
                            GError **error)
{
    if (g_cancellable_is_cancelled(cancellable)) {
        return ioh_error_set_cancelled(error, what, path);
    }
    return TRUE;
}

gboolean
ioh_error_is_cancelled(const GError *error)
{
    return g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

int
ioh_error_get_errno(const GError *error)
{
    if (!error) {
        return 0;
    }
    if (error->domain == IOH_ERROR) {
        return error->code;
    }
    if (has_fields(error)) {
        return ioh_error_private(error)->errsv;
    }
    return ioh_error_is_cancelled(error) ? ECANCELED : 0;
}

const char *
ioh_error_get_operation(const GError *error)
{
    return has_fields(error) ? ioh_error_private(error)->operation : NULL;
}

const char *
ioh_error_get_path(const GError *error)
{
    return has_fields(error) ? ioh_error_private(error)->path : NULL;
}

const char *
ioh_errno_name(int errsv)
{
    return errsv > 0 ? strerrorname_np(errsv) : NULL;
}
