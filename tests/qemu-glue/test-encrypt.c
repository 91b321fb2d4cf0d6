/* test-encrypt.c - encrypted images: `qemu-iohelper save --recipient` of a real QEMU
 * guest (with and without --compress), restored byte for byte with --identity; the
 * image part is plain age (Debian's age reads it); no page of the guest's RAM is in the
 * image; a restore without the identity, with a wrong or loose one, or of an image with
 * a flipped byte is refused with one line and the guest never resumes; the identity's
 * secret is in no process's command line or environment, nor in any message. And the
 * header's version 3, without QEMU. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-image.h"
#include "qg-image-nbd.h"
#include "qg-test.h"

#define PAGE 4096
#define ENC_MEMBER "\"encryption\":{\"format\":\"age\"}"

/* The suite's files: a work folder, the source guest's data, what the destination
 * holds before a restore, and two age key pairs. */
static char *workdir, *data_file, *other_file;

typedef IohtAgeKey Key;

static Key k1, k2;

static gboolean
need_tools(gboolean qemu)
{
    if (!ioht_skip_unless_age()) {
        return FALSE;
    }
    if (qemu && !qgt_qemu_binary()) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
        return FALSE;
    }
    return TRUE;
}

static void
key_make(Key *k, const char *name)
{
    g_autofree char *path = g_build_filename(workdir, name, NULL);

    *k = ioht_age_key_new(path);
}

static char *
save_guest(const char *img, const char *const *extra, const char *src_dump,
           const char *ram_dump)
{
    return qgt_save_guest(data_file, img, extra, TRUE, src_dump, ram_dump);
}

static char *
restore_guest(const char *img, const char *opt1, const char *opt2, const char *want)
{
    const char *opts[] = { opt1, opt2 };

    return qgt_restore_guest(img, other_file, opts, want);
}

/* The image part is one age file: `tail -c +4097 IMG | age -d -i KEY` (then `zstd -dc`
 * when compressed) is the stream, of the header's length and checksum. */
static void
check_age_part(const char *img, const QgImageInfo *info, const Key *k)
{
    g_autofree char *stream = g_build_filename(workdir, "stream", NULL);
    g_autofree char *cmd = g_strdup_printf("tail -c +4097 '%s' | age -d -i '%s' %s > '%s' && "
                                           "xxhsum -H3 '%s'", img, k->file,
                                           info->compression ? "| zstd -q -dc" : "", stream,
                                           stream);
    g_autofree char *sum = qg_image_checksum_to_string(info->checksum);
    g_autofree char *out = qgt_sh_out(cmd);
    struct stat st;

    g_assert_cmpint(g_stat(stream, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, info->stream_length);
    g_assert_nonnull(strstr(out, sum + strlen("xxh3-64:")));
    g_unlink(stream);
}

/* A Rabin-Karp hash of @len bytes, base B (mod 2^64). */
#define B 1099511628211ull

static guint64
hash_bytes(const guint8 *p, gsize len)
{
    guint64 h = 0;

    for (gsize i = 0; i < len; i++) {
        h = h * B + p[i];
    }
    return h;
}

/* How many distinct 4 KiB pages of @ram (aligned in it) appear anywhere in @img, at any
 * byte offset: a rolling hash over the image, each hit compared byte for byte. */
static guint
pages_found(const char *ram, const char *img)
{
    g_autoptr(GMappedFile) rm = g_mapped_file_new(ram, FALSE, NULL);
    g_autoptr(GMappedFile) im = g_mapped_file_new(img, FALSE, NULL);
    g_autoptr(GHashTable) pages = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) found = g_hash_table_new(NULL, NULL);
    const guint8 *r = (const guint8 *)g_mapped_file_get_contents(rm);
    const guint8 *m = (const guint8 *)g_mapped_file_get_contents(im);
    gsize rlen = g_mapped_file_get_length(rm), mlen = g_mapped_file_get_length(im);
    g_autofree guint64 *keys = g_new(guint64, rlen / PAGE);
    guint64 top = 1, h;

    for (gsize i = 0; i < PAGE - 1; i++) {
        top *= B;    /* B^(PAGE-1): the weight of the byte leaving the window */
    }
    for (gsize i = 0; i < rlen / PAGE; i++) {
        keys[i] = hash_bytes(r + i * PAGE, PAGE);
        g_hash_table_insert(pages, &keys[i], GSIZE_TO_POINTER(i + 1));
    }
    if (mlen < PAGE) {
        return 0;
    }
    h = hash_bytes(m, PAGE);
    for (gsize at = 0;; at++) {
        gpointer v = g_hash_table_lookup(pages, &h);

        if (v && memcmp(r + (GPOINTER_TO_SIZE(v) - 1) * PAGE, m + at, PAGE) == 0) {
            g_hash_table_add(found, v);
        }
        if (at + PAGE >= mlen) {
            break;
        }
        h = (h - m[at] * top) * B + m[at + PAGE];
    }
    return g_hash_table_size(found);
}

typedef struct {
    const char *compress;   /* --compress... or NULL */
    const char *mode;       /* --bypass-cache=... or NULL */
    const char *threads;    /* --threads=N or NULL */
} Case;

static const Case cases[] = {
    { NULL, NULL, NULL },
    { "--compress=zstd", "--bypass-cache=direct", "--threads=2" },
};

/* Save encrypted to two recipients (one given, one from a recipients file), restore
 * with either identity: the paused source's RAM and the restored guest's are
 * identical; the header is version 3 and says age; age reads the image part; and no
 * page of the guest's whole RAM is in the image, where a plain save of the same guest
 * holds thousands of them (the scan can fail). */
static void
test_roundtrip(gconstpointer data)
{
    const Case *c = data;
    g_autofree char *img = g_build_filename(workdir, "e.img", NULL);
    g_autofree char *plain = g_build_filename(workdir, "p.img", NULL);
    g_autofree char *src_dump = g_build_filename(workdir, "src.dump", NULL);
    g_autofree char *ram = g_build_filename(workdir, "ram.dump", NULL);
    g_autofree char *rfile = g_build_filename(workdir, "recipients", NULL);
    g_autofree char *r1 = NULL;
    g_autofree char *rf = g_strdup_printf("--recipients-file=%s", rfile);
    g_autofree char *id2 = g_strdup_printf("--identity=%s", k2.file);
    g_autofree char *out = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[8] = { "--stats=json", NULL, NULL };
    const char *plain_extra[] = { c->compress, c->mode, NULL };
    int n = 3;
    struct stat st;

    if (!need_tools(TRUE)) {
        return;
    }
    r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    extra[1] = r1;
    extra[2] = rf;
    for (const char *const *o = &c->compress; o <= &c->threads; o++) {
        if (*o) {
            extra[n++] = *o;
        }
    }
    g_assert_true(g_file_set_contents(rfile, k2.recipient, -1, NULL));
    out = save_guest(img, extra, src_dump, ram);
    g_assert_nonnull(strstr(out, "\"encryption\":\"age\""));
    g_assert_true(ioht_files_equal(src_dump, data_file));
    info = qgt_image_info(img);
    g_assert_cmpuint(qgt_image_version(img), ==, QG_IMAGE_FORMAT_VERSION_ENCRYPTED);
    g_assert_cmpstr(info->encryption, ==, "age");
    g_assert_cmpstr(info->compression, ==, c->compress ? "zstd" : NULL);
    g_assert_cmpint(g_stat(img, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, 4096 + info->stored_length);
    check_age_part(img, info, &k1);
    check_age_part(img, info, &k2);
    g_assert_cmpuint(pages_found(ram, img), ==, 0);
    g_free(save_guest(plain, plain_extra, NULL, NULL));
    g_assert_cmpuint(pages_found(ram, plain), >, 1000);

    g_clear_pointer(&out, g_free);
    out = restore_guest(img, id2, c->mode, src_dump);
    g_assert_nonnull(strstr(out, "\"encryption\":\"age\""));
    g_unlink(img);
    g_unlink(plain);
    g_unlink(ram);
    g_unlink(src_dump);
}

static char *
restore_refused(const char *img, const char *opt, const char *needle, gboolean untouched)
{
    return qgt_restore_refused(img, other_file, opt, needle, untouched);
}

/* Flips one byte at @at of a copy of @img into @bad. */
static void
flip_copy(const char *img, const char *bad, guint64 len, guint64 at)
{
    guint8 b;
    int fd;

    qgt_copy_truncated(img, bad, len);
    fd = open(bad, O_RDWR | O_CLOEXEC);
    g_assert_cmpint(pread(fd, &b, 1, (off_t)at), ==, 1);
    b ^= 0x01;
    g_assert_cmpint(pwrite(fd, &b, 1, (off_t)at), ==, 1);
    close(fd);
}

/* No identity (the line names --identity), a wrong one, a loose identity file, a damaged
 * version byte, a plain image restored with an identity: refused before QEMU gets a byte. One flipped byte in the middle of the
 * payload: the helper has delivered the chunks before it, the restore fails with one
 * line, exit 1, and the guest never resumes. */
static void
test_refused(void)
{
    g_autofree char *img = g_build_filename(workdir, "r.img", NULL);
    g_autofree char *bad = g_build_filename(workdir, "bad.img", NULL);
    g_autofree char *loose = g_build_filename(workdir, "loose-key", NULL);
    g_autofree char *r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *id2 = g_strdup_printf("--identity=%s", k2.file);
    g_autofree char *idl = g_strdup_printf("--identity=%s", loose);
    g_autofree char *line = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { r1, NULL };
    g_autofree char *keytext = NULL;

    if (!need_tools(TRUE)) {
        return;
    }
    g_free(save_guest(img, extra, NULL, NULL));
    info = qgt_image_info(img);

    line = restore_refused(img, NULL, "--identity=FILE", TRUE);
    g_assert_nonnull(strstr(line, img));
    g_assert_cmpuint(strstr(line, img) - line, ==, strlen("qemu-iohelper: read "));
    g_assert_null(strstr(strstr(line, img) + strlen(img), img));   /* named once */
    g_clear_pointer(&line, g_free);
    line = restore_refused(img, id2, img, TRUE);
    g_assert_null(strstr(line, k2.secret));
    g_clear_pointer(&line, g_free);

    g_assert_true(g_file_get_contents(k1.file, &keytext, NULL, NULL));
    g_assert_true(g_file_set_contents_full(loose, keytext, -1, G_FILE_SET_CONTENTS_NONE,
                                           0644, NULL));
    g_assert_cmpint(g_chmod(loose, 0644), ==, 0);
    g_free(restore_refused(img, idl, loose, TRUE));   /* the line names the key file */

    flip_copy(img, bad, 4096 + info->stored_length, 8);   /* the version: 3 -> 2 */
    g_free(restore_refused(bad, id1, "corrupt image header", TRUE));

    flip_copy(img, bad, 4096 + info->stored_length, 4096 + info->stored_length / 2);
    g_free(restore_refused(bad, id1, bad, FALSE));

    /* a plain image in place of the encrypted one (anyone who can write the storage can
     * make one): an identity given says it must be encrypted */
    g_free(save_guest(bad, NULL, NULL, NULL));
    g_free(restore_refused(bad, id1, "not an encrypted image, but --identity was given",
                           TRUE));
    g_unlink(img);
    g_unlink(bad);
    g_unlink(loose);
}

/* The helper as a wrapper that records its own command line and environment (those of
 * the helper it execs) and its parent's (qemu-iohelper's), and a --record. */
static const char spy_script[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "tr '\\0' '\\n' < /proc/$$/cmdline >> \"$d/seen\"\n"
    "tr '\\0' '\\n' < /proc/$$/environ >> \"$d/seen\"\n"
    "tr '\\0' '\\n' < /proc/$PPID/cmdline >> \"$d/seen\"\n"
    "tr '\\0' '\\n' < /proc/$PPID/environ >> \"$d/seen\"\n"
    "exec \"$IOH_REAL_HELPER\" --record=\"$d/seen\" \"$@\"\n";

/* A save and a restore through the spy, --stats and --progress on, then a restore with
 * the wrong identity: the secret is in no command line, environment, record, stats line
 * or message; the helper got the identity as fd 4. */
static void
test_secrets(void)
{
    g_autofree char *img = g_build_filename(workdir, "s.img", NULL);
    g_autofree char *spy = g_build_filename(workdir, "spy-helper", NULL);
    g_autofree char *seen_path = g_build_filename(workdir, "seen", NULL);
    g_autofree char *real = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autofree char *r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *id2 = g_strdup_printf("--identity=%s", k2.file);
    g_autofree char *out = NULL;
    g_autofree char *line = NULL;
    g_autofree char *seen = NULL;
    g_autofree char *all = NULL;
    const char *extra[] = { r1, "--stats", NULL };

    if (!need_tools(TRUE)) {
        return;
    }
    g_assert_true(g_file_set_contents(spy, spy_script, -1, NULL));
    g_assert_cmpint(g_chmod(spy, 0755), ==, 0);
    g_setenv("IOH_REAL_HELPER", real, TRUE);
    g_setenv("IOHELPER_PATH", spy, TRUE);
    g_free(save_guest(img, extra, NULL, NULL));
    out = restore_guest(img, id1, "--progress", data_file);
    line = restore_refused(img, id2, img, TRUE);
    g_setenv("IOHELPER_PATH", real, TRUE);
    g_unsetenv("IOH_REAL_HELPER");

    g_assert_true(g_file_get_contents(seen_path, &seen, NULL, NULL));
    g_assert_nonnull(strstr(seen, "--identity-fd=4"));
    g_assert_nonnull(strstr(seen, "\"direction\":\"restore\""));   /* the record */
    all = g_strconcat(seen, out, line, NULL);
    for (const Key *k = &k1; k; k = k == &k1 ? &k2 : NULL) {
        const char *body = k->secret + strlen("AGE-SECRET-KEY-1");
        g_autofree char *lower = g_ascii_strdown(body, -1);

        g_assert_null(strstr(all, body));
        g_assert_null(strstr(all, lower));
    }
    g_assert_null(strstr(all, "AGE-SECRET-KEY"));
    g_unlink(img);
    g_unlink(seen_path);
}

/* Version 3 round trips with and without compression; a version-3 header without its
 * encryption, or an older version with one, is corrupt; the fixed part says 3. */
static void
test_header(void)
{
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(GError) error = NULL;
    guint8 buf[QG_IMAGE_HEADER_SIZE];

    info->stream_length = 1000000;
    info->stored_length = 1000244;
    info->encryption = g_strdup("age");
    for (int compressed = 0; compressed < 2; compressed++) {
        g_autoptr(QgImageInfo) back = NULL;

        if (compressed) {
            g_assert_true(qg_image_set_compression(info, "zstd:3", &error));
        }
        g_assert_true(qg_image_header_encode(info, buf, &error));
        g_assert_cmpuint(buf[8], ==, QG_IMAGE_FORMAT_VERSION_ENCRYPTED);
        g_assert_nonnull(memmem(buf, sizeof(buf), ENC_MEMBER, strlen(ENC_MEMBER)));
        back = qg_image_header_decode(buf, sizeof(buf), "img", &error);
        g_assert_no_error(error);
        g_assert_cmpstr(back->encryption, ==, "age");
        g_assert_cmpstr(back->compression, ==, compressed ? "zstd" : NULL);
        g_assert_cmpuint(back->stored_length, ==, 1000244);
        /* an older version byte under the same metadata: corrupt, never plain */
        buf[8] = compressed ? 2 : 1;
        g_assert_null(qg_image_header_decode(buf, sizeof(buf), "img", &error));
        g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
        g_assert_nonnull(strstr(error->message, "recorded"));
        g_clear_error(&error);
    }
    g_clear_pointer(&info->encryption, g_free);
    g_clear_pointer(&info->compression, g_free);
    g_assert_true(qg_image_header_encode(info, buf, &error));
    buf[8] = 3;
    g_assert_null(qg_image_header_decode(buf, sizeof(buf), "img", &error));
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "encryption"));
}

/* Usage errors, before any QEMU is asked: exit 2 and one line, never quoting a key. */
static void
test_usage(void)
{
    static const struct { const char *args[8]; const char *needle; } cases_[] = {
        { { "restore", "--qmp", "/nonexistent", "x.img", "--recipient=age1ql3z7hjy54pw3hy"
            "ww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p", NULL }, "are for save" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--identity=/k", NULL },
          "--identity for restore" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--recipient=AGE-SECRET-KEY-1QQQQQQQ"
            "QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ", NULL },
          "--recipient: not an age X25519 recipient (age1...)" },
        { { "save", "--qmp", "/nonexistent", "x.img", "--recipients-file=", NULL },
          "empty value" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases_); i++) {
        qgt_assert_usage(cases_[i].args, cases_[i].needle);
    }
}

/* The host's /etc/iohelper.conf names a recipient and the save names none: the helper
 * encrypts, the tool learns it from the helper's result line and writes a version-3
 * header, so the restore asks for --identity (QEMU untouched) instead of feeding QEMU
 * ciphertext, and restores byte-exact with it. */
static void
test_host_config(void)
{
    g_autofree char *img = g_build_filename(workdir, "h.img", NULL);
    g_autofree char *conf = g_build_filename(workdir, "iohelper.conf", NULL);
    g_autofree char *text = g_strdup_printf("[iohelper]\nrecipients=%s\n", k1.recipient);
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autofree char *out = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *extra[] = { "--stats=json", NULL };

    if (!need_tools(TRUE)) {
        return;
    }
    g_assert_true(g_file_set_contents_full(conf, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0644, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    out = save_guest(img, extra, NULL, NULL);
    g_unsetenv("IOHELPER_CONF");
    g_assert_nonnull(strstr(out, "\"encryption\":\"age\""));
    g_assert_cmpuint(qgt_image_version(img), ==, QG_IMAGE_FORMAT_VERSION_ENCRYPTED);
    info = qgt_image_info(img);
    check_age_part(img, info, &k1);
    g_free(restore_refused(img, NULL, "--identity=FILE", TRUE));
    g_free(restore_guest(img, id1, NULL, data_file));
    g_unlink(img);
}

/* To an NBD export (nbdkit's memory plugin): the header at 0 says age, the image is read
 * back through the export, and the restore with --identity is byte-exact. */
static void
test_nbd(void)
{
    g_autofree char *sock = g_build_filename(workdir, "e.sock", NULL);
    g_autofree char *uri = g_strdup_printf("nbd+unix:///?socket=%s", sock);
    g_autofree char *r1 = g_strdup_printf("--recipient=%s", k1.recipient);
    g_autofree char *id1 = g_strdup_printf("--identity=%s", k1.file);
    g_autoptr(QgImageNbd) img = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *plugin[] = { "memory", "300M", NULL };
    const char *extra[] = { r1, NULL };
    GPid pid;

    if (!need_tools(TRUE) || !(pid = ioht_nbdkit_start(workdir, sock, plugin))) {
        return;
    }
    g_free(save_guest(uri, extra, NULL, NULL));
    img = qg_image_nbd_open(uri, FALSE, 0, NULL, NULL);
    g_assert_nonnull(img);
    info = qg_image_nbd_read_header(img, NULL);
    g_assert_nonnull(info);
    g_assert_cmpstr(info->encryption, ==, "age");
    g_assert_cmpuint(info->stored_length, >, info->stream_length);
    g_clear_pointer(&img, qg_image_nbd_free);
    g_free(restore_refused(uri, NULL, "--identity", TRUE));
    g_free(restore_guest(uri, id1, NULL, data_file));
    kill(pid, SIGKILL);
}

int
main(int argc, char **argv)
{
    g_autofree char *keygen = g_find_program_in_path("age-keygen");
    int ret;

    qgt_test_init(&argc, &argv);
    qgt_guest_files(&workdir, &data_file, &other_file, 28);
    if (keygen) {
        key_make(&k1, "k1");
        key_make(&k2, "k2");
    }
    g_test_add_func("/qemu/encrypt/header", test_header);
    g_test_add_func("/qemu/encrypt/usage", test_usage);
    g_test_add_data_func("/qemu/encrypt/roundtrip/raw", &cases[0], test_roundtrip);
    g_test_add_data_func("/qemu/encrypt/roundtrip/compressed-direct", &cases[1],
                         test_roundtrip);
    g_test_add_func("/qemu/encrypt/refused", test_refused);
    g_test_add_func("/qemu/encrypt/secrets", test_secrets);
    g_test_add_func("/qemu/encrypt/host-config", test_host_config);
    g_test_add_func("/qemu/encrypt/nbd", test_nbd);
    ret = g_test_run();
    ioht_workdir_remove(workdir);
    return ret;
}
