/* ioh-read-ahead.c - reads ahead of the consumer, in order (ioh-read-ahead.h) */
#include "ioh-read-ahead.h"

/* Issues reads until every request is in flight or the stream is all asked for. */
static gboolean
fill(IohCopy *c, IohReadAhead *ra, GError **error)
{
    const IohReadAheadOps *ops = ra->ops;

    while (ra->issued < ra->length && ops->in_flight(ra->pool) < ops->capacity(ra->pool)) {
        guint64 pos = ra->start + ra->issued;
        gsize len = (gsize)MIN((guint64)ops->request_at(ra->pool, pos),
                               ra->length - ra->issued);

        if (!ops->next(ra->pool, error) || !ops->issue_read(ra->pool, len, pos, error)) {
            return FALSE;
        }
        ra->issued += len;
        ioh_copy_count_read(c);
    }
    return TRUE;
}

const char *
ioh_read_ahead_peek(IohCopy *c, IohReadAhead *ra, gsize *len, GError **error)
{
    const char *p;

    if (ra->head_off == ra->head_len) {
        if (ra->ops->in_flight(ra->pool) == 0 && ra->issued == ra->length) {
            *len = 0;
            return "";
        }
        if (!fill(c, ra, error) || !(ra->head = ra->ops->take(ra->pool, &ra->head_len, error))) {
            return NULL;
        }
        ra->head_off = 0;
    }
    *len = MIN(*len, ra->head_len - ra->head_off);
    p = ra->head + ra->head_off;
    ra->head_off += *len;
    return p;
}
