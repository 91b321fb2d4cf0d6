/* test-compress.c - compressed images: `qemu-iohelper save --compress` of a real QEMU
 * guest in each cache mode, restored byte for byte without a flag; the image part is
 * plain zstd; a raw and a compressed image restore alike; a corrupt compressed image
 * is refused and the guest never resumes. And the header's version 2, without QEMU. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-limits.h"
#include "ioh-test.h"
#include "qg-image.h"
#include "qg-test.h"

/* The files of the suite: a work folder, the source guest's data (text and random) and
 * what the destination holds before a restore. */
static char *workdir, *data_file, *other_file;

/* Without an emulator each QEMU test is skipped, saying so. */
static gboolean
need_qemu(void)
{
    gboolean found = qgt_qemu_binary() != NULL;

    if (!found) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
    }
    return found;
}

/* @text (the tool's stdout or stderr) says @needle. */
static void
assert_contains(const char *text, const char *needle)
{
    g_test_message("looking for \"%s\"", needle);
    g_assert_nonnull(text);
    g_assert_nonnull(strstr(text, needle));
}

/* Guest data that compresses partly, as RAM does: 3/4 text, 1/4 random (64 KiB of it
 * after every ~190 KiB of text). */
static void
write_guest_data(const char *path)
{
    g_autoptr(GString) s = g_string_sized_new(QGT_DATA_SIZE);
    g_autoptr(GRand) rand = g_rand_new_with_seed(12);

    for (guint i = 0; s->len < QGT_DATA_SIZE; i++) {
        if (i % 4096 == 3) {
            for (guint k = 0; k < (64u << 10) / 4; k++) {
                guint32 v = g_rand_int(rand);
                g_string_append_len(s, (const char *)&v, 4);
            }
        } else {
            g_string_append_printf(s, "%08u: a line of a file the guest has cached\n", i);
        }
    }
    g_assert_true(g_file_set_contents(path, s->str, QGT_DATA_SIZE, NULL));
}

/* Saves a guest holding data_file (running when @running) into @img with @extra
 * options; pmemsaves the paused source into @src_dump. Returns the --stats output. */
static char *
save_guest(const char *img, const char *const *extra, gboolean running, const char *src_dump)
{
    return qgt_save_guest(data_file, img, extra, running, src_dump, NULL);
}

/* Restores @img into a new QEMU (no flag besides @mode_opt), checks the guest's RAM
 * against @want, returns the --stats=json output. */
static char *
restore_guest(const char *img, const char *mode_opt, const char *want)
{
    const char *opts[] = { mode_opt, NULL };

    return qgt_restore_guest(img, other_file, opts, want);
}

/* The image part is plain zstd: `tail -c +4097 IMG | zstd -dc` is the stream, of the
 * header's length, and `xxhsum -H3` of it is the header's checksum. */
static void
check_zstd_part(const char *img, const QgImageInfo *info)
{
    g_autofree char *stream = g_build_filename(workdir, "stream", NULL);
    g_autofree char *cmd = g_strdup_printf("tail -c +4097 '%s' | zstd -q -dc > '%s' && "
                                           "xxhsum -H3 '%s'", img, stream, stream);
    g_autofree char *sum = qg_image_checksum_to_string(info->checksum);
    g_autofree char *out = qgt_sh_out(cmd);
    struct stat st;

    g_assert_cmpint(g_stat(stream, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, info->stream_length);
    /* "XXH3 (FILE) = HEX" or "HEX  FILE", as xxhsum versions print it */
    assert_contains(out, sum + strlen("xxh3-64:"));
    g_unlink(stream);
}

typedef struct {
    const char *mode;         /* --bypass-cache=MODE, or NULL */
    const char *compress;     /* --compress[=...] as given */
    int level;                /* what the header must record */
    const char *threads;      /* --threads=N or NULL */
} Case;

static const Case cases[] = {
    { NULL, "--compress", IOH_ZSTD_AUTO_LEVEL_MAX, NULL },    /* auto */
    { "direct", "--compress=zstd:3", 3, "--threads=2" },
    { "fadvise", "--compress=zstd:-3", -3, "--threads=1" },
};

/* Save --compress in a cache mode, restore without a flag in the same mode: the paused
 * source's RAM and the restored guest's are identical. */
static void
test_roundtrip(gconstpointer data)
{
    const Case *c = data;
    g_autofree char *img = g_build_filename(workdir, "c.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    g_autofree char *mode_opt = c->mode ? g_strdup_printf("--bypass-cache=%s", c->mode)
                                        : NULL;
    g_autofree char *level = g_strdup_printf("\"compression_level\":%d", c->level);
    g_autofree char *out = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { "--stats=json", c->compress, mode_opt ? mode_opt : c->threads,
                            mode_opt ? c->threads : NULL, NULL };
    struct stat st;

    if (!need_qemu()) {
        return;
    }
    out = save_guest(img, extra, TRUE, src_dump);
    assert_contains(out, "\"compression\":\"zstd\"");
    assert_contains(out, level);
    assert_contains(out, "\"stored_bytes\":");
    g_assert_true(ioht_files_equal(src_dump, data_file));

    info = qgt_image_info(img);
    g_assert_cmpuint(qgt_image_version(img), ==, QG_IMAGE_FORMAT_VERSION_COMPRESSED);
    g_assert_cmpstr(info->compression, ==, "zstd");
    g_assert_cmpint(info->compress_level, ==, c->level);
    g_assert_cmpint(g_stat(img, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, 4096 + info->stored_length);
    /* --compress alone is auto: raw or a level as this disk's speed says, in the header */
    g_assert_cmpint(info->compress_auto, ==, g_str_equal(c->compress, "--compress"));
    g_assert_cmpuint(info->stored_length, <, info->compress_auto
                                                 ? info->stream_length * 101 / 100
                                                 : info->stream_length * 3 / 4);
    check_zstd_part(img, info);

    g_clear_pointer(&out, g_free);
    out = restore_guest(img, mode_opt, src_dump);
    assert_contains(out, "\"operation\":\"restore\"");
    assert_contains(out, "\"compression\":\"zstd\"");
    g_unlink(img);
    g_unlink(src_dump);
}

/* A raw image (version 1, as before compression) and a compressed one of the same guest
 * restore the same way, to the same RAM; --stats text shows the stored bytes. */
static void
test_raw_and_compressed(void)
{
    g_autofree char *raw = g_build_filename(workdir, "raw.img", NULL);
    g_autofree char *zst = g_build_filename(workdir, "zst.img", NULL);
    g_autofree char *out = NULL;
    g_autoptr(QgImageInfo) rinfo = NULL;
    g_autoptr(QgImageInfo) zinfo = NULL;
    const char *raw_extra[] = { "--stats", NULL };
    const char *zst_extra[] = { "--stats", "--compress=zstd:1", NULL };

    if (!need_qemu()) {
        return;
    }
    out = save_guest(raw, raw_extra, TRUE, NULL);
    g_assert_null(strstr(out, "stored:"));
    g_clear_pointer(&out, g_free);
    out = save_guest(zst, zst_extra, TRUE, NULL);
    assert_contains(out, "stored: ");
    assert_contains(out, ", ratio 0.");
    rinfo = qgt_image_info(raw);
    zinfo = qgt_image_info(zst);
    g_assert_cmpuint(qgt_image_version(raw), ==, QG_IMAGE_FORMAT_VERSION);
    g_assert_null(rinfo->compression);
    g_assert_cmpuint(rinfo->stored_length, ==, rinfo->stream_length);
    g_assert_cmpuint(zinfo->stored_length, <, rinfo->stored_length);

    g_clear_pointer(&out, g_free);
    out = restore_guest(raw, NULL, data_file);
    assert_contains(out, "\"compression\":\"none\"");
    g_clear_pointer(&out, g_free);
    out = restore_guest(zst, NULL, data_file);
    assert_contains(out, "\"compression\":\"zstd\"");
    g_unlink(raw);
    g_unlink(zst);
}

/* A restore of @img that fails with one line saying @needle, the guest not resumed. */
static void
restore_refused(const char *img, const char *needle, gboolean untouched)
{
    g_autofree char *line = qgt_restore_refused(img, other_file, NULL, needle, untouched);

    assert_contains(line, img);
}

/* A flipped byte in the frames, a newer format, a file cut short, frames cut short under
 * a header that agrees: each refused with one line; QEMU never runs the guest. */
static void
test_corrupt(void)
{
    g_autofree char *img = g_build_filename(workdir, "good.img", NULL);
    g_autofree char *bad = g_build_filename(workdir, "bad.img", NULL);
    g_autoptr(QgImageInfo) info = NULL;
    g_autoptr(GError) error = NULL;
    const char *extra[] = { "--compress=zstd", NULL };
    guint64 at;
    guint8 b;
    int fd;

    if (!need_qemu()) {
        return;
    }
    g_free(save_guest(img, extra, TRUE, NULL));
    info = qgt_image_info(img);

    /* One byte flipped in the middle of the frames. */
    at = 4096 + info->stored_length / 3;
    qgt_copy_truncated(img, bad, 4096 + info->stored_length);
    fd = open(bad, O_RDWR | O_CLOEXEC);
    g_assert_cmpint(pread(fd, &b, 1, (off_t)at), ==, 1);
    b ^= 0x10;
    g_assert_cmpint(pwrite(fd, &b, 1, (off_t)at), ==, 1);
    close(fd);
    restore_refused(bad, "corrupt zstd image", FALSE);

    /* An image of a newer format: refused before QEMU is touched. */
    qgt_copy_truncated(img, bad, 4096 + info->stored_length);
    fd = open(bad, O_RDWR | O_CLOEXEC);
    b = 5;
    g_assert_cmpint(pwrite(fd, &b, 1, 8), ==, 1);
    close(fd);
    restore_refused(bad, "format version 5 (this tool reads 1 to 4)", TRUE);

    /* The file cut short: the header says more, refused before QEMU is touched. */
    qgt_copy_truncated(img, bad, 4096 + info->stored_length - 5000);
    restore_refused(bad, "image truncated", TRUE);

    /* Frames cut short, the header rewritten to agree: the helper finds the cut. */
    info->stored_length -= 5000;
    fd = open(bad, O_RDWR | O_CLOEXEC);
    g_assert_true(qg_image_write_header(fd, bad, info, &error));
    g_assert_no_error(error);
    close(fd);
    restore_refused(bad, "corrupt zstd image", FALSE);
    g_unlink(img);
    g_unlink(bad);
}

/* Frames after the stream's end, under a header whose stored length counts them: QEMU
 * stops reading at the stream's end. Whether the extra bytes find QEMU's pipe closed or
 * reach its buffer (a small frame: then the checksum or the length disagrees), the
 * restore fails with one line naming the image and the cause. */
static void
test_frames_past_end(void)
{
    static const guint64 extra[] = { 4 << 20, 100 };   /* past the pipe's 1 MiB, within */
    g_autofree char *img = g_build_filename(workdir, "good.img", NULL);
    g_autofree char *bad = g_build_filename(workdir, "bad.img", NULL);
    g_autofree char *needle = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *opts[] = { "--compress=zstd", NULL };

    if (!need_qemu()) {
        return;
    }
    g_free(save_guest(img, opts, TRUE, NULL));
    info = qgt_image_info(img);
    needle = g_strdup_printf("%s: compressed data continues past the stream's length %"
                             G_GUINT64_FORMAT, bad, info->stream_length);
    for (gsize i = 0; i < G_N_ELEMENTS(extra); i++) {
        g_autofree char *cmd = g_strdup_printf("cp '%s' '%s' && head -c %" G_GUINT64_FORMAT
                                               " /dev/urandom | zstd -q -c >> '%s' && "
                                               "stat -c %%s '%s'", img, bad, extra[i], bad,
                                               bad);
        g_autofree char *size = qgt_sh_out(cmd);
        g_autoptr(QgImageInfo) more = qgt_image_info(bad);
        g_autoptr(GError) error = NULL;
        int fd = open(bad, O_RDWR | O_CLOEXEC);

        more->stored_length = g_ascii_strtoull(size, NULL, 10) - 4096;
        g_assert_true(qg_image_write_header(fd, bad, more, &error));
        g_assert_no_error(error);
        close(fd);
        restore_refused(bad, needle, FALSE);
    }
    g_unlink(img);
    g_unlink(bad);
}

/* A page header flipped inside a raw block (random data is stored as it is): the
 * bytes reach QEMU before the frame's checksum is checked, and QEMU refuses the stream
 * first. The tool then reads the frames to the end and says the image is corrupt. */
static void
test_corrupt_qemu_first(void)
{
    const char *extra[] = { "--compress=zstd", NULL };
    const char *hit = NULL;
    gsize ilen, dlen;
    g_autofree char *img = g_build_filename(workdir, "good.img", NULL);
    g_autofree char *image = NULL;
    g_autofree char *data = NULL;

    if (!need_qemu()) {
        return;
    }
    g_free(save_guest(img, extra, TRUE, NULL));
    g_assert_true(g_file_get_contents(img, &image, &ilen, NULL));
    g_assert_true(g_file_get_contents(data_file, &data, &dlen, NULL));
    /* the first guest page whose bytes stand verbatim in the image: a raw block */
    for (gsize page = 0; !hit && page < dlen; page += 4096) {
        hit = memmem(image + 4096, ilen - 4096, data + page, 64);
    }
    g_assert_nonnull(hit);
    /* the low byte of the page's be64 header: its flags; PAGE | XBZRLE is no page */
    image[hit - image - 1] ^= 0x40;
    g_assert_true(g_file_set_contents(img, image, (gssize)ilen, NULL));
    restore_refused(img, "corrupt zstd image", FALSE);
    g_unlink(img);
}

/* Version 2 round trip; version 1 unchanged; a newer version and a damaged compression
 * refused with a clear line. */
static void
test_header(void)
{
    guint8 buf[QG_IMAGE_HEADER_SIZE];
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(QgImageInfo) back = NULL;

    info->stream_length = 1000000;
    info->checksum = 42;
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_cmpint(buf[8], ==, 1);
    g_assert_null(memmem(buf, sizeof(buf), "stored-length", 13));   /* as before */

    g_assert_true(qg_image_set_compression(info, "zstd:-7", &error));
    info->stored_length = 300000;
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_cmpint(buf[8], ==, 2);
    back = qg_image_header_decode(buf, sizeof(buf), "img", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(back->compression, ==, "zstd");
    g_assert_cmpint(back->compress_level, ==, -7);
    g_assert_cmpuint(back->stored_length, ==, 300000);
    g_assert_cmpuint(back->stream_length, ==, 1000000);
    g_clear_pointer(&back, qg_image_info_free);

    buf[8] = 5;
    back = qg_image_header_decode(buf, sizeof(buf), "img", &error);
    g_assert_null(back);
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_VERSION);
    assert_contains(error->message, "unsupported image img: format version 5 "
                                    "(this tool reads 1 to 4)");
    g_clear_error(&error);

    /* A version-2 header without its compression is corrupt, not raw. */
    g_assert_true(qg_image_set_compression(info, "zstd", &error));
    g_clear_pointer(&info->compression, g_free);
    g_assert_true(qg_image_header_encode(info, buf, &error));
    buf[8] = 2;
    back = qg_image_header_decode(buf, sizeof(buf), "img", &error);
    g_assert_null(back);
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
    g_clear_error(&error);

    for (gsize i = 0; i < 4; i++) {
        static const char *const bad[] = { "gzip", "zstd:20", "zstd:", "zstd:x" };
        g_assert_false(qg_image_set_compression(info, bad[i], &error));
        assert_contains(error->message, "--compress takes zstd or zstd:LEVEL (LEVEL -7 to 19)");
        g_clear_error(&error);
    }
}

/* Usage errors, before any QEMU is asked: exit 2 and one line. */
static void
test_usage(void)
{
    static const struct { const char *args[8]; const char *needle; } cases_[] = {
        { { "save", "--qmp", "/nonexistent", "x.img", "--compress=gzip", NULL },
          "--compress takes zstd or zstd:LEVEL" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--compress=zstd:99", NULL },
          "not 'zstd:99'" },
        { { "restore", "--qmp", "/nonexistent", "x.img", "--compress", NULL },
          "--compress and --threads are for save" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--threads=2", NULL },
          "--threads needs --compress" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--compress", "--threads=65", NULL },
          "--threads takes 1 to 64" },
        /* the helper's grammar (ioh-opt.h): a flag takes no value, an optional value
         * follows '=' */
        { { "save", "--qmp", "/nonexistent", "x.img", "--live=no", NULL },
          "option '--live' takes no value" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--stats", "json", NULL },
          "write '--stats=json'" },
        { { "save", "--qmp", "/nonexistent", "--bypass-cache", "fadvise", "x.img", NULL },
          "write '--bypass-cache=fadvise'" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--bypass", NULL },
          "unknown option '--bypass'" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases_); i++) {
        qgt_assert_usage(cases_[i].args, cases_[i].needle);
    }
}

/* A good level is taken every time: its parse meets the tool's signal thread starting
 * (GLib 2.74 refused it in 4-15 % of runs before helper/core/ioh-number.c). Each run gets
 * past the options to the missing QMP socket: exit 1, never the usage error. */
static void
test_level_every_time(void)
{
    const char *args[] = { "save", "--qmp", "/nonexistent", "x.img", "--compress=zstd:3",
                           NULL };

    for (guint i = 0; i < 200; i++) {
        g_autofree char *err = NULL;

        g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 1);
        assert_contains(err, "cannot connect to QMP socket /nonexistent");
    }
}

static void
make_files(void)
{
    workdir = ioht_workdir();
    data_file = g_build_filename(workdir, "guest.bin", NULL);
    other_file = g_build_filename(workdir, "other.bin", NULL);
    write_guest_data(data_file);
    ioht_write_random_file(other_file, QGT_DATA_SIZE, 2);
}

int
main(int argc, char **argv)
{
    static const char *const names[] = { "buffered", "direct", "fadvise" };
    static const struct {
        const char *path;
        GTestFunc func;
    } plain[] = {
        { "/qemu/compress/header", test_header },
        { "/qemu/compress/usage", test_usage },
        { "/qemu/compress/level-every-time", test_level_every_time },
        { "/qemu/compress/raw-and-compressed", test_raw_and_compressed },
        { "/qemu/compress/corrupt", test_corrupt },
        { "/qemu/compress/corrupt-qemu-first", test_corrupt_qemu_first },
        { "/qemu/compress/frames-past-end", test_frames_past_end },
    };

    g_test_init(&argc, &argv, NULL);
    if (argc != 2) {
        g_printerr("%s: the first argument is the qemu-iohelper to test\n", argv[0]);
        return 2;
    }
    qgt_set_tool(argv[1]);
    make_files();

    for (gsize i = 0; i < G_N_ELEMENTS(plain); i++) {
        g_test_add_func(plain[i].path, plain[i].func);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p = g_strdup_printf("/qemu/compress/roundtrip/%s", names[i]);
        g_test_add_data_func(p, &cases[i], test_roundtrip);
    }
    return ioht_run_tests(&workdir);
}
