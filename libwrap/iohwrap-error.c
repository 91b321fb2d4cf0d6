/* iohwrap-error.c - libwrap's error domain, the bottom of libwrap: every file sets its
 * errors in it, and it calls no other.
 */
#include "config.h"

#include "iohwrap.h"

#include "ioh-error.h"

/* Its errors carry the helper's errno, operation and path as fields (helper/core's
 * ioh_error_get_errno() and friends read them). */
GQuark
ioh_wrap_error_quark(void)
{
    static GQuark q;
    static gsize once;

    if (g_once_init_enter(&once)) {
        q = ioh_error_domain_register("ioh-wrap-error-quark");
        g_once_init_leave(&once, 1);
    }
    return q;
}
