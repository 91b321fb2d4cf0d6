/* test-qemu-channels.c - faults on one channel of a multi-channel save or restore
 * (issue 31): a real QEMU 7.2 (TCG) saved with `qemu-iohelper save --channels=2` while
 * channel 1's helper meets EIO or ENOSPC writing its region; saved, then restored
 * while one channel's helper fails reading its region (the fault shim's EIO), or while
 * one channel's region holds bytes QEMU refuses (a stretch zeroed mid-region: the
 * index check, which reads each region's first bytes only, cannot see it).
 *
 * QEMU does not notice a multifd channel that ends early (its main thread waits for the
 * channel at the next sync point forever), so only the tool can: it must exit 1 with one
 * line naming the image and the channel, and leave no QEMU that runs the guest, by
 * itself, with the stall timeout off (--stall-timeout=0): a tool that does not watch the
 * channels' helpers hangs until the test kills it. */
#include "faults-util.h"
#include "ioh-test.h"
#include "qg-image.h"
#include "qg-test.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

/* How long a restore may take before the test calls it a hang: far beyond a restore of
 * this guest on a loaded machine, far below nothing (the tool never returns). */
#define HANG_SECS 120

static char *data_file, *real_helper, *img;

/* The guest saved once with 2 channels into img (kept for every test). */
static gboolean
need_image(void)
{
    const char *save[] = { "save", "--qmp", NULL, NULL, "--channels=2", NULL };
    QgtQemu *src;

    if (!qgt_have_qemu()) {
        return FALSE;
    }
    if (img) {
        return TRUE;
    }
    img = g_build_filename(ft_workdir(), "ch.img", NULL);
    src = qgt_qemu_start(data_file, FALSE);
    save[2] = src->sock;
    save[3] = img;
    g_assert_cmpint(qgt_tool_run(save, NULL, NULL), ==, 0);
    qgt_qemu_stop(src);
    return TRUE;
}

/* A restore of @path with the helpers under @fault (NULL: none): exit 1, one line
 * naming @path and "channel @ch", @needle in it; the destination QEMU gone or paused. */
static void
restore_fails(const char *path, const char *fault, guint ch, const char *needle)
{
    const char *args[] = { "restore", "--qmp", NULL, path, "--stall-timeout=0", NULL };
    g_autofree char *err = NULL;
    g_autofree char *want = g_strdup_printf("channel %u of %s", ch, path);
    QgtQemu *dst = qgt_qemu_start(data_file, TRUE);
    int code, status = 0;

    args[2] = dst->sock;
    if (fault) {
        ft_use_faulty_helper(fault, path, real_helper);
    }
    code = qgt_tool_run_timeout(args, HANG_SECS, NULL, &err);
    g_setenv("IOHELPER_PATH", real_helper, TRUE);
    ft_count_faults(ft_faults_logged());
    g_assert_cmpint(code, ==, 1);
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, want));
    g_assert_nonnull(strstr(err, needle));
    /* Quit through QMP (or exited by itself): no QEMU holds the half-loaded guest. A
     * QEMU whose load waits for the failed channel answers nothing (7.2's main loop
     * waits for it forever): the line says so, and that guest cannot run. */
    if (qgt_qemu_exited_within(dst, 10, &status)) {
        g_assert_true(WIFEXITED(status));
    } else {
        g_assert_nonnull(strstr(err, "QEMU does not answer"));
    }
    qgt_qemu_stop(dst);
}

/* The offset of the middle of channel @i's region, 4 KiB-aligned. */
static guint64
region_middle(guint i)
{
    g_autoptr(QgImageInfo) info = qgt_image_info(img);

    g_assert_cmpuint(info->channels, ==, 2);
    return (info->regions[i].offset + info->regions[i].stored_length / 2) & ~G_GUINT64_CONSTANT(4095);
}

/* Channel 1's helper fails reading the middle of its region with EIO: the tool says so
 * at once (the other helpers and QEMU would wait for that channel forever). */
static void
test_channel_read_eio(void)
{
    g_autofree char *fault = NULL;
    guint64 at;

    if (!need_image()) {
        return;
    }
    at = region_middle(1);
    fault = g_strdup_printf("read:@%" G_GUINT64_FORMAT ":EIO,pread:@%" G_GUINT64_FORMAT
                            ":EIO", at, at);
    restore_fails(img, fault, 1, "Input/output error");
}

/* Channel 0's region zeroed for 1 MiB mid-region (a copy of the image): QEMU finds a
 * packet with a bad magic and drops the channel, or the channel's checksum fails. */
static void
test_channel_corrupt(void)
{
    g_autofree char *bad = g_build_filename(ft_workdir(), "corrupt.img", NULL);
    g_autofree char *zeros = g_malloc0(1 << 20);
    g_autofree char *cmd = NULL;
    guint64 at;
    int fd;

    if (!need_image()) {
        return;
    }
    at = region_middle(0);
    cmd = g_strdup_printf("cp --sparse=always %s %s", img, bad);
    g_assert_cmpint(system(cmd), ==, 0);
    fd = open(bad, O_WRONLY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pwrite(fd, zeros, 1 << 20, (off_t)at), ==, 1 << 20);
    close(fd);
    restore_fails(bad, NULL, 0, "restore failed");
    g_unlink(bad);
}

/* A save with 2 channels into @target whose channel 1's helper fails writing 64 KiB into
 * its region with @err (its offset from the control image's index: the same guest gives
 * the same regions, but not the same split of pages: QEMU hands a packet to whichever
 * channel is free, and a channel whose helper starts late on a loaded machine may carry
 * only a few MiB, so the fault sits in the channel's first data packet): exit 1, one line naming @target and "channel 1", @needle in it; no
 * image and no temporary left; the source, paused by the save, runs again. */
static void
save_fails(const char *err_name, const char *needle)
{
    g_autofree char *target = g_build_filename(ft_workdir(), "fault.img", NULL);
    g_autofree char *err = NULL;
    g_autofree char *fault = NULL;
    g_autofree char *st = NULL;
    g_autofree char *base = g_path_get_basename(target);
    g_autofree char *part = g_strdup_printf("%s.part-", base);
    g_autoptr(QgImageInfo) info = NULL;
    const char *args[] = { "save", "--qmp", NULL, target, "--channels=2", NULL };
    QgtQemu *src;
    guint64 at;

    if (!need_image()) {
        return;
    }
    info = qgt_image_info(img);
    at = info->regions[1].offset + (64u << 10);
    fault = g_strdup_printf("write:@%" G_GUINT64_FORMAT ":%s,pwrite:@%" G_GUINT64_FORMAT
                            ":%s", at, err_name, at, err_name);
    src = qgt_qemu_start_full(data_file, FALSE, FALSE);
    args[2] = src->sock;
    ft_use_faulty_helper(fault, target, real_helper);
    g_assert_cmpint(qgt_tool_run_timeout(args, HANG_SECS, NULL, &err), ==, 1);
    g_setenv("IOHELPER_PATH", real_helper, TRUE);
    ft_count_faults(ft_faults_logged());
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, target));
    g_assert_nonnull(strstr(err, "channel 1"));
    g_assert_nonnull(strstr(err, needle));
    g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS));
    g_assert_cmpuint(ioht_count_prefix(ft_workdir(), part), ==, 0);
    st = qgt_qemu_status(src);
    g_assert_cmpstr(st, ==, "running");
    qgt_qemu_stop(src);
}

static void
test_channel_write_eio(void)
{
    save_fails("EIO", "Input/output error");
}

static void
test_channel_write_enospc(void)
{
    save_fails("ENOSPC", "No space left on device");
}

int
main(int argc, char **argv)
{
    int ret;

    qgt_test_init(&argc, &argv);
    signal(SIGPIPE, SIG_IGN);
    real_helper = g_strdup(ioht_helper_path());
    g_setenv("IOHELPER_PATH", real_helper, TRUE);
    data_file = g_build_filename(ft_workdir(), "ram.bin", NULL);
    ioht_write_random_file(data_file, QGT_DATA_SIZE, 7);
    g_test_add_func("/faults/qemu-channels/restore/channel-read-EIO", test_channel_read_eio);
    g_test_add_func("/faults/qemu-channels/restore/channel-corrupt", test_channel_corrupt);
    g_test_add_func("/faults/qemu-channels/save/channel-write-EIO", test_channel_write_eio);
    g_test_add_func("/faults/qemu-channels/save/channel-write-ENOSPC",
                    test_channel_write_enospc);
    ret = g_test_run();
    if (img) {
        g_unlink(img);
    }
    ft_report();
    ft_cleanup();
    return ret;
}
