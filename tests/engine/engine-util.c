/* engine-util.c - plumbing of the engine's in-process tests (engine-util.h) */
#include "engine-util.h"
#include "ioh-filter.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

char *
engt_random(gsize len, guint32 seed)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(seed);
    char *b = g_malloc(len + 1);
    gsize i;

    for (i = 0; i < len; i += 4) {
        guint32 v = g_rand_int(r);
        memcpy(b + i, &v, MIN(4, len + 1 - i));
    }
    return b;
}

/* ioh_copy() between @end and a pipe that @pump feeds (@save: the pipe is the source) or
 * drains (the pipe is the destination); ioh_copy()'s result. */
static gboolean
pipe_copy(IohEnd *end, gboolean save, const IohtPumpOpts *pump, const IohCopyOptions *opts,
          IohStats *stats, GError **error)
{
    g_autoptr(IohEnd) pipe_end = NULL;
    IohtPump *t;
    gboolean ok;
    int fds[2];

    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    t = save ? ioht_feed_start(fds[1], pump) : ioht_drain_start(fds[0], pump);
    pipe_end = ioh_end_from_fd(save ? fds[0] : fds[1], "pipe", NULL);
    g_assert_nonnull(pipe_end);
    ok = save ? ioh_copy(pipe_end, end, opts, stats, error)
              : ioh_copy(end, pipe_end, opts, stats, error);
    /* a failed save leaves the pipe unread: closing it ends the feed with EPIPE */
    g_assert_true(ioh_end_close(pipe_end, NULL));
    ioht_pump_join(t, NULL);
    return ok;
}

gboolean
engt_save(const void *data, gsize len, IohEnd *dst, const IohCopyOptions *opts,
          IohStats *stats, GError **error)
{
    IohtPumpOpts feed = { .data = data, .len = len };

    return pipe_copy(dst, TRUE, &feed, opts, stats, error);
}

gboolean
engt_restore(IohEnd *src, const IohCopyOptions *opts, IohStats *stats, GByteArray *got,
             GError **error)
{
    IohtPumpOpts drain = { .keep = got };

    return pipe_copy(src, FALSE, &drain, opts, stats, error);
}

static GPtrArray *logged;

static GLogWriterOutput
keep_messages(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
    const char *domain = NULL, *message = NULL;

    (void)data;
    for (gsize i = 0; i < n; i++) {
        if (g_str_equal(fields[i].key, "GLIB_DOMAIN")) {
            domain = fields[i].value;
        } else if (g_str_equal(fields[i].key, "MESSAGE")) {
            message = fields[i].value;
        }
    }
    if (domain && message && g_str_equal(domain, "iohelper")) {
        g_ptr_array_add(logged, g_strdup(message));
    }
    if (level & G_LOG_LEVEL_DEBUG) {
        return G_LOG_WRITER_HANDLED;
    }
    return g_log_writer_default(level, fields, n, data);
}

void
engt_log_start(void)
{
    logged = g_ptr_array_new_with_free_func(g_free);
    g_log_set_writer_func(keep_messages, NULL, NULL);
}

void
engt_log_clear(void)
{
    g_ptr_array_set_size(logged, 0);
}

gboolean
engt_logged(const char *text)
{
    for (guint i = 0; i < logged->len; i++) {
        if (strstr(g_ptr_array_index(logged, i), text)) {
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
engt_chain_run(IohFilterChain *chain, const guint8 *in, gsize len, gsize piece,
               IohStats *stats, GError **error)
{
    for (gsize off = 0; off < len; off += piece) {
        if (!ioh_filter_chain_data(chain, in + off, MIN(piece, len - off), error)) {
            return FALSE;
        }
    }
    return ioh_filter_chain_flush(chain, error) &&
           ioh_filter_chain_finish(chain, NULL, NULL, stats, error);
}
