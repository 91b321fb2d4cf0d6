/* test-libwrap-nbd.c - ioh_wrap_new_uri() against a real nbdkit on a unix socket
 *
 * Each case starts its own nbdkit (memory plugin) in a fresh directory; skipped with the
 * reason when nbdkit is not installed (CI installs it).
 */
#include "config.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ioh-test.h"
#include "iohwrap.h"

typedef struct {
    char *dir;
    char *sock;
    char *uri;
    GPid pid;
} Server;

/* nbdkit --unix DIR/s.sock memory SIZE: it goes to the background once it serves. */
static gboolean
server_start(Server *s, const char *size)
{
    const char *plugin[] = { "memory", size, NULL };

    s->dir = ioht_workdir();
    s->sock = g_build_filename(s->dir, "s.sock", NULL);
    s->uri = g_strdup_printf("nbd+unix:///?socket=%s", s->sock);
    s->pid = ioht_nbdkit_start(s->dir, s->sock, plugin);
    return s->pid != 0;
}

static void
server_stop(Server *s)
{
    if (s->pid) {   /* a daemon, not our child: no waitpid */
        kill(s->pid, SIGKILL);
    }
    if (s->dir) {
        ioht_workdir_remove(s->dir);
    }
    g_free(s->dir);
    g_free(s->sock);
    g_free(s->uri);
}

/* A server of @size and a random source file of @len bytes in its directory: the
 * file's path, or NULL when the case is skipped (the server is stopped then). */
static char *
server_with_source(Server *s, const char *size, guint64 len, guint32 seed)
{
    char *src;

    if (!server_start(s, size)) {
        server_stop(s);
        return NULL;
    }
    src = g_build_filename(s->dir, "src", NULL);
    ioht_write_random_file(src, len, seed);
    return src;
}

/* Saves @src to @uri at @offset (checksum xxh3); the finish's result, *ret_sum. */
static gboolean
save(const char *uri, const char *src, guint64 offset, char **ret_sum, GError **error)
{
    IohWrapParams params = { .offset = offset, .progress_interval_ms = 10 };
    g_autoptr(IohWrapOptions) opts = ioh_wrap_options_new();
    g_autoptr(IohWrap) wrap = NULL;
    GStatBuf st;
    guint64 written = 0, synced = 0;
    gboolean ok;
    int fd = -1;

    g_assert_cmpint(g_stat(src, &st), ==, 0);
    g_assert_true(ioh_wrap_options_set_checksum(opts, "xxh3", NULL));
    wrap = ioh_wrap_new_uri(uri, TRUE, &fd, &params, opts, error);
    if (!wrap) {
        return FALSE;
    }
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_cmpint(fd, >=, 0);
    ioht_feed_file(src, fd);
    ok = ioh_wrap_finish(wrap, error);
    if (ok) {
        ioh_wrap_get_progress(wrap, &written, &synced);
        g_assert_cmpuint(written, ==, (guint64)st.st_size);
        *ret_sum = g_strdup(ioh_wrap_get_checksum(wrap));
    }
    return ok;
}

static void
test_roundtrip(void)
{
    Server s = { 0 };
    g_autoptr(GError) error = NULL;
    g_autofree char *sum = NULL, *src = NULL, *dst = NULL;
    IohWrapParams params = { .offset = 4096, .length = 3 * 1024 * 1024 + 1 };
    g_autoptr(IohWrapOptions) opts = ioh_wrap_options_new();
    g_autoptr(IohWrap) wrap = NULL;
    int fd = -1;

    src = server_with_source(&s, "16M", params.length, 13);
    if (!src) {
        return;
    }
    dst = g_build_filename(s.dir, "dst", NULL);
    g_assert_true(save(s.uri, src, 4096, &sum, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(strlen(sum), ==, 16);
    g_assert_true(ioh_wrap_options_set_verify_checksum(opts, sum, NULL));
    g_assert_true(ioh_wrap_options_set_connections(opts, 1, NULL));
    wrap = ioh_wrap_new_uri(s.uri, FALSE, &fd, &params, opts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(ioht_drain_to_file(fd, dst), ==, params.length);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(ioh_wrap_get_checksum(wrap), ==, sum);
    g_assert_true(ioht_files_equal(src, dst));
    server_stop(&s);
}

/* The URI's secrets are not on the helper's command line, which every local user reads
 * (ps, /proc/PID/cmdline): libwrap hands the URI over in the helper's environment
 * (env:IOHELPER_NBD_URI). A save and a restore, each checked while the helper runs. */
static void
test_uri_not_in_argv(void)
{
    Server s = { 0 };
    g_autoptr(GError) error = NULL;
    g_autofree char *src = server_with_source(&s, "16M", 1 << 20, 7);
    g_autofree char *uri = NULL, *dst = NULL;

    if (!src) {
        return;
    }
    /* libnbd takes the user information as the TLS user name and the PSK file only with
     * TLS: on this plain server they change nothing, and must be nowhere to be read */
    uri = g_strdup_printf("nbd+unix://alice:PASSWORD@/?socket=%s&tls-psk-file=/KEYFILE",
                          s.sock);
    dst = g_build_filename(s.dir, "dst", NULL);
    for (int save = 1; save >= 0; save--) {
        IohWrapParams params = { .length = save ? 0 : 1 << 20 };
        g_autoptr(IohWrap) wrap = NULL;
        g_autofree char *cmdline_path = NULL, *cmdline = NULL;
        gsize len;
        int fd = -1;

        wrap = ioh_wrap_new_uri(uri, save, &fd, &params, NULL, &error);
        g_assert_no_error(error);
        cmdline_path = g_strdup_printf("/proc/%d/cmdline", (int)ioh_wrap_get_pid(wrap));
        g_assert_true(g_file_get_contents(cmdline_path, &cmdline, &len, NULL));
        for (gsize i = 0; i + 1 < len; i++) {
            cmdline[i] = cmdline[i] ? cmdline[i] : ' ';
        }
        g_test_message("helper's command line: %s", cmdline);
        g_assert_null(strstr(cmdline, "PASSWORD"));
        g_assert_null(strstr(cmdline, "KEYFILE"));
        g_assert_null(strstr(cmdline, "alice"));
        if (save) {
            ioht_feed_file(src, fd);
        } else {
            g_assert_cmpuint(ioht_drain_to_file(fd, dst), ==, 1 << 20);
        }
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
    }
    g_assert_true(ioht_files_equal(src, dst));
    server_stop(&s);
}

/* ioh_wrap_options_set_stall_timeout(): the helper's range, and only for a URI. */
static void
test_stall_timeout_option(void)
{
    g_autoptr(IohWrapOptions) opts = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

    g_assert_false(ioh_wrap_options_set_stall_timeout(opts, 86401, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_stall_timeout(NULL, 3, &error));
    g_clear_error(&error);
    g_assert_true(ioh_wrap_options_set_stall_timeout(opts, 86400, &error));
    g_assert_true(ioh_wrap_options_set_stall_timeout(opts, 3, &error));
    g_assert_null(ioh_wrap_new_with_options(&fd, "/dev/null", 0, NULL, opts, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    ioht_assert_contains(error->message, "a stall timeout applies to an NBD URI");
    close(fd);
}

typedef struct {
    GMainLoop *loop;
    IohWrap *wrap;
    guint calls;
    guint64 last;
    gboolean ok;
    GError *error;
} Async;

static void
on_progress(guint64 written, guint64 synced, gpointer data)
{
    Async *a = data;

    g_assert_cmpuint(synced, <=, written);
    g_assert_cmpuint(written, >=, a->last);   /* never decreasing */
    a->last = written;
    a->calls++;
}

static void
on_finished(GObject *source, GAsyncResult *result, gpointer data)
{
    Async *a = data;

    g_assert_null(source);
    a->ok = ioh_wrap_finish_finish(a->wrap, result, &a->error);
    g_main_loop_quit(a->loop);
}

/* Progress in a GMainLoop with an async finish, as a daemon runs it: the callbacks
 * reach the stream's size, the finish says success. */
static void
test_progress_async(void)
{
    Server s = { 0 };
    Async a = { 0 };
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(IohWrap) wrap = NULL;
    g_autofree char *src = NULL;
    int fd = -1;

    src = server_with_source(&s, "64M", 32 * 1024 * 1024 + 7, 9);
    if (!src) {
        return;
    }
    wrap = ioh_wrap_new_uri(s.uri, TRUE, &fd, &params, NULL, NULL);
    g_assert_nonnull(wrap);
    ioh_wrap_set_progress_func(wrap, on_progress, &a, NULL);
    ioht_pump_join(ioht_feed_start(fd, &(IohtPumpOpts){ .path = src, .keep_open = TRUE }),
                   NULL);
    a.loop = g_main_loop_new(NULL, FALSE);
    a.wrap = wrap;
    ioh_wrap_finish_async(wrap, NULL, on_finished, &a);
    g_main_loop_run(a.loop);
    g_assert_no_error(a.error);
    g_assert_true(a.ok);
    g_test_message("%u progress callbacks", a.calls);
    g_assert_cmpuint(a.calls, >=, 1);
    g_assert_cmpuint(a.last, ==, 32 * 1024 * 1024 + 7);
    g_main_loop_unref(a.loop);
    server_stop(&s);
}

static void
test_too_small(void)
{
    Server s = { 0 };
    g_autoptr(GError) error = NULL;
    g_autofree char *sum = NULL, *src = NULL, *want = NULL;

    src = server_with_source(&s, "1M", 2 * 1024 * 1024, 5);
    if (!src) {
        return;
    }
    g_assert_false(save(s.uri, src, 0, &sum, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    want = g_strdup_printf("export %s is 1048576 bytes, the stream needs more", s.uri);
    g_assert_nonnull(strstr(error->message, want));
    server_stop(&s);
}

/* No server, and a URI holding a secret in its query: the error names neither. */
static void
test_no_server(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = ioht_workdir();
    g_autofree char *src = g_build_filename(dir, "src", NULL);
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s/none.sock"
                                           "&tls-psk-file=/SECRET", dir);
    g_autofree char *sum = NULL;
    g_autofree char *want = g_strdup_printf("connect nbd+unix:///?socket=%s/none.sock: "
                                            "connect: No such file or directory", dir);

    ioht_write_random_file(src, 65536, 1);
    g_assert_false(save(uri, src, 0, &sum, &error));
    /* the helper's line, naming the export by its socket only */
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_assert_cmpstr(error->message, ==, want);
    ioht_workdir_remove(dir);
}

/* The server killed mid-save: a failure, never a success. */
static void
test_killed(void)
{
    Server s = { 0 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    g_autofree char *src = NULL;
    int fd = -1;

    src = server_with_source(&s, "256M", 64 * 1024 * 1024, 3);
    if (!src) {
        return;
    }
    wrap = ioh_wrap_new_uri(s.uri, TRUE, &fd, NULL, NULL, &error);
    g_assert_no_error(error);
    IohtPump *p = ioht_feed_start(fd, &(IohtPumpOpts){ .path = src,
                                                      .stall_at = 8 * 1024 * 1024,
                                                      .stall_ms = 300, .keep_open = TRUE });
    g_usleep(150000);
    kill(s.pid, SIGKILL);
    ioht_pump_join(p, NULL);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, s.sock));
    server_stop(&s);
}

static void
test_refuses(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrapOptions) opts = ioh_wrap_options_new();
    int fd = 77;

    g_assert_null(ioh_wrap_new_uri("/tmp/x.save", TRUE, &fd, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "not an NBD URI"));
    g_clear_error(&error);
    g_assert_null(ioh_wrap_new_uri("nbd://localhost/x", FALSE, &fd, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "needs params->length"));
    g_clear_error(&error);
    g_assert_null(ioh_wrap_new_uri("nbd://localhost/x", TRUE, NULL, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_connections(opts, 17, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_true(ioh_wrap_options_set_verify_checksum(opts, "0123456789abcdef", NULL));
    g_assert_null(ioh_wrap_new_uri("nbd://localhost/x", TRUE, &fd, NULL, opts, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_cmpint(fd, ==, 77);
    g_clear_error(&error);
    /* connections on a file wrap: the helper would refuse them, so does the library */
    g_assert_true(ioh_wrap_options_set_verify_checksum(opts, NULL, NULL));
    g_assert_true(ioh_wrap_options_set_connections(opts, 2, NULL));
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    g_assert_null(ioh_wrap_new_with_options(&fd, NULL, IOH_WRAP_POLLABLE, NULL, opts,
                                            &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "connections apply to an NBD URI"));
    close(fd);
}

/* The options that do not fit the direction are refused by ioh_wrap_new_uri() as by
 * ioh_wrap_new_with_options() (one check, iohw_options_check()): before any helper is
 * spawned or any server asked, the fd untouched. */
static void
test_refuses_options(void)
{
    static const struct {
        gboolean save, compress, decompress;
        guint threads;
        const char *why;
    } cases[] = {
        { FALSE, TRUE, FALSE, 0, "compress is for a save" },
        { TRUE, FALSE, TRUE, 0, "decompress is for a restore" },
        { TRUE, FALSE, FALSE, 2, "threads are compression threads" },
        { FALSE, FALSE, TRUE, 2, "threads are compression threads" },
    };
    IohWrapParams params = { .length = 4096 };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(IohWrapOptions) opts = ioh_wrap_options_new();
        g_autoptr(GError) error = NULL;
        int fd = 77;

        g_assert_true(ioh_wrap_options_set_compress(opts, cases[i].compress ? "zstd" : NULL,
                                                    NULL));
        g_assert_true(ioh_wrap_options_set_decompress(opts, cases[i].decompress, NULL));
        g_assert_true(ioh_wrap_options_set_threads(opts, cases[i].threads, NULL));
        g_assert_null(ioh_wrap_new_uri("nbd+unix:///x?socket=/nonexistent/s", cases[i].save,
                                       &fd, &params, opts, &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_test_message("%s", error->message);
        ioht_assert_contains(error->message, "ioh_wrap_new_uri: ");
        ioht_assert_contains(error->message, cases[i].why);
        g_assert_cmpint(fd, ==, 77);
    }
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/libwrap/nbd/refuses", test_refuses);
    g_test_add_func("/libwrap/nbd/refuses-options", test_refuses_options);
    g_test_add_func("/libwrap/nbd/roundtrip", test_roundtrip);
    g_test_add_func("/libwrap/nbd/uri-not-in-argv", test_uri_not_in_argv);
    g_test_add_func("/libwrap/nbd/stall-timeout-option", test_stall_timeout_option);
    g_test_add_func("/libwrap/nbd/progress-async", test_progress_async);
    g_test_add_func("/libwrap/nbd/too-small", test_too_small);
    g_test_add_func("/libwrap/nbd/no-server", test_no_server);
    g_test_add_func("/libwrap/nbd/killed-server", test_killed);
    return g_test_run();
}
