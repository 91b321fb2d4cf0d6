/* test-iohelper-error.c - the iohelper binary, end to end (real pipes, real files on ext4,
 * O_DIRECT): every error a user can hit, the writer lock (/helper/error/...,
 * /helper/lock/...)
 */
#include "iohelper-util.h"

static void
test_error_missing(void)
{
    g_autofree char *missing = wpath("no-such-file");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, missing, "-");
    g_autofree char *err = NULL;

    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), ==, 1);
    assert_one_line(err, "open ");
    g_assert_nonnull(strstr(err, missing));
    g_assert_nonnull(strstr(err, "No such file or directory"));
}

static void
test_error_directory(void)
{
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, "-", workdir);
    g_autofree char *err = NULL;

    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), ==, 1);
    assert_one_line(err, workdir);
    g_assert_nonnull(strstr(err, "Is a directory"));
}

/* A file its user may not read: as root, the helper runs as nobody on root's 0600 file,
 * both in a folder nobody can enter (the tree may not be: a build under /root). */
static void
test_error_permission(void)
{
    g_auto(IohtNobody) nb = { 0 };
    g_autofree char *img = NULL;
    g_autofree char *err = NULL;
    g_auto(GStrv) argv = NULL;
    int status;

    if (geteuid() == 0) {
        /* root passes permission checks: run the helper as nobody */
        if (!ioht_nobody_setup(&nb)) {
            return;
        }
        img = g_build_filename(nb.dir, "perm-img", NULL);
        argv = helper_argv(nb.helper, NULL, img, "-");
        g_assert_true(g_file_set_contents(img, "secret", 6, NULL));
        g_assert_cmpint(chmod(img, 0600), ==, 0);
        IohtSpawn nobody = { .argv = (const char *const *)argv, .in_fd = -1, .out_fd = -1,
                             .setup = ioht_drop_to_nobody };
        status = ioht_spawn_wait(&nobody, &err);
    } else {
        img = wpath("perm-img");
        argv = helper_argv(ioht_helper_path(), NULL, img, "-");
        g_assert_true(g_file_set_contents(img, "secret", 6, NULL));
        g_assert_cmpint(chmod(img, 0), ==, 0);
        status = ioht_run(argv, -1, -1, &err);
    }
    g_assert_cmpint(ioht_exit_code(status), ==, 1);
    assert_one_line(err, "Permission denied");
    g_assert_nonnull(strstr(err, img));
    g_unlink(img);
}

/* ramfs has no O_DIRECT: --direct says so at open, before reading the stream. */
static void
test_error_direct_refused(void)
{
    g_autofree char *mnt = mount_scratch("ramfs", NULL);
    g_autofree char *src = wpath("dr-src");
    g_autofree char *img = NULL;
    g_autofree char *err = NULL;

    if (!mnt) {
        return;
    }
    img = g_build_filename(mnt, "img", NULL);
    ioht_write_random_file(src, 100000, 3);
    {
        const char *opts[] = { "--direct", NULL };
        g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
        g_assert_cmpint(run_fed(argv, src, -1, &err), ==, 1);
    }
    unmount_scratch(mnt);
    assert_one_line(err, "O_DIRECT");
    /* the one message of the three parts (helper/core/ioh-dio.h) */
    g_assert_nonnull(strstr(err, "its file system refuses O_DIRECT"));
    g_assert_nonnull(strstr(err, img));
    g_unlink(src);
}

/* A full file system mid-copy: ENOSPC named, exit 1, never success. */
static void
test_error_enospc(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *mnt = mount_scratch("tmpfs", "size=2m");
    g_autofree char *src = wpath("ns-src");
    g_autofree char *img = NULL;
    g_autofree char *err = NULL;
    const char *opts[] = { mode, NULL };

    if (!mnt) {
        return;
    }
    img = g_build_filename(mnt, "img", NULL);
    ioht_write_random_file(src, 5 * MiB, 4);
    {
        g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
        g_assert_cmpint(run_fed(argv, src, -1, &err), ==, 1);
    }
    unmount_scratch(mnt);
    g_assert_nonnull(err);
    if (strstr(err, "O_DIRECT")) {
        g_test_skip("this kernel's tmpfs refuses O_DIRECT");
        return;
    }
    assert_one_line(err, "No space left on device");
    g_assert_nonnull(strstr(err, img));
    g_unlink(src);
}

/* Past RLIMIT_FSIZE: EFBIG, not death by SIGXFSZ. */
static void
test_error_efbig(void)
{
    g_autofree char *src = wpath("fb-src");
    g_autofree char *img = wpath("fb-img");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, src, img);
    g_autofree char *err = NULL;
    int status;

    ioht_write_random_file(src, 3 * MiB, 9);
    IohtSpawn limited = { .argv = (const char *const *)argv, .in_fd = -1, .out_fd = -1,
                          .fsize_limit = 1 * MiB };

    status = ioht_spawn_wait(&limited, &err);
    g_assert_cmpint(ioht_exit_code(status), ==, 1);
    assert_one_line(err, "File too large");
    g_unlink(src);
    g_unlink(img);
}

/* The reader goes away: EPIPE named, exit 1 (SIGPIPE must not kill it silently). */
static void
test_error_epipe(void)
{
    g_autofree char *src = wpath("ep-src");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, src, "-");
    g_autofree char *err = NULL;
    int p[2];

    ioht_write_random_file(src, 8 * MiB, 10);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    close(p[0]);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, p[1], &err)), ==, 1);
    close(p[1]);
    assert_one_line(err, "write stdout: Broken pipe");
    g_unlink(src);
}

/* Usage errors: exit 2, one line. */
static void
test_usage_errors(void)
{
    const char *cases[][4] = {
        { NULL },
        { "-", NULL },
        { "--frobnicate", "-", "-", NULL },
        { "--direct", "--fadvise", "-", NULL },
        { "--pipe-size=-1", "-", "-", NULL },
        { "--buffer-size=lots", "-", "-", NULL },
        { "--stats=xml", "-", "-", NULL },
        { "--ring=0", "-", "-", NULL },
        { "a", "b", "c", NULL },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) v = g_ptr_array_new();
        g_autofree char *err = NULL;

        g_ptr_array_add(v, (gpointer)ioht_helper_path());
        for (int k = 0; k < 4 && cases[i][k]; k++) {
            g_ptr_array_add(v, (gpointer)cases[i][k]);
        }
        g_ptr_array_add(v, NULL);
        g_assert_cmpint(ioht_exit_code(ioht_run((char **)v->pdata, -1, -1, &err)), ==, 2);
        assert_one_line(err, "iohelper: ");
    }
}

/* --threads are zstd's compression threads: refused without --compress (exit 2, one
 * line), as qemu-iohelper and libwrap refuse them, before OUT is made. */
static void
test_threads_without_compress(void)
{
    g_autofree char *img = wpath("thr-img");
    const char *const sets[][3] = { { "--threads=2", NULL }, { "--threads=2", "--decompress" } };

    for (gsize i = 0; i < G_N_ELEMENTS(sets); i++) {
        g_auto(GStrv) argv = helper_argv(ioht_helper_path(), sets[i], "-", img);
        g_autofree char *err = NULL;

        g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), ==, 2);
        assert_one_line(err, "--threads needs --compress");
        g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    }
}

/* The lines of the status file @path, parsed: each a JSON object. */
static GPtrArray *
status_lines(const char *path)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GPtrArray *objs = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(g_strstrip(text), "\n", -1);
    for (guint i = 0; lines[i] && *lines[i]; i++) {
        g_autoptr(JsonParser) parser = json_parser_new();

        g_assert_true(json_parser_load_from_data(parser, lines[i], -1, NULL));
        g_ptr_array_add(objs, json_object_ref(json_node_get_object(json_parser_get_root(parser))));
    }
    return objs;
}

/* A typo in the config file (memory-budget=64MB) is a usage error naming the file and the
 * cause, on stderr and as the one line on the status fd (operation "config", the file as
 * path), before anything is opened: a caller learns it from the protocol. */
static void
test_config_typo(void)
{
    g_autofree char *conf = wpath("typo.conf");
    g_autofree char *img = wpath("typo-img");
    g_autofree char *status = wpath("typo-status");
    g_autofree char *err = NULL;
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "IOHELPER_CONF", conf, TRUE);
    g_autoptr(GPtrArray) lines = NULL;
    const char *args[] = { "--status-fd=3", "-", img, NULL };
    int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    IohtSpawn s = { .args = args, .env = (const char *const *)env, .in_fd = -1, .out_fd = -1,
                    .extra_fds = &fd, .extra_targets = (const int[]){ 3 }, .n_extra = 1 };
    JsonObject *o;

    g_assert_cmpint(fd, >=, 0);
    g_assert_true(g_file_set_contents(conf, "[iohelper]\nmemory-budget=64MB\n", -1, NULL));
    g_assert_cmpint(ioht_exit_code(ioht_spawn_wait(&s, &err)), ==, 2);
    close(fd);
    assert_one_line(err, conf);
    ioht_assert_contains(err, "64MB");
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    lines = status_lines(status);
    g_assert_cmpuint(lines->len, ==, 1);
    o = g_ptr_array_index(lines, 0);
    g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "error");
    g_assert_cmpstr(json_object_get_string_member(o, "operation"), ==, "config");
    g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, conf);
    ioht_assert_contains(json_object_get_string_member(o, "message"), conf);
    ioht_assert_contains(json_object_get_string_member(o, "message"), "64MB");
    g_unlink(conf);
    g_unlink(status);
}

/* A C1 control (U+009B, CSI: the terminal takes it as ESC [) in a path is shown as '?',
 * as C0 controls are and as qemu-iohelper shows it: one rule (ioh-escape.h). */
static void
test_error_c1_control(void)
{
    g_autofree char *missing = wpath("c1-\xc2\x9b" "2Jgone");
    g_autofree char *shown = wpath("c1-?2Jgone");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, missing, "-");
    g_autofree char *err = NULL;

    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), ==, 1);
    assert_one_line(err, shown);
    g_assert_null(strstr(err, "\xc2\x9b"));
}

/* A second writer of the same image is refused while the first holds it. */
static void
test_second_writer_refused(void)
{
    g_autofree char *img = wpath("lk-img");
    g_auto(GStrv) first = helper_argv(ioht_helper_path(), NULL, "-", img);
    g_auto(GStrv) second = helper_argv(ioht_helper_path(), NULL, "-", img);
    g_autofree char *err = NULL;
    int p[2];
    GPid pid;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    pid = spawn_helper(first, p[0], -1);
    close(p[0]);
    g_assert_cmpint(write(p[1], "abc", 3), ==, 3);
    /* wait until the first helper holds its lock: it has created the file */
    for (int i = 0; i < 200 && !g_file_test(img, G_FILE_TEST_EXISTS); i++) {
        g_usleep(10000);
    }
    g_usleep(100000);
    g_assert_cmpint(ioht_exit_code(ioht_run(second, -1, -1, &err)), ==, 1);
    close(p[1]);
    g_assert_cmpint(ioht_wait_exit_code(pid), ==, 0);
    assert_one_line(err, "in use by another iohelper");
    g_unlink(img);
}

/* A save refused before its first byte (here: an unaligned O_DIRECT offset, or IN and OUT
 * the same file) leaves the existing image as it was. */
static void
test_refused_save_keeps_image(void)
{
    g_autofree char *src = wpath("rk-src");
    g_autofree char *img = wpath("rk-img");
    g_autofree char *copy = wpath("rk-copy");
    const char *opts[] = { "--direct", "--offset=100", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_auto(GStrv) self = helper_argv(ioht_helper_path(), NULL, img, img);
    g_autofree char *err = NULL;
    g_autofree char *err2 = NULL;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(img, 3 * MiB + 5, 18);
    ioht_write_random_file(copy, 3 * MiB + 5, 18);
    ioht_write_random_file(src, 8192, 19);
    g_assert_cmpint(run_fed(argv, src, -1, &err), ==, 1);
    g_assert_true(ioht_files_equal(img, copy));
    g_assert_cmpint(ioht_exit_code(ioht_run(self, -1, -1, &err2)), ==, 2);
    assert_one_line(err2, "are the same file");
    g_assert_true(ioht_files_equal(img, copy));
    g_unlink(src);
    g_unlink(img);
    g_unlink(copy);
}

/* A socket source that stays open and silent must not keep a failed save from ending:
 * the writer's error wakes the reader. */
static void
test_silent_socket_source(void)
{
    g_autofree char *img = wpath("ss-img");
    const char *opts[] = { "--direct", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *chunk = g_malloc0(MiB);
    int sv[2], st;
    GPid pid;

    if (skip_unless_direct()) {
        return;
    }
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    {
        IohtSpawn sp = { .argv = (const char *const *)argv, .in_fd = sv[0], .out_fd = -1,
                         .err_fd = STDERR_FILENO, .fsize_limit = 8 * MiB };
        pid = ioht_spawn(&sp).pid;
    }
    close(sv[0]);
    /* more than the file may hold, then silence with the socket still open: the writer
     * fails while the reader waits in the socket for bytes that never come */
    for (int i = 0; i < 10; i++) {
        gsize n = i < 9 ? MiB : MiB / 2;
        if (write(sv[1], chunk, n) != (gssize)n) {
            break;
        }
    }
    if (!ioht_wait_timeout(pid, 10000, &st)) {
        g_error("the helper hangs on a silent socket after its write failed");
    }
    g_assert_cmpint(ioht_exit_code(st), ==, 1);
    close(sv[1]);
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    g_test_add_func("/helper/error/missing-file", test_error_missing);
    g_test_add_func("/helper/error/directory", test_error_directory);
    g_test_add_func("/helper/error/permission-denied", test_error_permission);
    g_test_add_func("/helper/error/direct-refused", test_error_direct_refused);
    g_test_add_data_func("/helper/error/enospc/buffered", "", test_error_enospc);
    g_test_add_data_func("/helper/error/enospc/fadvise", "--fadvise", test_error_enospc);
    g_test_add_data_func("/helper/error/enospc/direct", "--direct", test_error_enospc);
    g_test_add_func("/helper/error/efbig", test_error_efbig);
    g_test_add_func("/helper/error/epipe", test_error_epipe);
    g_test_add_func("/helper/error/usage", test_usage_errors);
    g_test_add_func("/helper/error/threads-without-compress", test_threads_without_compress);
    g_test_add_func("/helper/error/config-typo-on-status-fd", test_config_typo);
    g_test_add_func("/helper/error/c1-control-escaped", test_error_c1_control);
    g_test_add_func("/helper/lock/second-writer-refused", test_second_writer_refused);
    g_test_add_func("/helper/error/refused-save-keeps-image", test_refused_save_keeps_image);
    g_test_add_func("/helper/error/silent-socket-source", test_silent_socket_source);
    return iohelper_test_run();
}
