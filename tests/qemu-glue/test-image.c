/* test-image.c - the image header format */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <xxhash.h>

#include "ioh-test.h"
#include "qg-image.h"

static QgImageInfo *
sample_info(void)
{
    QgImageInfo *info = qg_image_info_new();

    info->qemu_version = g_strdup("7.2.22");
    info->machine = g_strdup("pc-i440fx-7.2");
    info->ram_size = 1u << 30;
    info->time = 1764682200;
    info->running = TRUE;
    info->stream_length = 123456789;
    info->checksum = G_GUINT64_CONSTANT(0x0123456789abcdef);
    return info;
}

static void
test_header_roundtrip(void)
{
    g_autoptr(QgImageInfo) info = sample_info();
    g_autoptr(QgImageInfo) back = NULL;
    g_autoptr(GError) error = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_no_error(error);
    g_assert_cmpmem(buf, 8, "IOHQEMU\n", 8);
    back = qg_image_header_decode(buf, sizeof(buf), "x", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(back->qemu_version, ==, "7.2.22");
    g_assert_cmpstr(back->machine, ==, "pc-i440fx-7.2");
    g_assert_cmpuint(back->ram_size, ==, 1u << 30);
    g_assert_cmpint(back->time, ==, 1764682200);
    g_assert_true(back->running);
    g_assert_cmpuint(back->stream_offset, ==, 4096);
    g_assert_cmpuint(back->stream_length, ==, 123456789);
    g_assert_cmpuint(back->checksum, ==, G_GUINT64_CONSTANT(0x0123456789abcdef));
}

static void
expect_decode_error(const guint8 *buf, gsize len, int code, const char *needle)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = qg_image_header_decode(buf, len, "img", &error);

    g_assert_null(info);
    g_assert_error(error, QG_IMAGE_ERROR, code);
    g_test_message("error: %s", error->message);
    g_assert_nonnull(strstr(error->message, needle));
}

static void
test_header_errors(void)
{
    g_autoptr(QgImageInfo) info = sample_info();
    guint8 good[QG_IMAGE_HEADER_SIZE], buf[QG_IMAGE_HEADER_SIZE];
    int fd;
    g_autofree char *dir = ioht_workdir();
    g_autofree char *path = g_build_filename(dir, "part", NULL);

    g_assert_true(qg_image_header_encode(info, good, NULL));

    memcpy(buf, good, sizeof(buf));
    buf[0] = 'X';
    expect_decode_error(buf, sizeof(buf), QG_IMAGE_ERROR_BAD_MAGIC, "wrong magic");
    expect_decode_error(buf, 0, QG_IMAGE_ERROR_BAD_MAGIC, "wrong magic");

    memcpy(buf, good, sizeof(buf));
    buf[8] = 9;
    expect_decode_error(buf, sizeof(buf), QG_IMAGE_ERROR_VERSION, "format version 9");

    /* a compressed image whose version byte says raw: refused, not fed to QEMU */
    info->compression = g_strdup("zstd");
    info->stored_length = 1000;
    g_assert_true(qg_image_header_encode(info, buf, NULL));
    g_assert_cmpint(buf[8], ==, QG_IMAGE_FORMAT_VERSION_COMPRESSED);
    buf[8] = QG_IMAGE_FORMAT_VERSION;
    expect_decode_error(buf, sizeof(buf), QG_IMAGE_ERROR_CORRUPT,
                        "format version 1 (raw) but the stream is recorded compressed");

    memcpy(buf, good, sizeof(buf));
    buf[40] ^= 1;   /* inside the JSON */
    expect_decode_error(buf, sizeof(buf), QG_IMAGE_ERROR_CORRUPT, "metadata checksum");

    expect_decode_error(good, 20, QG_IMAGE_ERROR_TRUNCATED, "truncated");
    expect_decode_error(good, 100, QG_IMAGE_ERROR_TRUNCATED, "truncated");

    /* The placeholder a save writes first reads as incomplete. */
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(qg_image_write_placeholder(fd, path, NULL));
    g_assert_cmpint(pread(fd, buf, sizeof(buf), 0), ==, sizeof(buf));
    expect_decode_error(buf, sizeof(buf), QG_IMAGE_ERROR_INCOMPLETE, "never finished");
    close(fd);
    ioht_workdir_remove(dir);
}

/* read_header checks the file holds the whole stream; extra bytes are fine. */
static void
test_header_file(void)
{
    g_autofree char *dir = ioht_workdir();
    g_autofree char *path = g_build_filename(dir, "img", NULL);
    g_autoptr(QgImageInfo) info = sample_info();
    g_autoptr(GError) error = NULL;
    QgImageInfo *back;
    int fd;

    info->stream_length = 10000;
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(qg_image_write_header(fd, path, info, &error));
    g_assert_no_error(error);

    g_assert_cmpint(ftruncate(fd, 4096 + 9999), ==, 0);
    back = qg_image_read_header(fd, path, &error);
    g_assert_null(back);
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED);
    g_test_message("error: %s", error->message);
    g_clear_error(&error);

    g_assert_cmpint(ftruncate(fd, 4096 + 10000), ==, 0);
    back = qg_image_read_header(fd, path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->stream_length, ==, 10000);
    qg_image_info_free(back);

    g_assert_cmpint(ftruncate(fd, 4096 + 20000), ==, 0);
    back = qg_image_read_header(fd, path, &error);
    g_assert_no_error(error);
    qg_image_info_free(back);

    g_assert_cmpint(ftruncate(fd, 100), ==, 0);
    back = qg_image_read_header(fd, path, &error);
    g_assert_null(back);
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_TRUNCATED);
    close(fd);
    ioht_workdir_remove(dir);
}

static void
test_checksum_format(void)
{
    g_autofree char *s = qg_image_checksum_to_string(XXH3_64bits("", 0));

    /* XXH3-64 of nothing, as `xxhsum -H3 /dev/null` prints it. */
    g_assert_cmpstr(s, ==, "xxh3-64:2d06800538d394c2");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qemu/image/header-roundtrip", test_header_roundtrip);
    g_test_add_func("/qemu/image/header-errors", test_header_errors);
    g_test_add_func("/qemu/image/truncated-file", test_header_file);
    g_test_add_func("/qemu/image/checksum-format", test_checksum_format);
    return g_test_run();
}
