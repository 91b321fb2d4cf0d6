/* test-channels-hostile.c - a multi-channel save (issue 31) whose image folder another
 * local user can write, against a QMP peer that plays QEMU (qg-fake.c)
 *
 * /qemu/channels/hostile/part-swapped: while the tool waits for QEMU's connections, the
 * test (the other user) renames a symbolic link to a file of its own over the tool's
 * "IMG.part-XXXXXX" (mode 0600), then connects as QEMU's main channel and one multifd
 * channel and sends bytes. Every connection's helper must write to the file the tool
 * created, never to what the name points to now: the guest's RAM in a file the other
 * user reads. (Before, each helper opened the .part by name: the marker bytes landed in
 * the other user's file.) Whatever the tool's verdict then, that file stays empty.
 *
 * /qemu/channels/hostile/sigterm-mid-save (real QEMU): SIGTERM while the channels
 * stream (QEMU held to 1 MiB/s): exit 1, one line, the old image as it was, no .part,
 * the guest running again.
 *
 * /qemu/channels/hostile/part-swapped-mid-save (real QEMU): the other user renames a link
 * to its file over the .part while the channels stream; the save then ends: exit 1,
 * "its temporary file was replaced", their file empty. (Before: exit 0, FILE a link to
 * their empty file, the stream in an unlinked file.)
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <signal.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-fake.h"
#include "qg-qmp.h"
#include "qg-test.h"

#define INIT_SIZE 64          /* QEMU's MultiFDInit_t */
#define MARKER_BYTES (64 << 10)

#define OLD_IMAGE "the previous image: must stay\n"

static char *workdir, *data_file;

/* The one entry of @dir whose name starts with @prefix (NULL when none). */
static char *
find_prefixed(const char *dir, const char *prefix)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        if (g_str_has_prefix(name, prefix)) {
            return g_build_filename(dir, name, NULL);
        }
    }
    return NULL;
}

/* A connection to @sock that sends @head (@len bytes), then the marker, then closes. */
static void
send_channel(const char *sock, const guint8 *head, gsize len)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    g_autofree guint8 *marker = g_malloc(MARKER_BYTES);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(marker, 'M', MARKER_BYTES);
    g_assert_cmpuint(strlen(sock), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, sock);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(write(fd, head, len), ==, (gssize)len);
    g_assert_cmpint(write(fd, marker, MARKER_BYTES), ==, MARKER_BYTES);
    close(fd);
}

/* The other user renames a link to @theirs over the .part of @base in the work dir. */
static void
swap_part(const char *base, const char *theirs)
{
    g_autofree char *prefix = g_strconcat(base, ".part-", NULL);
    g_autofree char *part = find_prefixed(workdir, prefix);
    g_autofree char *link = g_build_filename(workdir, "link", NULL);

    g_assert_nonnull(part);
    g_assert_cmpint(symlink(theirs, link), ==, 0);
    g_assert_cmpint(rename(link, part), ==, 0);
}

static void
test_part_swapped(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *tmpdir = g_build_filename(workdir, "tmp", NULL);   /* see main() */
    g_autofree char *img = g_build_filename(workdir, "swap.img", NULL);
    g_autofree char *theirs = g_build_filename(workdir, "theirs.bin", NULL);
    g_autofree char *sockdir = NULL;
    g_autofree char *sock = NULL;
    const char *args[] = { qgt_tool(), "save", "--qmp", qgt_fake_socket(f), "--channels=1",
                           "--stall-timeout=5", img, NULL };
    g_autoptr(GSubprocess) tool = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *err = NULL;
    guint8 init[INIT_SIZE] = { 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 1 };   /* uuid 0, id 0 */
    struct stat st;

    g_assert_true(g_file_set_contents(theirs, "", 0, NULL));
    tool = g_subprocess_newv(args, G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < 6000 && !qgt_fake_got(f, "migrate"); i++) {
        g_usleep(10000);
    }
    g_assert_true(qgt_fake_got(f, "migrate"));   /* the .part exists, the socket listens */
    sockdir = find_prefixed(tmpdir, "qemu-iohelper-");
    g_assert_nonnull(sockdir);
    sock = g_build_filename(sockdir, "mig.sock", NULL);
    swap_part("swap.img", theirs);   /* the other user's move */
    send_channel(sock, (const guint8 *)"QEVM\0\0\0\3", 8);
    send_channel(sock, init, sizeof(init));
    g_assert_true(g_subprocess_communicate_utf8(tool, NULL, NULL, NULL, &err, &error));
    g_test_message("the tool: exit %d: %s", g_subprocess_get_exit_status(tool), err);
    g_assert_cmpint(stat(theirs, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 0);     /* not a byte of the stream in their file */
    g_assert_cmpuint(ioht_count_prefix(workdir, "swap.img.part-"), ==, 0);   /* removed */
    g_unlink(theirs);
    g_unlink(img);
}

static void
test_sigterm_mid_save(void)
{
    g_autofree char *img = g_build_filename(workdir, "term.img", NULL);
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    const char *args[] = { qgt_tool(), "save", "--qmp", src->sock, "--channels=2",
                           "--max-bandwidth=1", img, NULL };
    g_autoptr(GSubprocess) tool = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *err = NULL;
    g_autofree char *text = NULL;
    g_autofree char *status = NULL;

    g_assert_true(g_file_set_contents(img, OLD_IMAGE, -1, NULL));
    g_assert_true(qg_qmp_run(src->qmp, "cont", NULL, &error));   /* a running guest */
    tool = g_subprocess_newv(args, G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
    g_assert_no_error(error);
    /* mid-stream: the .part holds a few MiB of the streams (at 1 MiB/s: for many s more) */
    for (guint i = 0; i < 60000 && qgt_part_blocks(workdir, "term.img") < (2u << 20); i++) {
        g_usleep(2000);
    }
    g_assert_cmpuint(qgt_part_blocks(workdir, "term.img"), >=, 2u << 20);
    g_subprocess_send_signal(tool, SIGTERM);
    g_assert_true(g_subprocess_communicate_utf8(tool, NULL, NULL, NULL, &err, &error));
    g_test_message("the tool: exit %d: %s", g_subprocess_get_exit_status(tool), err);
    g_assert_true(g_subprocess_get_if_exited(tool));
    g_assert_cmpint(g_subprocess_get_exit_status(tool), ==, 1);
    qgt_assert_one_line(err);
    g_assert_true(g_file_get_contents(img, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, OLD_IMAGE);
    g_assert_cmpuint(ioht_count_prefix(workdir, "term.img.part-"), ==, 0);
    status = qgt_qemu_status(src);
    g_assert_cmpstr(status, ==, "running");
    g_unlink(img);
    qgt_qemu_stop(src);
}

static void
test_part_swapped_mid_save(void)
{
    g_autofree char *img = g_build_filename(workdir, "mid.img", NULL);
    g_autofree char *theirs = g_build_filename(workdir, "theirs-mid.bin", NULL);
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    const char *args[] = { qgt_tool(), "save", "--qmp", src->sock, "--channels=2",
                           "--max-bandwidth=1", img, NULL };
    g_autoptr(JsonObject) fast = json_object_new();
    g_autoptr(GSubprocess) tool = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *err = NULL;
    struct stat st;

    g_assert_true(g_file_set_contents(theirs, "", 0, NULL));
    g_assert_true(qg_qmp_run(src->qmp, "cont", NULL, &error));
    tool = g_subprocess_newv(args, G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < 60000 && qgt_part_blocks(workdir, "mid.img") < (2u << 20); i++) {
        g_usleep(2000);
    }
    g_assert_cmpuint(qgt_part_blocks(workdir, "mid.img"), >=, 2u << 20);
    swap_part("mid.img", theirs);
    json_object_set_int_member(fast, "max-bandwidth", G_GINT64_CONSTANT(1) << 40);
    g_assert_true(qg_qmp_run(src->qmp, "migrate-set-parameters", fast, &error));
    g_assert_true(g_subprocess_communicate_utf8(tool, NULL, NULL, NULL, &err, &error));
    g_test_message("the tool: exit %d: %s", g_subprocess_get_exit_status(tool), err);
    g_assert_cmpint(g_subprocess_get_exit_status(tool), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "its temporary file was replaced during the save");
    g_assert_cmpint(stat(theirs, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 0);
    g_unlink(img);
    g_unlink(theirs);
    qgt_qemu_stop(src);
}

int
main(int argc, char **argv)
{
    g_autofree char *tmpdir = NULL;

    qgt_test_init(&argc, &argv);
    workdir = ioht_workdir();
    /* where the tool makes its socket's folder; set before any thread exists */
    tmpdir = g_build_filename(workdir, "tmp", NULL);
    g_assert_cmpint(g_mkdir(tmpdir, 0700), ==, 0);
    g_setenv("TMPDIR", tmpdir, TRUE);
    g_test_add_func("/qemu/channels/hostile/part-swapped", test_part_swapped);
    if (qgt_qemu_binary()) {
        data_file = g_build_filename(workdir, "guest.bin", NULL);
        ioht_write_random_file(data_file, QGT_DATA_SIZE, 3);
        g_test_add_func("/qemu/channels/hostile/sigterm-mid-save", test_sigterm_mid_save);
        g_test_add_func("/qemu/channels/hostile/part-swapped-mid-save",
                        test_part_swapped_mid_save);
    }
    return ioht_run_tests(&workdir);
}
