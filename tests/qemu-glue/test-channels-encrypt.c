/* test-channels-encrypt.c - encrypted multi-channel images: `qemu-iohelper save
 * --channels=2 --recipient` of a real QEMU (TCG, multifd over our unix socket), with and
 * without --compress, restored with --identity into another QEMU, the RAM compared with
 * pmemsave; every region (the main stream's and each channel's) is an age file of its
 * own that `age -d` reads once cut out of the image; a restore without --identity is
 * refused naming it before QEMU is asked anything, a flipped byte in one channel's region
 * fails the restore with one line and the guest never resumes; the host's recipients
 * (/etc/iohelper.conf) encrypt channel saves too; to an NBD export. And the header,
 * without QEMU. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-image.h"
#include "qg-test.h"

static char *workdir, *data_file, *other_file;
static IohtAgeKey k1, k2;

static gboolean
need_tools(void)
{
    if (!ioht_skip_unless_age()) {
        return FALSE;
    }
    if (!qgt_qemu_binary()) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
        return FALSE;
    }
    return TRUE;
}

/* Region @r of @img (@stored bytes at @offset) cut out with dd, decrypted by age,
 * decompressed by zstd when @compressed: @length bytes whose XXH3 is @checksum. */
static void
check_region(const char *img, guint64 offset, guint64 stored, guint64 length,
             guint64 checksum, gboolean compressed)
{
    g_autofree char *stream = g_build_filename(workdir, "region", NULL);
    g_autofree char *cmd = g_strdup_printf(
        "dd if='%s' iflag=skip_bytes,count_bytes skip=%" G_GUINT64_FORMAT " count=%"
        G_GUINT64_FORMAT " status=none | age -d -i '%s' %s > '%s' && xxhsum -H3 '%s'",
        img, offset, stored, k1.file, compressed ? "| zstd -q -dc" : "", stream, stream);
    g_autofree char *sum = qg_image_checksum_to_string(checksum);
    g_autofree char *out = qgt_sh_out(cmd);
    struct stat st;

    g_assert_cmpint(g_stat(stream, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, length);
    g_test_message("region at %" G_GUINT64_FORMAT ": %s", offset, out);
    g_assert_nonnull(strstr(out, sum + strlen("xxh3-64:")));
    g_unlink(stream);
}

static void
check_regions(const char *img, const QgImageInfo *info)
{
    gboolean z = info->compression != NULL;

    check_region(img, info->stream_offset, info->stored_length, info->stream_length,
                 info->checksum, z);
    for (guint i = 0; i < info->channels; i++) {
        const QgImageRegion *r = &info->regions[i];

        if (!z) {
            g_assert_cmpuint(r->stored_length, >, r->length);   /* age's tags */
        }
        check_region(img, r->offset, r->stored_length, r->length, r->checksum, z);
    }
}

/* Save with 2 channels encrypted (@compress: nullable), restore with the identity: the
 * paused source's RAM and the restored guest's are identical; the header is version 4
 * and says age; each region is age's. */
static void
test_roundtrip(gconstpointer data)
{
    const char *compress = data;
    g_autofree char *img = g_build_filename(workdir, "ce.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    g_autofree char *r1 = NULL;
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *out = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { "--channels=2", "--stats=json", NULL, compress, NULL };

    if (!need_tools()) {
        return;
    }
    r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    extra[2] = r1;
    out = qgt_save_guest(data_file, img, extra, TRUE, src_dump, NULL);
    g_assert_nonnull(strstr(out, "\"encryption\":\"age\""));
    g_assert_cmpuint(qgt_image_version(img), ==, QG_IMAGE_FORMAT_VERSION_CHANNELS);
    info = qgt_image_info(img);
    g_assert_cmpuint(info->channels, ==, 2);
    g_assert_cmpstr(info->encryption, ==, "age");
    g_assert_cmpstr(info->compression, ==, compress ? "zstd" : NULL);
    check_regions(img, info);
    g_clear_pointer(&out, g_free);
    out = qgt_restore_guest(img, other_file, (const char *const[]){ id1, NULL }, src_dump);
    g_assert_nonnull(strstr(out, "\"encryption\":\"age\""));
    g_assert_nonnull(strstr(out, "{\"channel\":\"1\",\"stream_bytes\":"));
    g_unlink(img);
    g_unlink(src_dump);
}

/* Flips the byte in the middle of @img's channel @i region. */
static void
flip_region(const char *img, const QgImageRegion *r)
{
    off_t at = (off_t)(r->offset + r->stored_length / 2);
    guint8 b;
    int fd = open(img, O_RDWR | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, &b, 1, at), ==, 1);
    b ^= 0x01;
    g_assert_cmpint(pwrite(fd, &b, 1, at), ==, 1);
    close(fd);
}

/* A restore of @img, whose channel 1 was tampered with, with @id: exit 1, one line
 * naming the image and the channel, --stall-timeout=0 so that only the tool's watch of
 * the channels' helpers can end it; no QEMU left that runs the guest (a QEMU whose load
 * waits for the failed channel answers nothing: the line says so). */
static void
tampered_restore_fails(const char *img, const char *id)
{
    const char *args[] = { "restore", "--qmp", NULL, img, id, "--stall-timeout=0", NULL };
    g_autofree char *err = NULL;
    g_autofree char *want = g_strdup_printf("channel 1 of %s", img);
    QgtQemu *dst = qgt_qemu_start(other_file, TRUE);
    int status = 0;

    args[2] = dst->sock;
    g_assert_cmpint(qgt_tool_run_timeout(args, 300, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    g_test_message("refused: %s", err);
    g_assert_nonnull(strstr(err, want));
    g_assert_nonnull(strstr(err, "does not authenticate"));
    if (qgt_qemu_exited_within(dst, 10, &status)) {
        g_assert_true(WIFEXITED(status));
    } else {
        g_assert_nonnull(strstr(err, "QEMU does not answer"));
    }
    qgt_qemu_stop(dst);
}

/* No --identity: refused naming it, QEMU untouched. Another key's identity: refused as a
 * single stream is, from region 0's age header before QEMU is asked anything (QEMU
 * still waiting for an incoming migration; before, the tool set QEMU up first and its
 * failure shut QEMU down). One flipped byte in channel 1's region: its helper fails
 * authentication, the restore fails with one line naming the image, exit 1, and the
 * guest never resumes. */
static void
test_refused(void)
{
    g_autofree char *img = g_build_filename(workdir, "cr.img", NULL);
    g_autofree char *r1 = NULL;
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *id2 = g_strdup_printf("--identity=%s", k2.file);
    g_autofree char *line = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { "--channels=2", NULL, NULL };

    if (!need_tools()) {
        return;
    }
    r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    extra[1] = r1;
    g_free(qgt_save_guest(data_file, img, extra, TRUE, NULL, NULL));
    info = qgt_image_info(img);
    g_free(qgt_restore_refused(img, other_file, NULL, "--identity=FILE", TRUE));
    line = qgt_restore_refused(img, other_file, id2, "no identity matches", TRUE);
    g_assert_nonnull(strstr(line, img));
    g_assert_nonnull(strstr(line, "QEMU untouched"));
    flip_region(img, &info->regions[1]);
    tampered_restore_fails(img, id1);
    g_unlink(img);
}

/* The host's /etc/iohelper.conf names a recipient, the save none: every channel's helper
 * encrypts, the header records it, the restore needs the identity and is exact with it. */
static void
test_host_config(void)
{
    g_autofree char *img = g_build_filename(workdir, "ch.img", NULL);
    g_autofree char *conf = g_build_filename(workdir, "iohelper.conf", NULL);
    g_autofree char *text = NULL;
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { "--channels=2", NULL };

    if (!need_tools()) {
        return;
    }
    text = g_strdup_printf("[iohelper]\nrecipients=%s\n", k1.recipient);
    g_assert_true(g_file_set_contents_full(conf, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0644, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    g_free(qgt_save_guest(data_file, img, extra, TRUE, NULL, NULL));
    g_unsetenv("IOHELPER_CONF");
    info = qgt_image_info(img);
    g_assert_cmpstr(info->encryption, ==, "age");
    check_regions(img, info);
    g_free(qgt_restore_refused(img, other_file, NULL, "--identity=FILE", TRUE));
    g_free(qgt_restore_guest(img, other_file, (const char *const[]){ id1, NULL },
                             data_file));
    g_unlink(img);
}

/* Encrypted and compressed channels to an NBD export (nbdkit's memory plugin): refused
 * without --identity, exact with it. */
static void
test_nbd(void)
{
    g_autofree char *sock = g_build_filename(workdir, "e.sock", NULL);
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    g_autofree char *r1 = NULL;
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    const char *plugin[] = { "memory", "2G", NULL };
    const char *extra[] = { "--channels=2", "--compress", NULL, NULL };
    GPid pid;

    if (!need_tools() || !(pid = ioht_nbdkit_start(workdir, sock, plugin))) {
        return;
    }
    r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    extra[2] = r1;
    g_free(qgt_save_guest(data_file, uri, extra, TRUE, src_dump, NULL));
    g_free(qgt_restore_refused(uri, other_file, NULL, "--identity=FILE", TRUE));
    g_free(qgt_restore_guest(uri, other_file, (const char *const[]){ id1, NULL }, src_dump));
    kill(pid, SIGKILL);
    g_unlink(src_dump);
}

/* Version 4 with "encryption": round trips, regions whose stored length exceeds their
 * length accepted (age's tags); the same regions without it are corrupt. */
static void
test_header(void)
{
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(QgImageInfo) back = NULL;
    g_autoptr(GError) error = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    info->stream_length = 100000;
    info->stored_length = 100300;
    info->encryption = g_strdup("age");
    info->channels = 1;
    info->regions = g_new0(QgImageRegion, 1);
    info->regions[0] = (QgImageRegion){ .offset = 1 << 20, .length = 5000,
                                        .stored_length = 5250 };
    info->uuid = g_strdup("0123456789abcdef0123456789abcdef");
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_cmpuint(buf[8], ==, QG_IMAGE_FORMAT_VERSION_CHANNELS);
    back = qg_image_header_decode(buf, sizeof(buf), "img", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(back->encryption, ==, "age");
    g_assert_cmpuint(back->regions[0].stored_length, ==, 5250);

    /* a stored length of 0 would give the helper no bound (libwrap: 0 reads to EOF):
     * it would read the regions after its own */
    info->regions[0].stored_length = 0;
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_null(qg_image_header_decode(buf, sizeof(buf), "img", &error));
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "a region without stored bytes"));
    g_clear_error(&error);
    info->regions[0].stored_length = 5250;
    info->stored_length = 0;
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_null(qg_image_header_decode(buf, sizeof(buf), "img", &error));
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "a main stream without stored bytes"));
    g_clear_error(&error);
    info->stored_length = 100300;

    g_clear_pointer(&info->encryption, g_free);
    info->stored_length = info->stream_length;
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_null(qg_image_header_decode(buf, sizeof(buf), "img", &error));
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "two lengths differ"));
}

int
main(int argc, char **argv)
{
    g_autofree char *keygen = g_find_program_in_path("age-keygen");
    int ret;

    qgt_test_init(&argc, &argv);
    qgt_guest_files(&workdir, &data_file, &other_file, 31);
    if (keygen) {
        g_autofree char *path = g_build_filename(workdir, "k1", NULL);
        g_autofree char *path2 = g_build_filename(workdir, "k2", NULL);

        k1 = ioht_age_key_new(path);
        k2 = ioht_age_key_new(path2);
    }
    g_test_add_func("/qemu/channels-encrypt/header", test_header);
    g_test_add_data_func("/qemu/channels-encrypt/roundtrip/raw", NULL, test_roundtrip);
    g_test_add_data_func("/qemu/channels-encrypt/roundtrip/compress", "--compress",
                         test_roundtrip);
    g_test_add_func("/qemu/channels-encrypt/refused", test_refused);
    g_test_add_func("/qemu/channels-encrypt/host-config", test_host_config);
    g_test_add_func("/qemu/channels-encrypt/nbd", test_nbd);
    ret = g_test_run();
    ioht_workdir_remove(workdir);
    return ret;
}
