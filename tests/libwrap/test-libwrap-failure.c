/* test-libwrap-failure.c - libwrap against the real iohelper binary, through the public
 * API only: the helper's failures (/libwrap/failure/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* ---- failures -------------------------------------------------------------------- */

static gboolean
run_cmd(const char *cmd, char **ret_err)
{
    g_auto(GStrv) argv = NULL;
    int status = -1;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, ret_err,
                      &status, NULL)) {
        return FALSE;
    }
    return g_spawn_check_wait_status(status, NULL);
}

static void
test_fail_enospc(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *mnt = tpath(dir, "small");
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = NULL;
    g_autofree char *cmd = NULL;
    g_autofree char *err = NULL;
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd;

    if (geteuid() != 0) {
        g_test_skip("mounting a 1 MiB tmpfs needs root");
        return;
    }
    g_assert_cmpint(g_mkdir(mnt, 0700), ==, 0);
    /* In a mount namespace of this test process's own when the kernel lets us: then a
     * failing assertion cannot leave the tmpfs mounted on the shared machine. */
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
        g_test_message("private mount namespace");
    }
    cmd = g_strdup_printf("mount -t tmpfs -o size=1m tmpfs '%s'", mnt);
    if (!run_cmd(cmd, &err)) {
        g_test_skip_printf("cannot mount a tmpfs here: %s", err ? g_strstrip(err) : "?");
        return;
    }
    path = tpath(mnt, "full.save");
    ioht_write_random_file(src, 3 * MIB, 3);
    fd = open_save(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    /* The helper dies after 1 MiB; what it had not read yet may still fit the pipe,
     * so the writer sees EPIPE or not: the finish tells. */
    ioht_feed_file(src, fd);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    want = g_strdup_printf("write %s: No space left on device", path);
    g_assert_cmpstr(error->message, ==, want);
    /* From the helper's final error line, not from its stderr. */
    g_assert_cmpint(ioh_error_get_errno(error), ==, ENOSPC);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "write");
    g_assert_cmpstr(ioh_error_get_path(error), ==, path);
    /* Idempotent: the same failure again. */
    g_clear_error(&error);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_cmpstr(error->message, ==, want);
    g_clear_pointer(&wrap, ioh_wrap_free);

    g_free(cmd);
    cmd = g_strdup_printf("umount '%s'", mnt);
    g_assert_true(run_cmd(cmd, NULL));
}

/* Restores @dir/@name (1 MiB) through a pipe with a length of 2 MiB: a stream that ends
 * early, which only the copy can find (a file shorter than offset + length is refused by
 * ioh_wrap_new() already). Returns the finish's error. */
static GError *
short_restore_error(const char *dir, const char *name)
{
    g_autofree char *src = tpath(dir, name);
    g_autofree char *back = tpath(dir, "back");
    g_autoptr(IohWrap) wrap = NULL;
    GError *error = NULL;
    IohWrapParams params = { .length = 2 * MIB };
    IohtPumpOpts feed = { .path = src };
    IohtPump *feeder;
    int p[2];
    int fd;

    ioht_write_random_file(src, MIB, 4);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    fd = p[0];
    wrap = ioh_wrap_new(&fd, src, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    feeder = ioht_feed_start(p[1], &feed);
    g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, MIB);
    ioht_pump_join(feeder, NULL);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    return error;
}

static void
test_fail_short_restore(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autoptr(GError) error = short_restore_error(dir, "short.save");
    g_autofree char *src = tpath(dir, "short.save");

    g_assert_true(g_str_has_prefix(error->message, "read "));
    g_assert_nonnull(strstr(error->message, "stream ended after 1048576 of 2097152 bytes"));
    g_assert_null(strstr(error->message, "iohelper:"));
    g_assert_cmpint(ioh_error_get_errno(error), ==, EIO);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "read");
    g_assert_cmpstr(ioh_error_get_path(error), ==, src);
}

/* A helper that says a lot before its last line (40 KB: many reads, short of the 64 KiB
 * the stderr pipe holds while nobody reads it): the whole stderr is read, and the last
 * "iohelper:" line is the message. */
static void
test_fail_long_stderr(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *wrapper = NULL;
    g_autofree char *script = NULL;
    g_autofree char *path = tpath(dir, "chatty.save");
    g_autofree char *back = tpath(dir, "back");
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .length = 8192 };
    int p[2];
    int fd;

    script = g_strdup_printf("#!/bin/sh\n"
                             "i=0; while [ $i -lt 700 ]; do\n"
                             "  echo \"warning: line $i of chatter, padded to be long enough\" >&2\n"
                             "  i=$((i + 1)); done\n"
                             "echo 'iohelper: an earlier line that is not the last' >&2\n"
                             "exec '%s' \"$@\"\n", saved_env);
    wrapper = fake_helper(dir, "chatty-iohelper", script);
    /* A stream short of its length, through a pipe (a short file is refused by new). */
    ioht_write_random_file(path, 4096, 14);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_true(ioht_feed_file(path, p[1]));
    close(p[1]);
    fd = p[0];
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, 4096);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    g_assert_true(g_str_has_prefix(error->message, "read "));
    g_assert_nonnull(strstr(error->message, "stream ended after 4096 of 8192 bytes"));
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
}

/* A path holding '"', a newline and control characters, through the status fd: the
 * GError's path field is the path byte for byte, its message one line ('?' for the
 * control characters, as the helper prints it on stderr). */
static void
test_fail_odd_path(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *name = "od\"d\npa\x01th\x1b";
    const char *dir = fx->dir;
    g_autoptr(GError) error = short_restore_error(dir, name);
    g_autofree char *src = tpath(dir, name);
    g_autofree char *shown = g_strdelimit(g_strdup(src), "\n\x01\x1b", '?');
    g_autofree char *want = g_strdup_printf("read %s: stream ended after 1048576 of "
                                            "2097152 bytes", shown);

    g_assert_cmpstr(ioh_error_get_path(error), ==, src);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "read");
    g_assert_cmpint(ioh_error_get_errno(error), ==, EIO);
    g_assert_cmpstr(error->message, ==, want);
}

/* A typo in the helper's config file (memory-budget=64MB) fails ioh_wrap_new() itself,
 * with the helper's error line naming the file and the cause (not "exited with status 2
 * without a final status line" at the finish, once QEMU had the pipe): the fd is the
 * caller's still, untouched, for a file and for a URI alike. */
static void
test_fail_config_typo(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *conf = tpath(fx->dir, "typo.conf");
    g_autofree char *path = tpath(fx->dir, "typo.save");
    g_autofree char *uri = g_strdup_printf("nbd+unix:///x?socket=%s/none.sock", fx->dir);
    g_autofree char *saved_conf = g_strdup(g_getenv("IOHELPER_CONF"));
    g_autoptr(GError) error = NULL;
    int fd = open_save(path), orig = fd, ufd = -1;

    g_assert_true(g_file_set_contents(conf, "[iohelper]\nmemory-budget=64MB\n", -1, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    g_assert_null(ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    ioht_assert_contains(error->message, conf);
    ioht_assert_contains(error->message, "64MB");
    g_assert_cmpstr(ioh_error_get_path(error), ==, conf);
    g_assert_cmpstr(ioh_error_get_operation(error), ==, "config");
    g_assert_cmpint(fd, ==, orig);
    g_assert_cmpint(fcntl(fd, F_GETFL) & O_ACCMODE, ==, O_WRONLY);
    g_assert_cmpint(write(fd, "x", 1), ==, 1);    /* still the caller's file */
    g_assert_cmpint(lseek(fd, 0, SEEK_CUR), ==, 1);
    close(fd);
    g_clear_error(&error);
    g_assert_null(ioh_wrap_new_uri(uri, TRUE, &ufd, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    ioht_assert_contains(error->message, conf);
    g_assert_cmpint(ufd, ==, -1);
    if (saved_conf) {
        g_setenv("IOHELPER_CONF", saved_conf, TRUE);
    } else {
        g_unsetenv("IOHELPER_CONF");
    }
}

/* A helper that exits 1 without a final line: the error names the helper and its exit
 * status, whatever its stderr says (nobody parses it: a line that looks like the
 * helper's own is not taken for the cause). */
static void
test_fail_no_final_line(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autofree char *path = tpath(dir, "nofinal.save");
    g_autofree char *helper = fake_helper(dir, "fake-iohelper",
        "#!/bin/sh\n"
        "echo '{\"v\":1,\"minor\":0,\"type\":\"progress\",\"written\":4096,"
        "\"stored\":4096,\"synced\":0,\"seconds\":0.1,\"done\":false}' >&3\n"
        "cat >/dev/null\n"
        "echo \"iohelper: failure with $4: write $4: No space left on device\" >&2\n"
        "exit 1\n");
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    guint64 w = 0;
    int fd = open_save(path);

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
    g_assert_no_error(error);
    g_assert_cmpint(write(fd, "x", 1), ==, 1);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_FAILED);
    g_test_message("GError: %s", error->message);
    want = g_strdup_printf("helper %s for %s exited with status 1 without a final status "
                           "line", helper, path);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpint(ioh_error_get_errno(error), ==, 0);
    g_assert_null(ioh_error_get_path(error));
    /* Its progress line was read all the same. */
    ioh_wrap_get_progress(wrap, &w, NULL);
    g_assert_cmpuint(w, ==, 4096);
}

/* The helper killed mid-copy, after its progress lines and before its final line:
 * KILLED with the signal, and no error invented from anything else. */
static void
test_fail_killed(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "killed.save");
    g_autofree char *chunk = g_malloc0(MIB);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .progress_interval_ms = 10 };
    guint64 w = 0;
    int fd = open_save(path);

    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, &params, &error);
    g_assert_no_error(error);
    /* Mid-copy: some bytes are through the helper before it dies. */
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(write(fd, chunk, MIB), ==, MIB);
    }
    /* until a progress line says a MiB went through: the helper is mid-protocol */
    for (int i = 0; i < 500 && w < MIB; i++) {
        g_usleep(10000);
        ioh_wrap_get_progress(wrap, &w, NULL);
    }
    g_assert_cmpuint(w, >=, MIB);
    g_assert_cmpint(kill(ioh_wrap_get_pid(wrap), SIGKILL), ==, 0);
    while (write(fd, chunk, MIB) > 0) {
    }
    g_assert_cmpint(errno, ==, EPIPE);
    g_assert_false(ioh_wrap_finish(wrap, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_KILLED);
    g_assert_cmpstr(error->message, ==, "helper killed by signal 9");
    g_assert_cmpint(ioh_error_get_errno(error), ==, 0);
    ioh_wrap_get_progress(wrap, &w, NULL);
    g_test_message("progress at death: %" G_GUINT64_FORMAT, w);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/failure/enospc", NULL, test_fail_enospc);
    ioht_dir_add("/libwrap/failure/config-typo-at-new", NULL, test_fail_config_typo);
    ioht_dir_add("/libwrap/failure/short-restore", NULL, test_fail_short_restore);
    ioht_dir_add("/libwrap/failure/long-stderr", NULL, test_fail_long_stderr);
    ioht_dir_add("/libwrap/failure/killed", NULL, test_fail_killed);
    ioht_dir_add("/libwrap/failure/odd-path", NULL, test_fail_odd_path);
    ioht_dir_add("/libwrap/failure/no-final-line", NULL, test_fail_no_final_line);
    return g_test_run();
}
