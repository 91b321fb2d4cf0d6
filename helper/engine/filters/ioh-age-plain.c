/* ioh-age-plain.c - an age-encrypted image restored without an identity, from an NBD
 * export or an RBD image (ioh-age-plain.h)
 *
 * Why: QEMU fed an age image would fail on its first bytes, after the helper reported a
 * good start, with a message about a migration stream instead of the missing identity.
 * The command line peeks at a file or block device before the copy (cli/ioh-args-age.c);
 * a remote source is connected only by the copy, so its first bytes are looked at here,
 * as the source hands them out and before the first is delivered.
 */
#include "ioh-age-plain.h"
#include "ioh-age-header.h"
#include "ioh-error.h"

#include <errno.h>
#include <string.h>

/* TRUE when the copy decrypts (an unage filter). */
static gboolean
decrypts(const IohCopyOptions *opts)
{
    for (const char *const *f = opts->filters; f && *f; f++) {
        if (g_str_equal(*f, "unage")) {
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
ioh_age_plain_check(IohCopy *c, const char *buf, gsize len, GError **error)
{
    gsize magic = strlen(IOH_AGE_MAGIC);

    if (c->in > 0 || len < magic || !g_str_equal(c->stats->direction, "restore") ||
        (c->src->kind != IOH_KIND_NBD && c->src->kind != IOH_KIND_RBD) ||
        decrypts(c->opts) || memcmp(buf, IOH_AGE_MAGIC, magic) != 0) {
        return TRUE;
    }
    return ioh_error_set(error, EINVAL, "read", c->src->name, "an age-encrypted image: "
                         "restore it with --identity=FILE");
}
