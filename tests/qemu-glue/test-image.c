/* test-image.c - the image header format and the checksumming relay */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <xxhash.h>

#include "ioh-test.h"
#include "qg-image.h"
#include "qg-relay.h"

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

typedef struct {
    int fd;
    guint8 *data;
    gsize len;
} Writer;

static gpointer
writer_thread(gpointer p)
{
    Writer *w = p;
    gsize done = 0;

    while (done < w->len) {
        ssize_t n = write(w->fd, w->data + done, MIN(w->len - done, 300000));
        g_assert_cmpint(n, >, 0);
        done += n;
    }
    close(w->fd);
    return NULL;
}

static gpointer
reader_thread(gpointer p)
{
    Writer *w = p;
    GByteArray *got = g_byte_array_new();
    guint8 buf[65536];
    ssize_t n;

    while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
        g_byte_array_append(got, buf, n);
    }
    close(w->fd);
    return got;
}

/* Pipe to pipe (tee(2)): bytes go through unchanged, the checksum is XXH3-64 of them. */
static void
test_relay_copy(void)
{
    const gsize len = 5 * 1024 * 1024 + 4099;
    g_autofree guint8 *data = g_malloc(len);
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) got = NULL;
    QgRelay *relay;
    int a[2], b[2];
    guint64 bytes = 0, sum = 0;
    Writer w, r;
    GThread *wt, *rt;

    for (gsize i = 0; i < len; i++) {
        data[i] = (guint8)(g_random_int() >> 7);
    }
    g_assert_true(g_unix_open_pipe(a, FD_CLOEXEC, NULL));
    g_assert_true(g_unix_open_pipe(b, FD_CLOEXEC, NULL));
    relay = qg_relay_start(a[0], b[1], "test", &error);
    g_assert_no_error(error);
    w = (Writer){ a[1], data, len };
    r = (Writer){ b[0], NULL, 0 };
    wt = g_thread_new("w", writer_thread, &w);
    rt = g_thread_new("r", reader_thread, &r);
    g_assert_true(qg_relay_wait(relay, &bytes, &sum, &error));
    g_assert_no_error(error);
    g_thread_join(wt);
    got = g_thread_join(rt);
    g_assert_cmpuint(bytes, ==, len);
    g_assert_cmpuint(sum, ==, XXH3_64bits(data, len));
    g_assert_cmpmem(got->data, got->len, data, len);
    qg_relay_free(relay);
}

/* Not two pipes (a file in): the plain copy path, same result. */
static void
test_relay_from_file(void)
{
    const gsize len = 3 * 1024 * 1024 + 17;
    g_autofree char *dir = ioht_workdir();
    g_autofree char *path = g_build_filename(dir, "in", NULL);
    g_autofree guint8 *data = g_malloc(len);
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) got = NULL;
    guint64 bytes = 0, sum = 0;
    QgRelay *relay;
    GThread *rt;
    Writer r;
    int b[2], fd;

    for (gsize i = 0; i < len; i++) {
        data[i] = (guint8)(i * 7 + (i >> 12));
    }
    g_assert_true(g_file_set_contents(path, (char *)data, len, NULL));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(g_unix_open_pipe(b, FD_CLOEXEC, NULL));
    relay = qg_relay_start(fd, b[1], "test", &error);
    g_assert_no_error(error);
    r = (Writer){ b[0], NULL, 0 };
    rt = g_thread_new("r", reader_thread, &r);
    g_assert_true(qg_relay_wait(relay, &bytes, &sum, &error));
    g_assert_no_error(error);
    got = g_thread_join(rt);
    g_assert_cmpuint(bytes, ==, len);
    g_assert_cmpuint(sum, ==, XXH3_64bits(data, len));
    g_assert_cmpmem(got->data, got->len, data, len);
    qg_relay_free(relay);
    ioht_workdir_remove(dir);
}

/* A reader that goes away is an EPIPE error, not a SIGPIPE death. */
static void
test_relay_epipe(void)
{
    g_autoptr(GError) error = NULL;
    QgRelay *relay;
    guint8 buf[4096] = { 0 };
    int a[2], b[2];

    g_assert_true(g_unix_open_pipe(a, FD_CLOEXEC, NULL));
    g_assert_true(g_unix_open_pipe(b, FD_CLOEXEC, NULL));
    close(b[0]);
    relay = qg_relay_start(a[0], b[1], "test", &error);
    g_assert_no_error(error);
    g_assert_cmpint(write(a[1], buf, sizeof(buf)), ==, sizeof(buf));
    g_assert_false(qg_relay_wait(relay, NULL, NULL, &error));
    g_assert_error(error, QG_RELAY_ERROR, QG_RELAY_ERROR_WRITE);
    g_test_message("error: %s", error->message);
    close(a[1]);
    qg_relay_free(relay);
}

/* Freeing a relay blocked on a silent input stops it. */
static void
test_relay_cancel(void)
{
    g_autoptr(GError) error = NULL;
    QgRelay *relay;
    int a[2], b[2];

    g_assert_true(g_unix_open_pipe(a, FD_CLOEXEC, NULL));
    g_assert_true(g_unix_open_pipe(b, FD_CLOEXEC, NULL));
    relay = qg_relay_start(a[0], b[1], "test", &error);
    g_assert_no_error(error);
    g_usleep(50000);
    qg_relay_free(relay);
    close(a[1]);
    close(b[0]);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qemu/image/header-roundtrip", test_header_roundtrip);
    g_test_add_func("/qemu/image/header-errors", test_header_errors);
    g_test_add_func("/qemu/image/truncated-file", test_header_file);
    g_test_add_func("/qemu/image/checksum-format", test_checksum_format);
    g_test_add_func("/qemu/relay/copy-and-hash", test_relay_copy);
    g_test_add_func("/qemu/relay/copy-from-file", test_relay_from_file);
    g_test_add_func("/qemu/relay/epipe-is-error", test_relay_epipe);
    g_test_add_func("/qemu/relay/cancel", test_relay_cancel);
    return g_test_run();
}
