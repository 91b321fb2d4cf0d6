/* test-channels.c - multi-channel images: `qemu-iohelper save --channels=N` of a real
 * QEMU (TCG, multifd over our unix socket) and `restore` of it into another, the RAM
 * compared with pmemsave; QEMU's multifd zstd and our --compress; to an NBD export;
 * images whose channel
 * index does not match their regions, refused with QEMU untouched by a helper. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <xxhash.h>

#include "ioh-test.h"
#include "qg-image.h"
#include "qg-image-nbd.h"
#include "qg-test.h"

static char *workdir, *data_file, *other_file;

static gboolean
need_qemu(void)
{
    gboolean found = qgt_qemu_binary() != NULL;

    if (!found) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
    }
    return found;
}

static void
assert_contains(const char *text, const char *needle)
{
    g_test_message("looking for \"%s\" in: %s", needle, text ? text : "(null)");
    g_assert_nonnull(text);
    g_assert_nonnull(strstr(text, needle));
}

/* Saves the guest holding data_file with @extra options (NULL-terminated) into @img;
 * pmemsaves the paused source into @src_dump. */
static void
save_guest(const char *img, const char *const *extra, const char *src_dump)
{
    g_autofree char *err = NULL;
    g_autofree char *out = NULL;
    g_autofree char *st = NULL;
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    const char *args[16] = { "save", "--qmp", src->sock, img, "--stats", "--progress" };
    int n = 6;

    for (; extra && *extra; extra++) {
        args[n++] = *extra;
    }
    args[n] = NULL;
    g_assert_cmpint(qgt_tool_run(args, &out, &err), ==, 0);
    /* the text stats: a line with each connection's MiB and rate */
    assert_contains(out, "\nchannels: [main ");
    assert_contains(out, " MiB/s, 0: ");
    st = qgt_qemu_status(src);
    g_assert_cmpstr(st, ==, "postmigrate");
    qgt_qemu_pmemsave(src, src_dump, QGT_DATA_SIZE);
    qgt_qemu_stop(src);
}

/* Restores @img into a new QEMU with @mode_opt (nullable); RAM compared with @want. */
static void
restore_guest(const char *img, const char *mode_opt, const char *want)
{
    g_autofree char *dump = g_build_filename(workdir, "dst.dump", NULL);
    g_autofree char *out = NULL;
    QgtQemu *dst = qgt_qemu_start(other_file, TRUE);
    const char *args[] = { "restore", "--qmp", dst->sock, img, "--stats=json", mode_opt,
                           NULL };

    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    assert_contains(out, "\"channels\":");
    /* each connection's figures: the main channel first, then channel 0, ...; none for
     * one stream */
    if (strstr(out, "\"channels\":0,")) {
        assert_contains(out, "\"per_channel\":[]");
    } else {
        assert_contains(out, "\"per_channel\":[{\"channel\":\"main\",\"stream_bytes\":");
        assert_contains(out, "{\"channel\":\"0\",\"stream_bytes\":");
    }
    qgt_qemu_pmemsave(dst, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, want));
    qgt_qemu_stop(dst);
    g_unlink(dump);
}

typedef struct {
    const char *channels;     /* --channels=N */
    guint n;
    const char *mode;         /* --bypass-cache=MODE or NULL */
    const char *qemu_compress;
    const char *compress;
} Case;

static const Case cases[] = {
    { "--channels=1", 1, NULL, NULL, NULL },
    { "--channels=2", 2, "--bypass-cache=direct", NULL, NULL },
    { "--channels=4", 4, NULL, NULL, NULL },
    { "--channels=2", 2, "--bypass-cache=direct", "--qemu-compress=zstd", NULL },
    { "--channels=2", 2, NULL, NULL, "--compress" },
};

/* Save with N channels, restore: the paused source's RAM and the restored guest's are
 * identical; the header indexes N regions after the main stream, each inside the file. */
static void
test_roundtrip(gconstpointer data)
{
    const Case *c = data;
    g_autofree char *img = g_build_filename(workdir, "ch.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    const char *extra[6] = { c->channels };
    g_autoptr(QgImageInfo) info = NULL;
    int n = 1;

    if (!need_qemu()) {
        return;
    }
    for (const char *const *o = &c->mode; o <= &c->compress; o++) {
        if (*o) {
            extra[n++] = *o;
        }
    }
    save_guest(img, extra, src_dump);
    info = qgt_image_info(img);
    g_assert_cmpuint(info->channels, ==, c->n);
    g_assert_cmpstr(info->multifd_compression, ==, c->qemu_compress ? "zstd" : "none");
    g_assert_true((info->compression != NULL) == (c->compress != NULL));
    for (guint i = 0; i < info->channels; i++) {
        g_assert_cmpuint(info->regions[i].length, >, 0);
        g_assert_cmpuint(info->regions[i].offset % 4096, ==, 0);
    }
    restore_guest(img, c->mode, src_dump);
    g_unlink(img);
    g_unlink(src_dump);
}

/* A guest restored from a 2-channel image (QEMU's multifd left on by the restore, as the
 * save had it) saved again as one stream: the tool turns multifd off (QEMU refuses a
 * multifd migration to an fd), and that image restores too, RAM compared. */
static void
test_then_single_stream(void)
{
    g_autofree char *img = g_build_filename(workdir, "chain.img", NULL);
    g_autofree char *img2 = g_build_filename(workdir, "chain2.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    g_autofree char *err = NULL;
    const char *extra[] = { "--channels=2", NULL };
    QgtQemu *mid;

    if (!need_qemu()) {
        return;
    }
    save_guest(img, extra, src_dump);
    mid = qgt_qemu_start(other_file, TRUE);
    {
        const char *restore[] = { "restore", "--qmp", mid->sock, img, NULL };
        const char *save[] = { "save", "--qmp", mid->sock, img2, NULL };

        g_assert_cmpint(qgt_tool_run(restore, NULL, NULL), ==, 0);
        g_assert_cmpint(qgt_tool_run(save, NULL, &err), ==, 0);
    }
    qgt_qemu_stop(mid);
    restore_guest(img2, NULL, src_dump);
    g_unlink(img);
    g_unlink(img2);
    g_unlink(src_dump);
}

/* A restore of @img refused with one line holding @needle; QEMU never loads a guest. */
static void
restore_refused(const char *img, const char *needle)
{
    g_autofree char *err = NULL;
    g_autofree char *st = NULL;
    QgtQemu *dst = qgt_qemu_start(other_file, TRUE);
    const char *args[] = { "restore", "--qmp", dst->sock, img, NULL };

    /* at once: a region QEMU would wait on stalled a restore for minutes */
    g_assert_cmpint(qgt_tool_run_timeout(args, 60, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    assert_contains(err, needle);
    st = qgt_qemu_status(dst);
    g_assert_cmpstr(st, ==, "inmigrate");   /* refused before migrate-incoming */
    qgt_qemu_stop(dst);
}

/* Writes @info as @img's header (its placeholder stays a complete header). */
static void
rewrite_header(const char *img, const QgImageInfo *info)
{
    g_autoptr(GError) error = NULL;
    int fd = open(img, O_WRONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_true(qg_image_write_header(fd, img, info, &error));
    g_assert_no_error(error);
    close(fd);
}

/* XXH3-64 of @len bytes of @img at @offset. */
static guint64
region_xxh3(const char *img, guint64 offset, gsize len)
{
    g_autofree guint8 *buf = g_malloc(len);
    int fd = open(img, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, buf, len, (off_t)offset), ==, (gssize)len);
    close(fd);
    return XXH3_64bits(buf, len);
}

/* An index that does not match its regions: overlapping regions, a region past the
 * file's end, a region whose init packet names another channel or another save's UUID.
 * Each refused with one line, before QEMU is asked to load anything. */
static void
test_index_mismatch(void)
{
    g_autofree char *img = g_build_filename(workdir, "bad.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    const char *extra[] = { "--channels=2", NULL };
    g_autoptr(QgImageInfo) info = NULL;
    g_autofree char *uuid = NULL;
    QgImageRegion saved;

    if (!need_qemu()) {
        return;
    }
    save_guest(img, extra, src_dump);
    info = qgt_image_info(img);
    saved = info->regions[1];
    uuid = g_strdup(info->uuid);

    info->regions[1].offset = info->regions[0].offset;   /* overlap */
    rewrite_header(img, info);
    restore_refused(img, "the channel index does not match its regions");

    info->regions[1] = saved;
    info->regions[1].stored_length = info->regions[1].length = saved.length + (1u << 30);
    rewrite_header(img, info);
    restore_refused(img, "image truncated");

    /* the index names another save than the one its channels' init packets came from */
    info->regions[1] = saved;
    g_free(info->uuid);
    info->uuid = g_strdup("0123456789abcdef0123456789abcdef");
    rewrite_header(img, info);
    restore_refused(img, "comes from another save");

    /* a region shorter than its init packet, its checksum right: QEMU would wait for
     * the rest of the packet (a restore stalled until the stall timeout) */
    g_free(info->uuid);
    info->uuid = g_strdup(uuid);
    info->regions[1] = saved;
    info->regions[1].length = info->regions[1].stored_length = 40;
    info->regions[1].checksum = region_xxh3(img, saved.offset, 40);
    rewrite_header(img, info);
    restore_refused(img, "a region shorter than a channel's 64-byte init packet");
    g_unlink(img);
    g_unlink(src_dump);
}

/* A compressed image's regions (`--compress`): their first bytes are zstd's, so each
 * channel's init packet is checked as its helper decompresses it, before QEMU is asked
 * anything: an index naming another save's UUID is refused as a raw one's is (before,
 * such an image restored, whatever save its channels came from). */
static void
test_index_mismatch_compressed(void)
{
    g_autofree char *img = g_build_filename(workdir, "badz.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "srcz.dump", NULL);
    const char *extra[] = { "--channels=2", "--compress", NULL };
    g_autoptr(QgImageInfo) info = NULL;
    g_autofree char *uuid = NULL;

    if (!need_qemu()) {
        return;
    }
    save_guest(img, extra, src_dump);
    info = qgt_image_info(img);
    g_assert_nonnull(info->compression);
    uuid = info->uuid;
    info->uuid = g_strdup("0123456789abcdef0123456789abcdef");
    rewrite_header(img, info);
    restore_refused(img, "channel 0 comes from another save");

    /* the main stream's first frame corrupt: found as a single stream's is, by its
     * helper before QEMU is set up (before, QEMU was set up for multifd and asked to
     * load, and the main channel's helper failed then) */
    g_free(info->uuid);
    info->uuid = g_steal_pointer(&uuid);
    rewrite_header(img, info);
    {
        int fd = open(img, O_WRONLY | O_CLOEXEC);
        static const guint8 junk[64] = { 0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff, 0xff };

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(pwrite(fd, junk, sizeof(junk), (off_t)info->stream_offset), ==,
                        (gssize)sizeof(junk));
        close(fd);
    }
    restore_refused(img, "corrupt zstd");
    g_unlink(img);
    g_unlink(src_dump);
}

/* Two channels to one NBD export (nbdkit's memory plugin, one connection per helper):
 * the regions at the file's offsets, the header (version 4) written last at 0 and read
 * back through the export; the restore from the export gives the source's RAM; an
 * export too small for the N+1 regions is refused before the guest is paused. */
static void
test_nbd(void)
{
    g_autofree char *sock = g_build_filename(workdir, "ch.sock", NULL);
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    g_autofree char *small_sock = g_build_filename(workdir, "small.sock", NULL);
    g_autofree char *small = g_strdup_printf("nbd+unix:///?socket=%s", small_sock);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    g_autofree char *err = NULL;
    g_autoptr(QgImageNbd) img = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *plugin[] = { "memory", "2G", NULL };
    const char *small_plugin[] = { "memory", "512M", NULL };
    const char *extra[] = { "--channels=2", NULL };
    GPid pid, small_pid;

    if (!need_qemu() || !(pid = ioht_nbdkit_start(workdir, sock, plugin))) {
        return;
    }
    save_guest(uri, extra, src_dump);
    img = qg_image_nbd_open(uri, FALSE, 0, NULL, NULL);
    g_assert_nonnull(img);
    info = qg_image_nbd_read_header(img, NULL);
    g_assert_nonnull(info);
    g_assert_cmpuint(info->channels, ==, 2);
    g_assert_cmpuint(info->regions[1].offset, >, info->regions[0].offset);
    g_clear_pointer(&img, qg_image_nbd_free);
    restore_guest(uri, NULL, src_dump);
    kill(pid, SIGKILL);

    /* 3 regions of the bound of a 256 MiB guest do not fit in 512 MiB */
    small_pid = ioht_nbdkit_start(workdir, small_sock, small_plugin);
    {
        QgtQemu *src = qgt_qemu_start(data_file, FALSE);
        const char *args[] = { "save", "--qmp", src->sock, small, "--channels=2", NULL };
        g_autofree char *st = NULL;

        g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 1);
        qgt_assert_one_line(err);
        assert_contains(err, "may need up to");
        st = qgt_qemu_status(src);
        g_assert_cmpstr(st, ==, "prelaunch");   /* as started: never paused nor migrated */
        qgt_qemu_stop(src);
    }
    kill(small_pid, SIGKILL);
    g_unlink(src_dump);
}

/* Usage: --channels out of range, --qemu-compress without it, on a restore, with --live,
 * into an RBD snapshot (read-only; an RBD image itself takes channels: tests/rbd). */
static void
test_usage(void)
{
    static const char *const bad[][6] = {
        { "save", "--qmp", "/nonexistent", "x.img", "--channels=0", NULL },
        { "save", "--qmp", "/nonexistent", "x.img", "--channels=17", NULL },
        { "save", "--qmp", "/nonexistent", "x.img", "--qemu-compress=zstd", NULL },
        { "save", "--qmp", "/nonexistent", "x.img", "--qemu-compress=lz4", NULL },
        { "restore", "--qmp", "/nonexistent", "x.img", "--channels=2", NULL },
        { "save", "--qmp", "/nonexistent", "x.img", "--channels=2", "--live" },
        { "save", "--qmp", "/nonexistent", "rbd:pool/img@s1", "--channels=2", NULL },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *args[7] = { 0 };
        g_autofree char *err = NULL;

        memcpy(args, bad[i], sizeof(bad[i]));
        g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 2);
        qgt_assert_one_line(err);
    }
}

int
main(int argc, char **argv)
{
    static const char *const names[] = { "1", "2-direct", "4", "2-qemu-zstd-direct",
                                         "2-compress" };
    int ret;

    g_test_init(&argc, &argv, NULL);
    if (argc != 2) {
        g_printerr("%s: the first argument is the qemu-iohelper to test\n", argv[0]);
        return 2;
    }
    qgt_set_tool(argv[1]);
    workdir = ioht_workdir();
    data_file = g_build_filename(workdir, "guest.bin", NULL);
    other_file = g_build_filename(workdir, "other.bin", NULL);
    ioht_write_random_file(data_file, QGT_DATA_SIZE, 1);
    ioht_write_random_file(other_file, QGT_DATA_SIZE, 2);

    g_test_add_func("/qemu/channels/usage", test_usage);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p = g_strdup_printf("/qemu/channels/roundtrip/%s", names[i]);
        g_test_add_data_func(p, &cases[i], test_roundtrip);
    }
    g_test_add_func("/qemu/channels/index-mismatch", test_index_mismatch);
    g_test_add_func("/qemu/channels/index-mismatch-compressed",
                    test_index_mismatch_compressed);
    g_test_add_func("/qemu/channels/then-single-stream", test_then_single_stream);
    g_test_add_func("/qemu/channels/nbd", test_nbd);
    ret = g_test_run();
    ioht_workdir_remove(workdir);
    return ret;
}
