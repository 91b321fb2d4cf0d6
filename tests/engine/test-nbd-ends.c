/* test-nbd-ends.c - the NBD source and sink (ioh-nbd.c, ioh-source-nbd.c, ioh-sink-nbd.c)
 * in-process, against a real nbdkit (memory plugin) on a unix socket in the test's own
 * folder, started per case: saves from a pipe and restores into one, at an offset, one
 * connection or several, small requests; an export too small and a read-only one refused.
 * Skipped, saying why, when nbdkit is not installed. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include <glib.h>

#include "engine-util.h"
#include "ioh-error.h"
#include "ioh-nbd.h"

typedef struct {
    char *dir;
    char *uri;
    GPid server;
} Server;

static void server_stop(Server *s);

/* nbdkit with @args (the plugin and its parameters, NULL-terminated) and @opts set to
 * their defaults: FALSE when the test is skipped (no nbdkit), @s then already stopped. */
static gboolean
server_start(Server *s, const char *const *args, IohCopyOptions *opts)
{
    ioh_copy_options_init(opts);
    g_autofree char *sock = NULL;

    s->dir = ioht_workdir();
    sock = g_build_filename(s->dir, "nbd.sock", NULL);
    s->uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    s->server = ioht_nbdkit_start(s->dir, sock, args);
    if (s->server == 0) {
        server_stop(s);
        return FALSE;
    }
    return TRUE;
}

/* A save of @len bytes of @in into the export at @uri, its end closed: TRUE when both
 * succeed. */
static gboolean
save_into(const char *uri, const char *in, gsize len, const IohCopyOptions *opts,
          IohStats *stats, GError **error)
{
    g_autoptr(IohEnd) dst = ioh_nbd_end_new(uri);

    if (!engt_save(in, len, dst, opts, stats, error)) {
        return FALSE;
    }
    return ioh_end_close(dst, error);
}

/* A restore of the first @len bytes of the export at @uri into @back (@opts given the
 * length). engt_restore()'s result. */
static gboolean
restore_from(const char *uri, guint64 len, IohCopyOptions *opts, IohStats *stats,
             GByteArray *back, GError **error)
{
    g_autoptr(IohEnd) src = ioh_nbd_end_new(uri);

    opts->has_length = TRUE;
    opts->length = len;
    return engt_restore(src, opts, stats, back, error);
}

static void
server_stop(Server *s)
{
    if (s->server) {
        kill(s->server, SIGKILL);
    }
    ioht_workdir_remove(s->dir);
    g_free(s->dir);
    g_free(s->uri);
}

typedef struct {
    guint connections;
    gsize request;
    guint64 offset;
} Shape;

/* Saves @len random bytes into the export at the shape's offset, then restores them. */
static void
test_roundtrip(gconstpointer data)
{
    const Shape *sh = data;
    static const char *const args[] = { "memory", "size=16M", NULL };
    gsize len = 5 * MiB + 4097;
    g_autofree char *in = engt_random(len, 21);
    g_autoptr(GByteArray) back = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    IohCopyOptions opts;
    IohStats stats;
    Server s = { 0 };

    if (!server_start(&s, args, &opts)) {
        return;
    }
    opts.nbd_connections = sh->connections;
    opts.nbd_request_size = sh->request;
    opts.has_offset = sh->offset > 0;
    opts.offset = sh->offset;
    g_assert_true(save_into(s.uri, in, len, &opts, &stats, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(stats.bytes, ==, len);

    g_assert_true(restore_from(s.uri, len, &opts, &stats, back, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(back->len, ==, len);
    g_assert_true(memcmp(back->data, in, len) == 0);
    server_stop(&s);
}

/* A save into @args's export that must fail with @code and @text. */
static void
assert_save_refused(const char *const *args, gsize len, int code, const char *text)
{
    g_autofree char *in = engt_random(len, 22);
    g_autoptr(GError) error = NULL;
    IohCopyOptions opts;
    IohStats stats;
    Server s = { 0 };

    if (!server_start(&s, args, &opts)) {
        return;
    }
    g_assert_false(save_into(s.uri, in, len, &opts, &stats, &error));
    g_assert_error(error, IOH_ERROR, code);
    ioht_assert_contains(error->message, text);
    ioht_assert_contains(error->message, "nbd+unix:///?socket=");
    server_stop(&s);
}

static void
test_too_small(void)
{
    static const char *const args[] = { "memory", "size=1M", NULL };

    assert_save_refused(args, 2 * MiB, ENOSPC, "the stream needs more");
}

static void
test_read_only(void)
{
    static const char *const args[] = { "-r", "memory", "size=4M", NULL };

    assert_save_refused(args, MiB, EROFS, "read-only");
}

/* A restore asking more than the export holds gets what it holds, or fails: never more. */
static void
test_restore_past_end(void)
{
    static const char *const args[] = { "memory", "size=1M", NULL };
    g_autoptr(GByteArray) back = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    IohCopyOptions opts;
    IohStats stats;
    Server s = { 0 };

    if (!server_start(&s, args, &opts)) {
        return;
    }
    g_assert_false(restore_from(s.uri, 2 * MiB, &opts, &stats, back, &error));
    g_assert_nonnull(error);
    g_assert_cmpuint(back->len, <=, MiB);
    server_stop(&s);
}

int
main(int argc, char **argv)
{
    static const Shape plain = { 0, 0, 0 }, one = { 1, 64 * 1024, 4096 },
                       several = { 4, 4096, 1 << 20 };

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_test_add_data_func("/nbd-ends/roundtrip/defaults", &plain, test_roundtrip);
    g_test_add_data_func("/nbd-ends/roundtrip/one-connection-offset", &one, test_roundtrip);
    g_test_add_data_func("/nbd-ends/roundtrip/four-connections-small-requests", &several,
                         test_roundtrip);
    g_test_add_func("/nbd-ends/refused/too-small", test_too_small);
    g_test_add_func("/nbd-ends/refused/read-only", test_read_only);
    g_test_add_func("/nbd-ends/restore-past-end", test_restore_past_end);
    return g_test_run();
}
