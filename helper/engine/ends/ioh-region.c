/* ioh-region.c - the region a save's remote storage side may take (ioh-region.h) */
#include "ioh-region.h"
#include "ioh-error.h"

#include <errno.h>

gboolean
ioh_region_check(const IohCopy *c, const IohEnd *dst, guint64 end, GError **error)
{
    const IohCopyOptions *o = c->opts;
    guint64 start = o->has_offset ? o->offset : 0;

    if (o->region == 0 || end <= start + o->region) {
        return TRUE;
    }
    return ioh_error_set(error, EFBIG, "write", dst->name, "the stream passes the end of "
                         "its region (%" G_GUINT64_FORMAT " bytes from offset %"
                         G_GUINT64_FORMAT "): nothing written past it", o->region, start);
}
