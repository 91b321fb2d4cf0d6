/* test-iohelper.c - the iohelper binary, end to end: real pipes, real files on ext4,
 * O_DIRECT, the libvirt form side by side with the stock libvirt_iohelper, and every
 * error a user can hit. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pty.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ioh-protocol.h"
#include "ioh-test.h"

#define STOCK_HELPER "/usr/lib/libvirt/libvirt_iohelper"
#define MiB (1024 * 1024)

static char *workdir;
static gboolean have_direct;

/* ---- plumbing: a producer and a consumer on real pipes, like QEMU (tests/common) ---- */

static char **
helper_argv(const char *prog, const char *const *opts, const char *a, const char *b)
{
    GPtrArray *v = g_ptr_array_new();

    g_ptr_array_add(v, g_strdup(prog));
    for (; opts && *opts; opts++) {
        if (**opts) {    /* "" stands for "no option", e.g. the buffered mode */
            g_ptr_array_add(v, g_strdup(*opts));
        }
    }
    g_ptr_array_add(v, g_strdup(a));
    g_ptr_array_add(v, g_strdup(b));
    g_ptr_array_add(v, NULL);
    return (char **)g_ptr_array_free(v, FALSE);
}

/* Runs @argv with a producer feeding @src into its stdin through a pipe (write() of
 * 1 MiB, as QEMU does), and its stdout on @out_fd. Returns the exit code. */
static int
run_fed(char **argv, const char *src, int out_fd, char **ret_err)
{
    IohtPumpOpts o = { .path = src };
    IohtPump *feed;
    int p[2];
    int status;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    feed = ioht_feed_start(p[1], &o);
    status = ioht_run(argv, p[0], out_fd, ret_err);
    close(p[0]);
    ioht_pump_join(feed, NULL);
    return ioht_exit_code(status);
}

/* Runs @argv with its stdout on a pipe drained into @dst, stdin on @in_fd. */
static int
run_drained(char **argv, int in_fd, const char *dst, char **ret_err)
{
    IohtPumpOpts o = { .path = dst };
    IohtPump *drain;
    int p[2];
    int status;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    drain = ioht_drain_start(p[0], &o);
    status = ioht_run(argv, in_fd, p[1], ret_err);
    close(p[1]);
    ioht_pump_join(drain, NULL);
    return ioht_exit_code(status);
}

/* Starts @argv with @fd0 as its stdin and @fd2 (if >= 0; else this process's) as its
 * stderr, for tests that talk to the helper while it runs. */
static GPid
spawn_helper(char **argv, int fd0, int fd2)
{
    IohtSpawn s = { .argv = (const char *const *)argv, .in_fd = fd0, .out_fd = -1,
                    .err_fd = fd2 >= 0 ? fd2 : STDERR_FILENO };

    return ioht_spawn(&s).pid;
}

static char *
wpath(const char *name)
{
    return g_build_filename(workdir, name, NULL);
}

static guint64
file_size(const char *path)
{
    struct stat st;

    g_assert_cmpint(stat(path, &st), ==, 0);
    return (guint64)st.st_size;
}

static gboolean
skip_unless_direct(void)
{
    if (!have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return TRUE;
    }
    return FALSE;
}

static gboolean
skip_unless_root(void)
{
    if (geteuid() != 0) {
        g_test_skip("needs root (mount, loop devices)");
        return TRUE;
    }
    return FALSE;
}

/* ---- round trips ---- */

typedef struct {
    const char *mode;    /* "", "--direct", "--fadvise" */
    guint64 size;
} RoundTrip;

static void
test_roundtrip(gconstpointer data)
{
    const RoundTrip *rt = data;
    g_autofree char *src = wpath("rt-src");
    g_autofree char *img = wpath("rt-img");
    g_autofree char *back = wpath("rt-back");
    const char *opts[] = { rt->mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);
    g_auto(GStrv) restore = helper_argv(ioht_helper_path(), opts, img, "-");

    if (g_str_equal(rt->mode, "--direct") && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, rt->size, (guint32)rt->size);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_cmpuint(file_size(img), ==, rt->size);
    g_assert_true(ioht_files_equal(src, img));
    g_assert_cmpint(run_drained(restore, -1, back, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, back));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
}

/* A file-to-file copy works too. */
static void
test_file_to_file(void)
{
    g_autofree char *src = wpath("ff-src");
    g_autofree char *dst = wpath("ff-dst");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, src, dst);

    ioht_write_random_file(src, 3 * MiB + 7, 7);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, NULL)), ==, 0);
    g_assert_true(ioht_files_equal(src, dst));
    g_unlink(src);
    g_unlink(dst);
}

/* fd:N operands: the helper uses inherited fds. */
static void
test_fd_operands(void)
{
    g_autofree char *src = wpath("fd-src");
    g_autofree char *dst = wpath("fd-dst");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, "fd:0", "fd:1");
    int in, out;

    ioht_write_random_file(src, MiB + 1, 8);
    in = open(src, O_RDONLY | O_CLOEXEC);
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, in, out, NULL)), ==, 0);
    close(in);
    close(out);
    g_assert_true(ioht_files_equal(src, dst));
    g_unlink(src);
    g_unlink(dst);
}

/* --offset keeps what precedes the stream; --length delivers exactly that much, and a
 * stream shorter than --length is an error, never a short success. */
static void
test_offset_length(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = wpath("ol-src");
    g_autofree char *img = wpath("ol-img");
    g_autofree char *back = wpath("ol-back");
    g_autofree char *junk = wpath("ol-junk");
    const guint64 size = 5 * MiB + 333;
    const char *save_opts[] = { "--offset=4096", mode, NULL };
    const char *restore_opts[] = { "--offset=4096", "--length=5243213", mode, NULL };
    const char *too_much[] = { "--offset=4096", "--length=6M", mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), save_opts, "-", img);
    g_auto(GStrv) restore = helper_argv(ioht_helper_path(), restore_opts, img, "-");
    g_auto(GStrv) restore_long = helper_argv(ioht_helper_path(), too_much, img, "-");
    g_autofree char *head = g_strnfill(4096, 'H');
    g_autofree char *contents = NULL;
    g_autofree char *err = NULL;
    gsize len;
    int fd;

    if (g_str_equal(mode, "--direct") && skip_unless_direct()) {
        return;
    }
    g_assert_true(g_file_set_contents(img, head, 4096, NULL));
    ioht_write_random_file(src, size, 11);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_cmpuint(file_size(img), ==, 4096 + size);
    g_assert_true(g_file_get_contents(img, &contents, &len, NULL));
    g_assert_cmpmem(contents, 4096, head, 4096);

    /* Bytes after the stream must not reach the reader. */
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(write(fd, "TRAILING", 8), ==, 8);
    close(fd);
    g_assert_cmpint(run_drained(restore, -1, back, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, back));

    g_assert_cmpint(run_drained(restore_long, -1, junk, &err), ==, 1);
    g_assert_nonnull(strstr(err, "stream ended after"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
    g_unlink(junk);
}

/* ---- pipes ---- */

/* The helper raises the pipe it reads to 1 MiB (or the size asked), seen from our end. */
static void
test_pipe_size(gconstpointer data)
{
    const char *opt = data;
    guint want = *opt ? 256 * 1024 : MiB;
    g_autofree char *img = wpath("ps-img");
    const char *opts[] = { opt, NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *max_text = NULL;
    int p[2], size;
    GPid pid;

    g_assert_true(g_file_get_contents("/proc/sys/fs/pipe-max-size", &max_text, NULL, NULL));
    want = MIN(want, (guint)atoi(max_text));
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    g_assert_cmpint(fcntl(p[1], F_GETPIPE_SZ), ==, 65536);
    pid = spawn_helper(argv, p[0], -1);
    close(p[0]);
    /* Once the helper has read a first byte it has sized the pipe. */
    g_assert_cmpint(write(p[1], "x", 1), ==, 1);
    for (int i = 0; i < 200 && fcntl(p[1], F_GETPIPE_SZ) != (int)want; i++) {
        g_usleep(10000);
    }
    size = fcntl(p[1], F_GETPIPE_SZ);
    close(p[1]);
    g_assert_cmpint(ioht_wait_exit_code(pid), ==, 0);
    g_assert_cmpint(size, ==, (int)want);
    g_unlink(img);
}

/* ---- the libvirt form, side by side with the stock helper ---- */

static gboolean
skip_unless_stock(void)
{
    if (!g_file_test(STOCK_HELPER, G_FILE_TEST_IS_EXECUTABLE)) {
        g_test_skip(STOCK_HELPER " is missing (Debian package libvirt-daemon)");
        return TRUE;
    }
    return FALSE;
}

/* libvirt's save: without O_DIRECT it writes its own header, then hands the fd to the
 * helper, which appends the stream from the fd's position. With O_DIRECT it spawns the
 * helper on the empty file and sends its header through the pipe (libvirt 9.0's helper
 * refuses anything else: "O_DIRECT write needs empty seekable file"). */
static int
libvirt_save(const char *prog, const char *src, const char *img, gboolean direct,
             char **ret_err)
{
    g_auto(GStrv) argv = helper_argv(prog, NULL, img, "1");
    g_autofree char *head = g_strnfill(4096, 'L');
    int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc;

    g_assert_cmpint(fd, >=, 0);
    if (direct) {
        g_assert_cmpint(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT), ==, 0);
    } else {
        g_assert_cmpint(write(fd, head, 4096), ==, 4096);
    }
    rc = run_fed(argv, src, fd, ret_err);
    close(fd);
    return rc;
}

static int
libvirt_restore(const char *prog, const char *img, const char *back, gboolean direct,
                char **ret_err)
{
    g_auto(GStrv) argv = helper_argv(prog, NULL, img, "0");
    int fd = open(img, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    int rc;

    g_assert_cmpint(fd, >=, 0);
    if (!direct) {
        g_assert_cmpint(lseek(fd, 4096, SEEK_SET), ==, 4096);
    }
    rc = run_drained(argv, fd, back, ret_err);
    close(fd);
    return rc;
}

static void
test_libvirt_same_bytes(gconstpointer data)
{
    gboolean direct = GPOINTER_TO_INT(data);
    g_autofree char *src = wpath("lv-src");
    g_autofree char *ours = wpath("lv-ours");
    g_autofree char *stock = wpath("lv-stock");
    g_autofree char *ours_back = wpath("lv-ours-back");
    g_autofree char *stock_back = wpath("lv-stock-back");

    if (skip_unless_stock() || (direct && skip_unless_direct())) {
        return;
    }
    ioht_write_random_file(src, 9 * MiB + 4097, 21);
    g_assert_cmpint(libvirt_save(ioht_helper_path(), src, ours, direct, NULL), ==, 0);
    g_assert_cmpint(libvirt_save(STOCK_HELPER, src, stock, direct, NULL), ==, 0);
    g_assert_true(ioht_files_equal(ours, stock));
    g_assert_cmpuint(file_size(ours), ==, (direct ? 0 : 4096) + 9 * MiB + 4097);
    g_assert_cmpint(libvirt_restore(ioht_helper_path(), ours, ours_back, direct, NULL), ==, 0);
    g_assert_cmpint(libvirt_restore(STOCK_HELPER, stock, stock_back, direct, NULL), ==, 0);
    g_assert_true(ioht_files_equal(ours_back, stock_back));
    g_assert_true(ioht_files_equal(ours_back, src));
    g_unlink(src);
    g_unlink(ours);
    g_unlink(stock);
    g_unlink(ours_back);
    g_unlink(stock_back);
}

/* Both helpers refuse a read-write fd and a closed fd, with a non-zero exit and a
 * "failure with PATH" line. */
static void
test_libvirt_same_failures(void)
{
    const char *progs[] = { STOCK_HELPER, NULL };
    g_autofree char *img = wpath("lvf-img");
    int stock_rc[2], our_rc[2];

    if (skip_unless_stock()) {
        return;
    }
    progs[1] = ioht_helper_path();
    g_assert_true(g_file_set_contents(img, "data", 4, NULL));
    for (int i = 0; i < 2; i++) {
        g_auto(GStrv) rw = helper_argv(progs[i], NULL, img, "0");
        g_auto(GStrv) closed = helper_argv(progs[i], NULL, img, "7");
        g_autofree char *err1 = NULL;
        g_autofree char *err2 = NULL;
        int fd = open(img, O_RDWR | O_CLOEXEC);
        int *rc = i == 0 ? stock_rc : our_rc;

        rc[0] = ioht_exit_code(ioht_run(rw, fd, -1, &err1));
        close(fd);
        rc[1] = ioht_exit_code(ioht_run(closed, -1, -1, &err2));
        g_assert_nonnull(strstr(err1, "failure with"));
        g_assert_nonnull(strstr(err2, "failure with"));
        if (i == 1) {
            g_assert_true(g_str_has_prefix(err1, "iohelper: failure with "));
            g_assert_nonnull(strstr(err1, "read-write"));
            g_assert_cmpint(strchr(err1, '\n') - err1, ==, (int)strlen(err1) - 1);
        }
    }
    g_assert_cmpint(our_rc[0], ==, stock_rc[0]);
    g_assert_cmpint(our_rc[1], ==, stock_rc[1]);
    g_assert_cmpint(our_rc[0], ==, 1);
    g_unlink(img);
}

/* ---- page cache: --direct and --fadvise leave (almost) nothing behind ---- */

static void
test_cache_left(gconstpointer data)
{
    const char *mode = data;
    g_autofree char *src = wpath("pc-src");
    g_autofree char *img = wpath("pc-img");
    const char *opts[] = { mode, NULL };
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);
    guint64 size = 96 * MiB + 100, cached;

    if (g_str_equal(mode, "--direct") && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, size, 5);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, img));
    g_unlink(src);
    /* compare reads the image through the cache: measure a fresh save instead */
    g_unlink(img);
    ioht_write_random_file(src, size, 5);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    cached = ioht_cached_bytes(img);
    g_test_message("%s: %" G_GUINT64_FORMAT " KiB of %" G_GUINT64_FORMAT " KiB cached", mode,
                   cached / 1024, size / 1024);
    if (g_str_equal(mode, "--direct")) {
        g_assert_cmpuint(cached, <=, 64 * 1024);    /* only the buffered tail */
    } else {
        g_assert_cmpuint(cached, <=, 24 * MiB);
    }
    g_unlink(src);
    g_unlink(img);
}

/* ---- block devices: O_DIRECT with an unaligned tail, no padding written ---- */

static void
test_block_device(void)
{
    g_autofree char *backing = wpath("blk-backing");
    g_autofree char *src = wpath("blk-src");
    g_autofree char *back = wpath("blk-back");
    g_autofree char *dev = NULL;
    g_autofree char *out = NULL;
    g_autofree char *contents = NULL;
    const guint64 size = 3 * MiB + 1234;
    gsize len;
    int st;

    if (skip_unless_root()) {
        return;
    }
    ioht_write_random_file(src, size, 31);
    {
        int fd = open(backing, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(ftruncate(fd, 8 * MiB), ==, 0);
        close(fd);
    }
    {
        g_autofree char *cmd = g_strdup_printf("losetup --find --show %s", backing);
        if (!g_spawn_command_line_sync(cmd, &out, NULL, &st, NULL) || st != 0) {
            g_test_skip("losetup failed: no loop devices here");
            g_unlink(backing);
            g_unlink(src);
            return;
        }
        dev = g_strstrip(g_strdup(out));
    }
    {
        const char *opts[] = { "--direct", NULL };
        g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", dev);
        const char *ropts[] = { "--direct", "--length=3146962", NULL };
        g_auto(GStrv) restore = helper_argv(ioht_helper_path(), ropts, dev, "-");
        int rc1 = run_fed(save, src, -1, NULL);
        int rc2 = run_drained(restore, -1, back, NULL);
        g_autofree char *cmd = g_strdup_printf("losetup -d %s", dev);
        g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL);
        g_assert_cmpint(rc1, ==, 0);
        g_assert_cmpint(rc2, ==, 0);
    }
    g_assert_true(ioht_files_equal(src, back));
    /* The bytes past the stream stayed zero: the tail was not padded. */
    g_assert_true(g_file_get_contents(backing, &contents, &len, NULL));
    for (gsize i = size; i < size + 8192; i++) {
        g_assert_cmpint(contents[i], ==, 0);
    }
    g_unlink(backing);
    g_unlink(src);
    g_unlink(back);
}

/* ---- errors: one line naming the file and the cause, non-zero exit ---- */

static void
assert_one_line(const char *err, const char *needle)
{
    g_assert_nonnull(err);
    g_assert_true(g_str_has_prefix(err, "iohelper: "));
    g_assert_nonnull(strstr(err, needle));
    g_assert_nonnull(strchr(err, '\n'));
    g_assert_cmpint(strchr(err, '\n') - err, ==, (int)strlen(err) - 1);
}

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

/* Mounts a file system of @type on a new folder; returns it, or NULL after skipping. */
static char *
mount_scratch(const char *type, const char *opts)
{
    g_autofree char *dir = g_strdup_printf("%s/mnt-%s", workdir, type);

    if (skip_unless_root()) {
        return NULL;
    }
    g_mkdir_with_parents(dir, 0755);
    if (mount(type, dir, type, 0, opts) < 0) {
        g_autofree char *why = g_strdup_printf("cannot mount %s: %s", type, g_strerror(errno));
        g_test_skip(why);
        g_rmdir(dir);
        return NULL;
    }
    return g_steal_pointer(&dir);
}

static void
unmount_scratch(const char *dir)
{
    umount2(dir, MNT_DETACH);
    g_rmdir(dir);
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

static void
test_help_version(void)
{
    g_autofree char *out = NULL;
    const char *help[] = { ioht_helper_path(), "--help", NULL };
    const char *version[] = { ioht_helper_path(), "--version", NULL };

    g_assert_cmpint(ioht_run_output((char **)help, &out), ==, 0);
    g_assert_nonnull(strstr(out, "Usage: iohelper"));
    g_clear_pointer(&out, g_free);
    g_assert_cmpint(ioht_run_output((char **)version, &out), ==, 0);
    g_assert_true(g_str_has_prefix(out, "iohelper "));
}

/* --stats=json is one JSON object with the counters; --stats is one text line. */
static void
test_stats(void)
{
    g_autofree char *src = wpath("st-src");
    g_autofree char *img = wpath("st-img");
    const char *jopts[] = { "--stats=json", NULL };
    const char *topts[] = { "--stats", NULL };
    g_auto(GStrv) jargv = helper_argv(ioht_helper_path(), jopts, "-", img);
    g_auto(GStrv) targv = helper_argv(ioht_helper_path(), topts, "-", img);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree char *jerr = NULL;
    g_autofree char *terr = NULL;
    JsonObject *o;

    ioht_write_random_file(src, 2 * MiB + 5, 12);
    g_assert_cmpint(run_fed(jargv, src, -1, &jerr), ==, 0);
    g_assert_true(json_parser_load_from_data(parser, jerr, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, 2 * MiB + 5);
    g_assert_cmpint(json_object_get_int_member(o, "synced"), ==, 2 * MiB + 5);
    g_assert_cmpint(json_object_get_int_member(o, "writes"), >=, 3);
    g_assert_cmpint(json_object_get_int_member(o, "reads"), >=, 3);
    g_assert_true(json_object_has_member(o, "sync_seconds"));
    g_assert_cmpstr(json_object_get_string_member(o, "direction"), ==, "save");
    g_assert_cmpint(run_fed(targv, src, -1, &terr), ==, 0);
    assert_one_line(terr, "total: 2097157 bytes");
    g_unlink(src);
    g_unlink(img);
}

/* --status-fd: JSON progress lines, the last one done with every byte synced. */
static void
test_status_fd(void)
{
    g_autofree char *src = wpath("sf-src");
    g_autofree char *img = wpath("sf-img");
    g_autofree char *status = wpath("sf-status");
    const char *opts[] = { "--status-fd=1", "--status-interval=10", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    guint n;
    JsonObject *last;

    ioht_write_random_file(src, 32 * MiB, 13);
    g_assert_cmpint(run_fed(argv, src, fd, NULL), ==, 0);
    close(fd);
    g_assert_true(g_file_get_contents(status, &text, NULL, NULL));
    lines = g_strsplit(g_strstrip(text), "\n", -1);
    n = g_strv_length(lines);
    g_assert_cmpuint(n, >=, 2);
    /* the first line says the copy starts (libwrap waits for it) */
    g_assert_cmpstr(lines[0], ==, "{\"v\":1,\"minor\":2,\"type\":\"ready\"}");
    g_assert_true(json_parser_load_from_data(parser, lines[n - 1], -1, NULL));
    last = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpint(json_object_get_int_member(last, "written"), ==, 32 * MiB);
    g_assert_cmpint(json_object_get_int_member(last, "synced"), ==, 32 * MiB);
    g_assert_true(json_object_get_boolean_member(last, "done"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(status);
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

/* --progress redraws a dd-style line on a terminal (and stays silent elsewhere). */
static void
test_progress_tty(void)
{
    g_autofree char *src = wpath("pg-src");
    g_autofree char *img = wpath("pg-img");
    const char *opts[] = { "--progress", "--status-interval=10", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autoptr(GString) screen = g_string_new(NULL);
    int master, slave, p[2];
    IohtPumpOpts feed = { .path = src };
    IohtPump *t;
    GPid pid;
    char buf[4096];
    gssize n;

    ioht_write_random_file(src, 64 * MiB, 14);
    g_assert_cmpint(openpty(&master, &slave, NULL, NULL, NULL), ==, 0);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    pid = spawn_helper(argv, p[0], slave);
    close(p[0]);
    close(slave);
    t = ioht_feed_start(p[1], &feed);
    /* read the terminal until the helper closes it (EIO once the slave is gone) */
    while ((n = read(master, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) {
            g_string_append_len(screen, buf, n);
        }
    }
    ioht_pump_join(t, NULL);
    g_assert_cmpint(ioht_wait_exit_code(pid), ==, 0);
    close(master);
    g_test_message("terminal: %s", screen->str);
    g_assert_nonnull(strstr(screen->str, "\r67108864 bytes (0.1 GB, 0.1 GiB) copied"));
    g_assert_nonnull(strstr(screen->str, "synced"));
    g_unlink(src);
    g_unlink(img);
}

/* --record appends one JSON line per copy saying what was done. */
static void
test_record(void)
{
    g_autofree char *src = wpath("rc-src");
    g_autofree char *img = wpath("rc-img");
    g_autofree char *rec = wpath("rc-record");
    g_autofree char *opt = g_strdup_printf("--record=%s", rec);
    const char *opts[] = { opt, "--fadvise", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree char *text = NULL;
    JsonObject *o;

    ioht_write_random_file(src, 12345, 15);
    g_assert_cmpint(run_fed(argv, src, -1, NULL), ==, 0);
    g_assert_true(g_file_get_contents(rec, &text, NULL, NULL));
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpstr(json_object_get_string_member(o, "mode"), ==, "fadvise");
    g_assert_cmpstr(json_object_get_string_member(o, "direction"), ==, "save");
    g_assert_cmpstr(json_object_get_string_member(o, "form"), ==, "standalone");
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, 12345);
    g_assert_true(json_object_get_boolean_member(o, "ok"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(rec);
}

/* The last line of @path (a status fd's or a record's), decoded as the protocol. */
static void
load_last_line(const char *path, IohProtocolMsg *msg, JsonObject **ret_obj,
               JsonParser *parser)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    gsize len;
    char *last;

    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    g_assert_cmpuint(len, >, 0);
    g_assert_cmpint(text[len - 1], ==, '\n');
    text[len - 1] = '\0';
    last = strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text;
    g_assert_true(json_parser_load_from_data(parser, last, -1, &error));
    g_assert_no_error(error);
    *ret_obj = json_node_get_object(json_parser_get_root(parser));
    g_assert_true(ioh_protocol_decode(last, strlen(last), msg, &error));
    g_assert_no_error(error);
}

/* A path holding '"', a newline and control characters: the status fd's final line and
 * the record are valid JSON that give the path back byte for byte, and stderr keeps it on
 * one line. Once for a save that succeeds, once for one that fails (a directory). */
static void
test_record_odd_path(void)
{
    g_autofree char *dir = wpath("od-we\"ird\nna\x01me\t\x7f\x1b[0m");
    g_autofree char *img = g_build_filename(dir, "i\"m\ng", NULL);
    g_autofree char *src = wpath("od-src");
    g_autofree char *rec = wpath("od-record");
    g_autofree char *status = wpath("od-status");
    g_autofree char *opt = g_strdup_printf("--record=%s", rec);
    const char *opts[] = { opt, "--status-fd=1", NULL };

    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    ioht_write_random_file(src, 12345, 31);
    for (int fail = 0; fail < 2; fail++) {
        g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", fail ? dir : img);
        g_autoptr(JsonParser) sp = json_parser_new();
        g_autoptr(JsonParser) rp = json_parser_new();
        g_auto(IohProtocolMsg) sm = { 0 };
        g_auto(IohProtocolMsg) rm = { 0 };
        g_autofree char *err = NULL;
        JsonObject *so, *ro;
        int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        g_assert_cmpint(run_fed(argv, src, fd, &err), ==, fail ? 1 : 0);
        close(fd);
        load_last_line(status, &sm, &so, sp);
        load_last_line(rec, &rm, &ro, rp);
        g_assert_cmpstr(json_object_get_string_member(ro, "form"), ==, "standalone");
        g_assert_cmpint(json_object_get_boolean_member(ro, "ok"), ==, !fail);
        if (!fail) {
            g_assert_cmpint(sm.kind, ==, IOH_PROTOCOL_RESULT);
            g_assert_cmpuint(sm.written, ==, 12345);
            g_assert_cmpstr(json_object_get_string_member(ro, "path"), ==, img);
            g_assert_cmpint(json_object_get_int_member(ro, "bytes"), ==, 12345);
            continue;
        }
        assert_one_line(err, "Is a directory");
        g_assert_cmpstr(json_object_get_string_member(ro, "path"), ==, dir);
        g_assert_cmpstr(json_object_get_string_member(ro, "direction"), ==, "copy");
        g_assert_cmpstr(json_object_get_string_member(ro, "mode"), ==, "buffered");
        for (IohProtocolMsg *m = &sm; m; m = m == &sm ? &rm : NULL) {
            g_assert_cmpint(m->kind, ==, IOH_PROTOCOL_ERROR);
            g_assert_cmpint(m->errsv, ==, EISDIR);
            g_assert_cmpstr(m->errno_name, ==, "EISDIR");
            g_assert_cmpstr(m->operation, ==, "open");
            g_assert_cmpstr(m->path, ==, dir);
            g_assert_true(g_str_has_suffix(m->message, ": Is a directory"));
        }
    }
    g_unlink(img);
    g_rmdir(dir);
    g_unlink(src);
    g_unlink(rec);
    g_unlink(status);
}

/* O_DIRECT needs an aligned start: an unaligned --offset is refused up front. */
static void
test_direct_unaligned_offset(void)
{
    g_autofree char *src = wpath("uo-src");
    g_autofree char *img = wpath("uo-img");
    const char *opts[] = { "--direct", "--offset=100", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *err = NULL;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, 8192, 16);
    g_assert_cmpint(run_fed(argv, src, -1, &err), ==, 1);
    assert_one_line(err, "not a multiple of");
    g_unlink(src);
    g_unlink(img);
}

/* Out of space in libvirt's form: both helpers fail with exit 1, ours names the cause. */
static void
test_libvirt_enospc_as_stock(void)
{
    g_autofree char *mnt = NULL;
    g_autofree char *src = wpath("lvn-src");
    int rc[2];

    if (skip_unless_stock()) {
        return;
    }
    mnt = mount_scratch("tmpfs", "size=1m");
    if (!mnt) {
        return;
    }
    ioht_write_random_file(src, 3 * MiB, 17);
    for (int i = 0; i < 2; i++) {
        g_autofree char *img = g_strdup_printf("%s/img%d", mnt, i);
        g_autofree char *err = NULL;
        rc[i] = libvirt_save(i ? ioht_helper_path() : STOCK_HELPER, src, img, FALSE, &err);
        if (i == 1) {
            g_autofree char *want = g_strdup_printf("iohelper: failure with %s: write %s: "
                                                    "No space left on device\n", img, img);
            g_assert_cmpstr(err, ==, want);
        }
        g_unlink(img);
    }
    unmount_scratch(mnt);
    g_assert_cmpint(rc[0], ==, 1);
    g_assert_cmpint(rc[1], ==, rc[0]);
    g_unlink(src);
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

/* The libvirt form with an FD that is no fd number is refused, not taken for a path. */
static void
test_libvirt_malformed_fd(void)
{
    g_autofree char *img = wpath("mf-img");
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, img, "99999999999");
    g_autofree char *err = NULL;

    g_assert_cmpint(ioht_exit_code(ioht_run(argv, -1, -1, &err)), !=, 0);
    assert_one_line(err, "malformed fd");
    g_assert_false(g_file_test("99999999999", G_FILE_TEST_EXISTS));
}

/* ---- issue 10, case 3: a save into a regular file ends where the stream ends, in every
 * form and mode: no old bytes after the stream (the old image was longer) ---- */

typedef struct {
    const char *mode;     /* "", "--direct", "--fadvise" */
    const char *form;     /* "stdout", "fd", "libvirt", "libvirt-header", "fd-offset" */
} StaleCase;

static void
test_stale_tail(gconstpointer data)
{
    const StaleCase *sc = data;
    g_autofree char *src = wpath("stale-src");
    g_autofree char *img = wpath("stale-img");
    gboolean lv = g_str_has_prefix(sc->form, "libvirt");
    gboolean direct = g_str_equal(sc->mode, "--direct");
    guint64 start = g_str_has_suffix(sc->form, "header") || g_str_has_suffix(sc->form,
                                                                            "offset")
                        ? 4096 : 0;
    const guint64 size = 2 * MiB + 4097;
    const char *opts[] = { lv ? "" : sc->mode,
                           g_str_equal(sc->form, "fd-offset") ? "--offset=4096" : "", NULL };
    g_auto(GStrv) argv = NULL;
    g_autofree char *got = NULL;
    g_autofree char *want = NULL;
    g_autofree char *err = NULL;
    gsize got_len, want_len;
    int fd, rc;

    if (direct && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(img, 5 * MiB + 904, 41);    /* the old, longer image */
    ioht_write_random_file(src, size, 42);
    fd = open(img, O_WRONLY | O_CLOEXEC | (lv && direct ? O_DIRECT : 0));
    g_assert_cmpint(fd, >=, 0);
    if (g_str_equal(sc->form, "libvirt-header")) {
        g_assert_cmpint(lseek(fd, 4096, SEEK_SET), ==, 4096);
    }
    if (lv) {
        /* libvirt hands the image on a numbered fd: here fd 1, as libvirt_save() does */
        argv = helper_argv(ioht_helper_path(), opts, img, "1");
        rc = run_fed(argv, src, fd, &err);
    } else if (g_str_equal(sc->form, "stdout")) {
        argv = helper_argv(ioht_helper_path(), opts, "-", "-");
        rc = run_fed(argv, src, fd, &err);
    } else {
        argv = helper_argv(ioht_helper_path(), opts, "-", "fd:1");
        rc = run_fed(argv, src, fd, &err);
    }
    close(fd);
    g_assert_cmpint(rc, ==, 0);
    g_assert_cmpuint(file_size(img), ==, start + size);
    g_assert_true(g_file_get_contents(img, &got, &got_len, NULL));
    g_assert_true(g_file_get_contents(src, &want, &want_len, NULL));
    g_assert_cmpmem(got + start, got_len - start, want, want_len);
    g_unlink(src);
    g_unlink(img);
}

/* ---- case 4: O_APPEND with O_DIRECT: the write lands at the file's end; say so when
 * that end is unaligned, and append exactly when it is aligned ---- */
static void
test_append_direct(void)
{
    g_autofree char *src = wpath("ad-src");
    g_autofree char *img = wpath("ad-img");
    const char *opts[] = { "--direct", NULL };
    g_auto(GStrv) standalone = helper_argv(ioht_helper_path(), opts, "-", "fd:1");
    g_autofree char *err = NULL;
    g_autofree char *err2 = NULL;
    g_autofree char *err3 = NULL;
    int fd;

    if (skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(src, MiB + 3, 43);
    ioht_write_random_file(img, 100, 44);
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(run_fed(standalone, src, fd, &err), ==, 1);
    close(fd);
    assert_one_line(err, "O_APPEND, so writes land at its end, offset 100");
    g_assert_null(strstr(err, "refused by its file system"));
    {   /* libvirt's form */
        g_auto(GStrv) lv = helper_argv(ioht_helper_path(), NULL, img, "1");
        fd = open(img, O_WRONLY | O_APPEND | O_DIRECT | O_CLOEXEC);
        g_assert_cmpint(run_fed(lv, src, fd, &err2), ==, 1);
        close(fd);
        assert_one_line(err2, "O_APPEND, so writes land at its end, offset 100");
    }
    g_assert_cmpuint(file_size(img), ==, 100);
    ioht_write_random_file(img, 8192, 44);
    fd = open(img, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(run_fed(standalone, src, fd, &err3), ==, 0);
    close(fd);
    g_assert_cmpuint(file_size(img), ==, 8192 + MiB + 3);
    g_unlink(src);
    g_unlink(img);
}

/* ---- case 6: one fd on both sides (a socket, fd:3 fd:3) is closed once ---- */
static gpointer
echo_peer(gpointer data)
{
    int fd = GPOINTER_TO_INT(data);
    char buf[4096];
    gssize n, total = 0;

    g_assert_cmpint(write(fd, "hello socket", 12), ==, 12);
    shutdown(fd, SHUT_WR);
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        total += n;
    }
    return GINT_TO_POINTER((int)total);
}

static void
test_one_fd_both_sides(void)
{
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, "fd:0", "fd:0");
    g_autofree char *err = NULL;
    GThread *t;
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    t = g_thread_new("peer", echo_peer, GINT_TO_POINTER(sv[1]));
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, sv[0], -1, &err)), ==, 0);
    close(sv[0]);
    g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(t)), ==, 12);
    close(sv[1]);
    g_assert_true(err == NULL || *err == '\0');
}

static void
add_stale_cases(void)
{
    static const char *const modes[] = { "", "--direct", "--fadvise" };
    static const char *const forms[] = { "stdout", "fd", "fd-offset", "libvirt",
                                         "libvirt-header" };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize f = 0; f < G_N_ELEMENTS(forms); f++) {
            StaleCase *sc;
            g_autofree char *path = NULL;
            if (g_str_has_prefix(forms[f], "libvirt") && g_str_equal(modes[m], "--fadvise")) {
                continue;    /* libvirt's form has no --fadvise: the fd's O_DIRECT decides */
            }
            sc = g_new0(StaleCase, 1);
            sc->mode = modes[m];
            sc->form = forms[f];
            path = g_strdup_printf("/helper/stale-tail/%s/%s", *modes[m] ? modes[m] + 2
                                                                          : "buffered",
                                   forms[f]);
            g_test_add_data_func_full(path, sc, test_stale_tail, g_free);
        }
    }
}

static void
add_roundtrips(void)
{
    static const char *modes[] = { "", "--direct", "--fadvise" };
    static const char *names[] = { "buffered", "direct", "fadvise" };
    static const guint64 sizes[] = { 0, 1, 4095, 4096, 4097, MiB - 1, MiB, MiB + 1,
                                     256ULL * MiB + 12345 };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
            RoundTrip *rt = g_new0(RoundTrip, 1);
            g_autofree char *path = g_strdup_printf("/helper/roundtrip/%s/%" G_GUINT64_FORMAT,
                                                    names[m], sizes[s]);
            rt->mode = modes[m];
            rt->size = sizes[s];
            g_test_add_data_func_full(path, rt, test_roundtrip, g_free);
        }
    }
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);

    add_roundtrips();
    g_test_add_func("/helper/file-to-file", test_file_to_file);
    g_test_add_func("/helper/fd-operands", test_fd_operands);
    g_test_add_data_func("/helper/offset-length/buffered", "", test_offset_length);
    g_test_add_data_func("/helper/offset-length/direct", "--direct", test_offset_length);
    g_test_add_data_func("/helper/offset-length/fadvise", "--fadvise", test_offset_length);
    g_test_add_data_func("/helper/pipe/raised-to-1MiB", "", test_pipe_size);
    g_test_add_data_func("/helper/pipe/pipe-size-option", "--pipe-size=256K", test_pipe_size);
    g_test_add_data_func("/helper/libvirt/same-bytes-as-stock/buffered", GINT_TO_POINTER(0),
                         test_libvirt_same_bytes);
    g_test_add_data_func("/helper/libvirt/same-bytes-as-stock/direct", GINT_TO_POINTER(1),
                         test_libvirt_same_bytes);
    g_test_add_func("/helper/libvirt/same-failures-as-stock", test_libvirt_same_failures);
    g_test_add_data_func("/helper/cache/direct-leaves-nothing", "--direct", test_cache_left);
    g_test_add_data_func("/helper/cache/fadvise-leaves-little", "--fadvise", test_cache_left);
    g_test_add_func("/helper/direct/block-device-tail", test_block_device);
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
    g_test_add_func("/helper/cli/help-version", test_help_version);
    g_test_add_func("/helper/cli/stats", test_stats);
    g_test_add_func("/helper/cli/status-fd", test_status_fd);
    g_test_add_func("/helper/lock/second-writer-refused", test_second_writer_refused);
    g_test_add_func("/helper/cli/progress-on-a-terminal", test_progress_tty);
    g_test_add_func("/helper/cli/record", test_record);
    g_test_add_func("/helper/cli/record-odd-path", test_record_odd_path);
    g_test_add_func("/helper/direct/unaligned-offset-refused", test_direct_unaligned_offset);
    g_test_add_func("/helper/libvirt/enospc-as-stock", test_libvirt_enospc_as_stock);
    g_test_add_func("/helper/libvirt/malformed-fd", test_libvirt_malformed_fd);
    g_test_add_func("/helper/error/refused-save-keeps-image", test_refused_save_keeps_image);
    g_test_add_func("/helper/error/silent-socket-source", test_silent_socket_source);
    add_stale_cases();
    g_test_add_func("/helper/direct/append-lands-at-end", test_append_direct);
    g_test_add_func("/helper/cli/one-fd-both-sides", test_one_fd_both_sides);

    rc = g_test_run();
    ioht_workdir_remove(workdir);
    g_free(workdir);
    return rc;
}
