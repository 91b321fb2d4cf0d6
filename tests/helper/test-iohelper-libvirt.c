/* test-iohelper-libvirt.c - the iohelper binary, end to end (real pipes, real files on
 * ext4, O_DIRECT): the libvirt form beside the stock libvirt_iohelper
 * (/helper/libvirt/...)
 */
#include "iohelper-util.h"

#define STOCK_HELPER "/usr/lib/libvirt/libvirt_iohelper"

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

/* A host config naming age recipients: libvirt's form refuses every save (exit 2, one
 * line naming the image, the config file and the key) rather than write an image that a
 * plain `virsh restore` (no helper) could not read, or a plain one the administrator
 * believes encrypted; nothing is written. Restores are untouched: a plain image saved
 * before the setting still restores through the helper (--bypass-cache). */
static void
test_libvirt_conf_recipients(gconstpointer data)
{
    const char *key = data;
    g_autofree char *conf = wpath("lvr.conf");
    g_autofree char *src = wpath("lvr-src");
    g_autofree char *img = wpath("lvr-img");
    g_autofree char *back = wpath("lvr-back");
    g_autofree char *text = g_strdup_printf("[iohelper]\n%s\n", key);
    g_autofree char *err = NULL;

    ioht_write_random_file(src, 2 * MiB + 17, 23);
    g_setenv("IOHELPER_CONF", "/nonexistent/iohelper.conf", TRUE);
    g_assert_cmpint(libvirt_save(ioht_helper_path(), src, img, FALSE, NULL), ==, 0);
    /* 0644 whatever the umask: the helper refuses a group-writable config */
    g_assert_true(g_file_set_contents_full(conf, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0644, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    g_assert_cmpint(libvirt_restore(ioht_helper_path(), img, back, FALSE, NULL), ==, 0);
    g_assert_true(ioht_files_equal(back, src));
    g_assert_cmpint(libvirt_save(ioht_helper_path(), src, img, FALSE, &err), ==, 2);
    assert_one_line(err, img);
    ioht_assert_contains(err, conf);
    ioht_assert_contains(err, "refused for libvirt's saves");
    g_assert_cmpuint(file_size(img), ==, 4096);    /* libvirt's header, and not a byte more */
    g_unsetenv("IOHELPER_CONF");
    g_unlink(conf);
    g_unlink(src);
    g_unlink(img);
    g_unlink(back);
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    g_test_add_data_func("/helper/libvirt/same-bytes-as-stock/buffered", GINT_TO_POINTER(0),
                         test_libvirt_same_bytes);
    g_test_add_data_func("/helper/libvirt/same-bytes-as-stock/direct", GINT_TO_POINTER(1),
                         test_libvirt_same_bytes);
    g_test_add_func("/helper/libvirt/same-failures-as-stock", test_libvirt_same_failures);
    g_test_add_func("/helper/libvirt/enospc-as-stock", test_libvirt_enospc_as_stock);
    g_test_add_func("/helper/libvirt/malformed-fd", test_libvirt_malformed_fd);
    g_test_add_data_func("/helper/libvirt/conf-recipients-refused/recipients",
                         "recipients=age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
                         test_libvirt_conf_recipients);
    g_test_add_data_func("/helper/libvirt/conf-recipients-refused/recipients-file",
                         "recipients-file=/etc/iohelper/recipients",
                         test_libvirt_conf_recipients);
    return iohelper_test_run();
}
