/* test-libwrap-channel.c - ioh_wrap_new_channel(), ioh_wrap_new_channel_uri() and
 * ioh_wrap_options_set_region() (libwrap 0.4): three streams over real sockets (as
 * QEMU's multifd connections), each saved by its own helper into its own region of one
 * file (or one NBD export) and played back from it; a stream larger than its region;
 * what the calls refuse. */
#include "libwrap-util.h"

#include <signal.h>
#include <sys/socket.h>

#define REGION (4 * MIB)
#define N 3

static char *dir;
static const gsize sizes[N] = { 3 * MIB + 123, 1, 2 * MIB };
static guint8 *data[N];

/* Offset of region @k in the file: a header's 4096 bytes first, as qemu-glue lays it out. */
static guint64
region_at(guint k)
{
    return 4096 + (guint64)k * REGION;
}

/* A file of @len bytes of 0xAA: what a region's bytes past its stream must keep. */
static char *
prefilled_file(const char *name, gsize len)
{
    char *p = tpath(dir, name);
    g_autofree guint8 *fill = g_malloc(len);

    memset(fill, 0xAA, len);
    g_assert_true(g_file_set_contents(p, (const char *)fill, (gssize)len, NULL));
    return p;
}

/* A save of @len bytes of @bytes through a socket into region @k of @file, limited to
 * @region bytes: the finish's verdict (@error). */
static gboolean
save_one(const char *file, guint k, const guint8 *bytes, gsize len, guint64 region,
         GError **error)
{
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    IohWrapParams params = { .offset = region_at(k) };
    IohtPumpOpts feed = { .data = bytes, .len = len };
    int sv[2], fd = open(file, O_WRONLY | O_CLOEXEC);
    IohWrap *w;
    gboolean ok;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    g_assert_true(ioh_wrap_options_set_region(o, region, NULL));
    w = ioh_wrap_new_channel(sv[1], &fd, file, 0, &params, o, error);
    g_assert_no_error(*error);
    g_assert_cmpint(fd, ==, -1);
    close(sv[1]);   /* the helper's copy is the connection now */
    g_assert_true(ioht_feed(sv[0], &feed) || len > region);
    close(sv[0]);
    ok = ioh_wrap_finish(w, error);
    ioh_wrap_free(w);
    return ok;
}

/* Plays region @k of @file back through a socket: its bytes. */
static GByteArray *
restore_one(const char *file, guint k, gsize len)
{
    g_autoptr(GError) error = NULL;
    IohWrapParams params = { .offset = region_at(k), .length = len };
    GByteArray *got = g_byte_array_new();
    IohtPumpOpts drain = { .keep = got };
    int sv[2], fd = open_restore(file);
    IohtPump *p;
    IohWrap *w;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    w = ioh_wrap_new_channel(sv[1], &fd, file, 0, &params, NULL, &error);
    g_assert_no_error(error);
    close(sv[1]);
    p = ioht_drain_start(sv[0], &drain);
    g_assert_true(ioh_wrap_finish(w, &error));
    g_assert_no_error(error);
    ioht_pump_join(p, NULL);
    ioh_wrap_free(w);
    return got;
}

/* The bytes of @file from @off to @off + @len are all 0xAA. */
static void
assert_untouched(const char *file, guint64 off, gsize len)
{
    g_autofree char *text = NULL;
    gsize flen = 0;

    g_assert_true(g_file_get_contents(file, &text, &flen, NULL));
    g_assert_cmpuint(flen, >=, off + len);
    for (gsize i = 0; i < len; i++) {
        if ((guint8)text[off + i] != 0xAA) {
            g_test_fail_printf("byte %" G_GUINT64_FORMAT " changed", off + i);
            return;
        }
    }
}

/* Three streams, three helpers, one file: each region holds its stream, the bytes after
 * it stay as they were (no truncation, no zeros), and each plays back exactly. */
static void
test_regions(void)
{
    g_autofree char *file = prefilled_file("regions.img", region_at(N));

    for (guint k = 0; k < N; k++) {
        g_autoptr(GError) error = NULL;

        g_assert_true(save_one(file, k, data[k], sizes[k], REGION, &error));
        g_assert_no_error(error);
    }
    for (guint k = 0; k < N; k++) {
        g_autoptr(GByteArray) got = restore_one(file, k, sizes[k]);

        g_assert_cmpmem(got->data, got->len, data[k], sizes[k]);
        assert_untouched(file, region_at(k) + sizes[k], REGION - sizes[k]);
    }
    assert_untouched(file, 0, 4096);
    g_unlink(file);
}

/* A stream larger than its region: the finish fails ("File too large") and the next
 * region is untouched. */
static void
test_region_overflow(void)
{
    g_autofree char *file = prefilled_file("overflow.img", region_at(2));
    g_autofree guint8 *big = g_malloc(REGION + MIB);
    g_autoptr(GError) error = NULL;

    memset(big, 0x55, REGION + MIB);
    g_assert_false(save_one(file, 0, big, REGION + MIB, REGION, &error));
    g_assert_nonnull(error);
    g_test_message("overflow: %s", error->message);
    g_assert_nonnull(strstr(error->message, "File too large"));
    assert_untouched(file, region_at(1), REGION);
    g_unlink(file);
}

/* A regular file as the stream: refused (BADFD), *fd untouched; a region on a restore's
 * options refused at the wrap; a size past 2^63 - 1 refused by the setter. */
static void
test_refuses(void)
{
    g_autofree char *file = prefilled_file("refuses.img", 8192);
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;
    int not_stream = open_restore(file), fd = open_restore(file), sv[2];

    g_assert_null(ioh_wrap_new_channel(not_stream, &fd, file, 0, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_BADFD);
    g_assert_cmpint(fd, >=, 0);
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_region(o, G_GUINT64_CONSTANT(1) << 63, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_true(ioh_wrap_options_set_region(o, REGION, NULL));
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    g_assert_null(ioh_wrap_new_channel(sv[1], &fd, file, 0, NULL, o, &error));
    g_assert_nonnull(error);
    g_test_message("region on a restore: %s", error->message);
    g_assert_cmpint(fd, >=, 0);
    close(sv[0]);
    close(sv[1]);
    close(fd);
    close(not_stream);
    g_unlink(file);
}

/* ioh_wrap_new_channel_uri(): region @k of the export @uri, saved from a socket (@save)
 * or played back into one (@got): the finish's verdict. */
static gboolean
uri_one(const char *uri, gboolean save, guint k, GByteArray *got, GError **error)
{
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    IohWrapParams params = { .offset = region_at(k), .length = save ? 0 : sizes[k] };
    IohtPumpOpts feed = { .data = data[k], .len = sizes[k] }, drain = { .keep = got };
    IohtPump *p = NULL;
    int sv[2];
    IohWrap *w;
    gboolean ok;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    g_assert_true(!save || ioh_wrap_options_set_region(o, REGION, NULL));
    w = ioh_wrap_new_channel_uri(sv[1], uri, save, &params, o, error);
    g_assert_nonnull(w);
    close(sv[1]);
    if (save) {
        g_assert_true(ioht_feed(sv[0], &feed));
        close(sv[0]);
    } else {
        p = ioht_drain_start(sv[0], &drain);
    }
    ok = ioh_wrap_finish(w, error);
    if (p) {
        ioht_pump_join(p, NULL);
    }
    ioh_wrap_free(w);
    return ok;
}

/* Three streams into one NBD export (nbdkit's memory plugin), each by its own helper at
 * its region's offset, all played back exactly; a stream fd that is no socket or pipe,
 * and a URI that is none, refused. */
static void
test_nbd(void)
{
    g_autofree char *sock = tpath(dir, "ch.sock");
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    const char *plugin[] = { "memory", "64M", NULL };
    g_autoptr(GError) error = NULL;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    GPid pid = ioht_nbdkit_start(dir, sock, plugin);

    if (!pid) {
        close(devnull);
        return;
    }
    for (guint k = 0; k < N; k++) {
        g_assert_true(uri_one(uri, TRUE, k, NULL, &error));
        g_assert_no_error(error);
    }
    for (guint k = 0; k < N; k++) {
        g_autoptr(GByteArray) got = g_byte_array_new();

        g_assert_true(uri_one(uri, FALSE, k, got, &error));
        g_assert_no_error(error);
        g_assert_cmpmem(got->data, got->len, data[k], sizes[k]);
    }
    g_assert_null(ioh_wrap_new_channel_uri(devnull, uri, TRUE, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_BADFD);
    g_clear_error(&error);
    g_assert_null(ioh_wrap_new_channel_uri(devnull, "/not/a/uri", TRUE, NULL, NULL, &error));
    g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
    close(devnull);
    kill(pid, SIGKILL);
}

/* A stream larger than its region of an export (nbdkit's file plugin over a file of
 * 0xAA): the finish fails naming the URI and the region, and not one byte of the next
 * region changed (an export has no file-size limit: the helper's own --region). */
static void
test_nbd_region_overflow(void)
{
    g_autofree char *file = prefilled_file("nbd-overflow.img", region_at(2));
    g_autofree char *sock = tpath(dir, "over.sock");
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    const char *plugin[] = { "file", file, NULL };
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autofree guint8 *big = g_malloc(REGION + MIB);
    IohtPumpOpts feed = { .data = big, .len = REGION + MIB };
    IohWrapParams params = { .offset = region_at(0) };
    g_autoptr(GError) error = NULL;
    GPid pid = ioht_nbdkit_start(dir, sock, plugin);
    gboolean ok;
    int sv[2];
    IohWrap *w;

    if (!pid) {
        return;
    }
    memset(big, 0x55, REGION + MIB);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    g_assert_true(ioh_wrap_options_set_region(o, REGION, NULL));
    w = ioh_wrap_new_channel_uri(sv[1], uri, TRUE, &params, o, &error);
    g_assert_nonnull(w);
    close(sv[1]);
    (void)ioht_feed(sv[0], &feed);   /* the helper stops reading at the region's end */
    close(sv[0]);
    ok = ioh_wrap_finish(w, &error);
    ioh_wrap_free(w);
    kill(pid, SIGKILL);   /* before any assertion: an aborted test leaves no server */
    g_assert_false(ok);
    g_assert_nonnull(error);
    g_test_message("overflow: %s", error->message);
    g_assert_nonnull(strstr(error->message, "nbd+unix://"));
    g_assert_nonnull(strstr(error->message, "passes the end of its region"));
    assert_untouched(file, region_at(1), REGION);
    g_unlink(file);
}

int
main(int argc, char **argv)
{
    int ret;

    libwrap_test_init(&argc, &argv);
    dir = ioht_workdir();
    for (guint k = 0; k < N; k++) {
        data[k] = g_malloc(sizes[k]);
        for (gsize i = 0; i < sizes[k]; i++) {
            data[k][i] = (guint8)g_random_int();
        }
    }
    g_test_add_func("/libwrap/channel/regions", test_regions);
    g_test_add_func("/libwrap/channel/region-overflow", test_region_overflow);
    g_test_add_func("/libwrap/channel/refuses", test_refuses);
    g_test_add_func("/libwrap/channel/nbd", test_nbd);
    g_test_add_func("/libwrap/channel/nbd-region-overflow", test_nbd_region_overflow);
    ret = g_test_run();
    for (guint k = 0; k < N; k++) {
        g_free(data[k]);
    }
    ioht_workdir_remove(dir);
    return ret;
}
