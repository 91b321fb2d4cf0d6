/* test-error.c - the one error domain (helper/core/ioh-error): errno codes, the
 * structured fields, the one "cancelled". */
#include <errno.h>

#include <gio/gio.h>

#include "ioh-error.h"

static void
test_set_errno(void)
{
    g_autoptr(GError) e = NULL;

    g_assert_false(ioh_error_set_errno(&e, ENOSPC, "write", "/var/lib/vm1.save"));
    g_assert_error(e, IOH_ERROR, ENOSPC);
    g_assert_cmpstr(e->message, ==, "write /var/lib/vm1.save: No space left on device");
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "write");
    g_assert_cmpstr(ioh_error_get_path(e), ==, "/var/lib/vm1.save");
    g_assert_cmpint(ioh_error_get_errno(e), ==, ENOSPC);
}

static void
test_set_errno_no_path(void)
{
    g_autoptr(GError) e = NULL;

    ioh_error_set_errno(&e, EMFILE, "eventfd", NULL);
    g_assert_error(e, IOH_ERROR, EMFILE);
    g_assert_cmpstr(e->message, ==, "eventfd: Too many open files");
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "eventfd");
    g_assert_null(ioh_error_get_path(e));
}

static void
test_set_format(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) e2 = NULL;
    g_autoptr(GError) e3 = NULL;

    g_assert_false(ioh_error_set(&e, EBUSY, "lock", "/x.save", "in use by another %s",
                                 "iohelper"));
    g_assert_error(e, IOH_ERROR, EBUSY);
    g_assert_cmpstr(e->message, ==, "lock /x.save: in use by another iohelper");
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "lock");
    g_assert_cmpstr(ioh_error_get_path(e), ==, "/x.save");

    ioh_error_set(&e2, EINVAL, NULL, NULL, "cause %d alone", 7);
    g_assert_cmpstr(e2->message, ==, "cause 7 alone");
    g_assert_null(ioh_error_get_operation(e2));
    g_assert_null(ioh_error_get_path(e2));

    ioh_error_set(&e3, EINVAL, NULL, "/p", "bad");
    g_assert_cmpstr(e3->message, ==, "/p: bad");
    g_assert_cmpstr(ioh_error_get_path(e3), ==, "/p");
}

static void
test_null_error(void)
{
    g_assert_false(ioh_error_set_errno(NULL, EIO, "read", "/x"));
    g_assert_false(ioh_error_set(NULL, EIO, "read", "/x", "%s", "y"));
    g_assert_false(ioh_error_set_cancelled(NULL, "read", "/x"));
    g_assert_null(ioh_error_get_operation(NULL));
    g_assert_null(ioh_error_get_path(NULL));
    g_assert_cmpint(ioh_error_get_errno(NULL), ==, 0);
    g_assert_false(ioh_error_is_cancelled(NULL));
}

static void
test_new_literal(void)
{
    g_autoptr(GError) e = ioh_error_new_literal(EIO, "read", "nbd://h/x", "read nbd://h/x: %s");

    g_assert_error(e, IOH_ERROR, EIO);
    g_assert_cmpstr(e->message, ==, "read nbd://h/x: %s");    /* literal: no formatting */
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "read");
    g_assert_cmpstr(ioh_error_get_path(e), ==, "nbd://h/x");
}

/* The fields survive what GLib does to errors: copy, prefix, propagate. */
static void
test_fields_survive(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) copy = NULL;
    g_autoptr(GError) dest = NULL;

    ioh_error_set_errno(&e, EIO, "fdatasync", "/img");
    copy = g_error_copy(e);
    g_clear_error(&e);    /* the copy owns its own strings */
    g_assert_error(copy, IOH_ERROR, EIO);
    g_assert_cmpstr(ioh_error_get_operation(copy), ==, "fdatasync");
    g_assert_cmpstr(ioh_error_get_path(copy), ==, "/img");

    g_prefix_error(&copy, "save failed: ");
    g_assert_cmpstr(copy->message, ==, "save failed: fdatasync /img: Input/output error");
    g_assert_cmpstr(ioh_error_get_operation(copy), ==, "fdatasync");

    g_propagate_prefixed_error(&dest, g_steal_pointer(&copy), "%s: ", "qemu-iohelper");
    g_assert_cmpstr(dest->message, ==,
                    "qemu-iohelper: save failed: fdatasync /img: Input/output error");
    g_assert_cmpstr(ioh_error_get_path(dest), ==, "/img");
}

static void
test_other_domain(void)
{
    g_autoptr(GError) e = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_NOENT, "gone");
    g_autoptr(GError) io = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, "failed");

    g_assert_null(ioh_error_get_operation(e));
    g_assert_null(ioh_error_get_path(e));
    g_assert_cmpint(ioh_error_get_errno(e), ==, 0);
    g_assert_false(ioh_error_is_cancelled(e));
    g_assert_cmpint(ioh_error_get_errno(io), ==, 0);
    g_assert_false(ioh_error_is_cancelled(io));
}

static void
test_cancelled(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) gio = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled");

    g_assert_false(ioh_error_set_cancelled(&e, "read", "stdin"));
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpstr(e->message, ==, "read stdin: Operation canceled");
    g_assert_true(ioh_error_is_cancelled(e));
    g_assert_true(ioh_error_is_cancelled(gio));
    g_assert_cmpint(ioh_error_get_errno(gio), ==, ECANCELED);
    g_assert_cmpint(ioh_error_get_errno(e), ==, ECANCELED);
}

static void
test_check_cancellable(void)
{
    g_autoptr(GCancellable) c = g_cancellable_new();
    g_autoptr(GError) e = NULL;

    g_assert_true(ioh_error_check_cancellable(NULL, "copy", NULL, &e));
    g_assert_true(ioh_error_check_cancellable(c, "copy", NULL, &e));
    g_assert_no_error(e);
    g_cancellable_cancel(c);
    g_assert_false(ioh_error_check_cancellable(c, "copy", "/x", &e));
    g_assert_error(e, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpstr(e->message, ==, "copy /x: Operation canceled");
}

static void
test_errno_name(void)
{
    g_assert_cmpstr(ioh_errno_name(ENOSPC), ==, "ENOSPC");
    g_assert_cmpstr(ioh_errno_name(EIO), ==, "EIO");
    g_assert_cmpstr(ioh_errno_name(ECANCELED), ==, "ECANCELED");
    g_assert_cmpstr(ioh_errno_name(EPIPE), ==, "EPIPE");
    g_assert_null(ioh_errno_name(0));
    g_assert_null(ioh_errno_name(-5));
    g_assert_null(ioh_errno_name(100000));
}

static void
test_quark(void)
{
    g_assert_cmpuint(IOH_ERROR, !=, 0);
    g_assert_cmpuint(IOH_ERROR, ==, ioh_error_quark());
    g_assert_cmpstr(g_quark_to_string(IOH_ERROR), ==, "ioh-error-quark");
}

/* Errors made in one thread and read in another: the domain is registered once. */
static gpointer
make_errors(gpointer data)
{
    for (int i = 0; i < 1000; i++) {
        g_autoptr(GError) e = NULL;
        ioh_error_set_errno(&e, EIO, "read", data);
        g_assert_cmpstr(ioh_error_get_path(e), ==, data);
    }
    return NULL;
}

static void
test_threads(void)
{
    GThread *t[4];

    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
        t[i] = g_thread_new("errors", make_errors, (gpointer) "/same/path");
    }
    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
        g_thread_join(t[i]);
    }
}

/* A library keeping its own domain and codes (libwrap's IOH_WRAP_ERROR) carries the same
 * fields, errno included, and they survive a copy. */
static void
test_registered_domain(void)
{
    GQuark wrap = ioh_error_domain_register("ioh-wrap-error-quark");
    g_autoptr(GError) from = NULL;
    g_autoptr(GError) e = NULL;
    g_autoptr(GError) copy = NULL;

    g_assert_cmpuint(wrap, !=, 0);
    g_assert_cmpuint(ioh_error_domain_register("ioh-wrap-error-quark"), ==, wrap);
    g_assert_cmpstr(g_quark_to_string(wrap), ==, "ioh-wrap-error-quark");
    ioh_error_set_errno(&from, ENOSPC, "write", "/x\n\"y");
    e = ioh_error_new_from(wrap, 3, from);
    g_assert_error(e, wrap, 3);
    g_assert_cmpstr(e->message, ==, from->message);
    g_assert_cmpint(ioh_error_get_errno(e), ==, ENOSPC);
    g_assert_cmpstr(ioh_error_get_operation(e), ==, "write");
    g_assert_cmpstr(ioh_error_get_path(e), ==, "/x\n\"y");
    copy = g_error_copy(e);
    g_assert_cmpint(ioh_error_get_errno(copy), ==, ENOSPC);
    g_assert_cmpstr(ioh_error_get_path(copy), ==, "/x\n\"y");
    /* From an error of a domain without fields: the message only, errno 0. */
    g_clear_error(&e);
    g_clear_error(&from);
    from = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_NOENT, "plain");
    e = ioh_error_new_from(wrap, 4, from);
    g_assert_cmpstr(e->message, ==, "plain");
    g_assert_cmpint(ioh_error_get_errno(e), ==, 0);
    g_assert_null(ioh_error_get_operation(e));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/error/set-errno/message-code-fields", test_set_errno);
    g_test_add_func("/error/set-errno/no-path", test_set_errno_no_path);
    g_test_add_func("/error/set/formatted-cause", test_set_format);
    g_test_add_func("/error/null-error-and-null-args", test_null_error);
    g_test_add_func("/error/new-literal", test_new_literal);
    g_test_add_func("/error/fields-survive-copy-prefix-propagate", test_fields_survive);
    g_test_add_func("/error/other-domain", test_other_domain);
    g_test_add_func("/error/cancelled/one-code", test_cancelled);
    g_test_add_func("/error/cancelled/check-cancellable", test_check_cancellable);
    g_test_add_func("/error/errno-name", test_errno_name);
    g_test_add_func("/error/quark", test_quark);
    g_test_add_func("/error/registered-domain", test_registered_domain);
    g_test_add_func("/error/threads", test_threads);
    return g_test_run();
}
