/* test-libwrap-age.c - libwrap against the real iohelper binary, through the public API
 * only: encrypted images (/libwrap/age/...): recipients and identities (0.4), interop
 * with Debian's age, and the identity kept out of every process's command line and
 * environment, of messages, records and status lines.
 */
#include "config.h"

#include <sys/mman.h>

#include "libwrap-util.h"

typedef IohtAgeKey Key;

/* Runs `sh -c @cmd`, which must succeed; its stdout. */
static char *
sh_out(const char *cmd)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    g_autoptr(GError) error = NULL;
    char *out = NULL;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    return out;
}

static Key
key_new(const char *dir, const char *name)
{
    g_autofree char *path = tpath(dir, name);

    return ioht_age_key_new(path);
}

/* Saves @src at offset 4096 of @saved, encrypted as @options say (plus the checksum);
 * returns the stored bytes. */
static guint64
save_with(const char *src, const char *saved, IohWrapOptions *options, IohWrapFlags flags)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .offset = 4096 };
    int fd = open_save(saved);

    g_assert_true(ioh_wrap_options_set_checksum(options, "xxh3", &error));
    wrap = ioh_wrap_new_with_options(&fd, saved, flags, &params, options, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    return ioh_wrap_get_stored_bytes(wrap);
}

/* Restores @stored bytes at 4096 of @saved into @back as @options say; the bytes the
 * consumer got in *@ret_got. */
static gboolean
restore_with(const char *saved, const char *back, guint64 stored, IohWrapOptions *options,
             guint64 *ret_got, GError **error)
{
    g_autoptr(IohWrap) wrap = NULL;
    IohWrapParams params = { .offset = 4096, .length = stored };
    int fd = open_restore(saved);

    wrap = ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, &params, options, error);
    if (!wrap) {
        close(fd);
        return FALSE;
    }
    *ret_got = ioht_drain_to_file(fd, back);
    return ioh_wrap_finish(wrap, error);
}

static IohWrapOptions *
options_identity(const char *file)
{
    IohWrapOptions *o = ioh_wrap_options_new();

    g_assert_true(ioh_wrap_options_set_identity_file(o, file, NULL));
    return o;
}

/* `tail -c +4097 SAVED | age -d -i KEY [| zstd -dc]` is the stream. */
static void
assert_age_reads(const char *saved, const Key *k, gboolean compressed, const char *src)
{
    g_autofree char *plain = g_strdup_printf("%s.plain", saved);
    g_autofree char *cmd = g_strdup_printf("tail -c +4097 '%s' | age -d -i '%s' %s > '%s'",
                                           saved, k->file, compressed ? "| zstd -q -dc" : "",
                                           plain);

    g_free(sh_out(cmd));
    g_assert_true(ioht_files_equal(src, plain));
    g_unlink(plain);
}

/* Two recipients (one given, one in a recipients file), with and without compression:
 * age reads the image with either key; the restore decrypts with an identity file and
 * with an identity fd (a memfd: a key that never was in a file of ours). */
static void
test_age_roundtrip(IohtDir *fx, gconstpointer data)
{
    gboolean compress = GPOINTER_TO_INT(data);
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "back");
    g_autofree char *rfile = tpath(fx->dir, "recipients");
    g_autoptr(IohWrapOptions) so = ioh_wrap_options_new();
    g_autoptr(IohWrapOptions) ro = NULL;
    g_autoptr(IohWrapOptions) ro_fd = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *rtext = NULL;
    Key k1, k2;
    guint64 stored, got = 0;
    int mfd;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k1 = key_new(fx->dir, "k1");
    k2 = key_new(fx->dir, "k2");
    ioht_write_random_file(src, 3 * MIB + 65537, 41);
    rtext = g_strdup_printf("# a recipients file\n%s\n", k2.recipient);
    g_assert_true(g_file_set_contents(rfile, rtext, -1, NULL));
    g_assert_true(ioh_wrap_options_add_recipient(so, k1.recipient, &error));
    g_assert_true(ioh_wrap_options_add_recipients_file(so, rfile, &error));
    g_assert_true(ioh_wrap_options_set_compress(so, compress ? "zstd" : NULL, &error));
    stored = save_with(src, saved, so, IOH_WRAP_NONE);
    g_assert_cmpuint(stored, >, compress ? 0 : 3 * MIB + 65537);
    assert_age_reads(saved, &k1, compress, src);
    assert_age_reads(saved, &k2, compress, src);

    ro = options_identity(k1.file);
    g_assert_true(ioh_wrap_options_set_decompress(ro, compress, NULL));
    g_assert_true(restore_with(saved, back, stored, ro, &got, &error));
    g_assert_no_error(error);
    g_assert_true(ioht_files_equal(src, back));

    mfd = memfd_create("identity", MFD_CLOEXEC);
    g_assert_cmpint(write(mfd, k2.secret, strlen(k2.secret)), ==, (ssize_t)strlen(k2.secret));
    g_assert_cmpint(lseek(mfd, 0, SEEK_SET), ==, 0);
    g_assert_true(ioh_wrap_options_set_identity_fd(ro_fd, mfd, &error));
    close(mfd);    /* the options hold their own copy */
    g_assert_true(ioh_wrap_options_set_decompress(ro_fd, compress, NULL));
    g_assert_true(restore_with(saved, back, stored, ro_fd, &got, &error));
    g_assert_no_error(error);
    g_assert_true(ioht_files_equal(src, back));
    ioht_age_key_clear(&k1);
    ioht_age_key_clear(&k2);
}

/* Another key's identity: the restore fails naming the image, and the consumer got
 * nothing (no chunk authenticated). A loose identity file (0644) is refused by the
 * constructor, naming it, before anything is spawned; the caller's fd is left alone. */
static void
test_age_wrong_and_loose(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "back");
    g_autoptr(IohWrapOptions) so = ioh_wrap_options_new();
    g_autoptr(IohWrapOptions) wrong = NULL;
    g_autoptr(IohWrapOptions) loose = NULL;
    g_autoptr(GError) error = NULL;
    IohWrapParams params = { .offset = 4096 };
    Key k1, k2;
    guint64 stored, got = 1;
    int fd, before;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k1 = key_new(fx->dir, "k1");
    k2 = key_new(fx->dir, "k2");
    ioht_write_random_file(src, MIB, 42);
    g_assert_true(ioh_wrap_options_add_recipient(so, k1.recipient, &error));
    stored = save_with(src, saved, so, IOH_WRAP_NONE);

    wrong = options_identity(k2.file);
    g_assert_false(restore_with(saved, back, stored, wrong, &got, &error));
    g_assert_nonnull(error);
    g_test_message("wrong identity: %s", error->message);
    g_assert_nonnull(strstr(error->message, saved));
    g_assert_null(strstr(error->message, k2.secret));
    g_assert_cmpuint(got, ==, 0);
    g_clear_error(&error);

    g_assert_cmpint(g_chmod(k1.file, 0644), ==, 0);
    loose = options_identity(k1.file);
    fd = before = open_restore(saved);
    g_assert_null(ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, &params, loose,
                                            &error));
    g_assert_error(error, IOH_ERROR, EPERM);
    g_assert_nonnull(strstr(error->message, k1.file));
    g_assert_nonnull(strstr(error->message, "0600"));
    g_assert_cmpint(fd, ==, before);
    g_assert_true(fd_is_open(fd));
    g_assert_cmpint(waitpid(-1, NULL, WNOHANG), <, 0);   /* nothing spawned */
    close(fd);
    ioht_age_key_clear(&k1);
    ioht_age_key_clear(&k2);
}

/* The setters refuse what is not an age recipient (never quoting it) and NULLs; the
 * constructor refuses recipients on a restore and an identity on a save. */
static void
test_age_refuses(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    static const char *const bad[] = {
        "", "age1", "AGE1QL3Z7HJY54PW3HYWW5AYYFG7ZQGVC7W3J2ELW8ZMRJ2KG5SFN9AQMCAC8P",
        "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8q",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHsKLqeplhpW+uObz5dvMgjz1OxfM/XXUB+VHtZ6isGN",
        "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
    };
    static const char good[] = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *idf = tpath(fx->dir, "id");
    g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
    g_autoptr(GError) error = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(ioh_wrap_options_add_recipient(o, bad[i], &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_test_message("%s", error->message);
        g_assert_true(strlen(bad[i]) < 8 || !strstr(error->message, bad[i]));
        g_clear_error(&error);
    }
    g_assert_false(ioh_wrap_options_add_recipient(NULL, good, &error));
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_add_recipients_file(o, "", &error));
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_identity_file(NULL, "x", &error));
    g_clear_error(&error);
    g_assert_false(ioh_wrap_options_set_identity_fd(o, 999999, &error));
    g_clear_error(&error);

    ioht_write_random_file(saved, 8192, 5);
    g_assert_true(g_file_set_contents(idf, "", -1, NULL));
    for (int save = 0; save < 2; save++) {
        g_autoptr(IohWrapOptions) m = ioh_wrap_options_new();
        int fd = save ? open_save(saved) : open_restore(saved);
        int before = fd;

        if (save) {
            g_assert_true(ioh_wrap_options_set_identity_file(m, idf, NULL));
        } else {
            g_assert_true(ioh_wrap_options_add_recipient(m, good, NULL));
        }
        g_assert_null(ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, NULL, m,
                                                &error));
        g_assert_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_INVALID);
        g_assert_nonnull(strstr(error->message, save ? "an identity is for a restore"
                                                     : "recipients are for a save"));
        g_assert_cmpint(fd, ==, before);
        g_assert_cmpint(waitpid(-1, NULL, WNOHANG), <, 0);
        g_clear_error(&error);
        close(fd);
    }
}

/* The helper as a wrapper that records what every process involved shows to others:
 * its own command line and environment (those of the helper it execs), its parent's
 * (the process using libwrap), the status lines (a copy of fd 3 on its way to libwrap)
 * and a --record. */
static const char spy_script[] =
    "#!/bin/bash\n"
    "d=$(dirname \"$0\")\n"
    "tr '\\0' '\\n' < /proc/$$/cmdline >> \"$d/seen.cmdline\"\n"
    "tr '\\0' '\\n' < /proc/$$/environ >> \"$d/seen.environ\"\n"
    "tr '\\0' '\\n' < /proc/$PPID/cmdline >> \"$d/seen.cmdline\"\n"
    "tr '\\0' '\\n' < /proc/$PPID/environ >> \"$d/seen.environ\"\n"
    "exec 5>&3\n"
    "\"$IOH_REAL_HELPER\" --record=\"$d/seen.record\" \"$@\" 3> >(tee -a \"$d/seen.status\" >&5)\n"
    "rc=$?\n"
    "exec 3>&- 5>&-\n"
    "wait $!\n"
    "exit $rc\n";

/* @key's secret line, and its body alone (lower case too), in no file seen.* nor @text. */
static void
assert_no_secret(const char *dir, const Key *k, const char *text)
{
    static const char *const files[] = { "seen.cmdline", "seen.environ", "seen.status",
                                         "seen.record" };
    const char *body = k->secret + strlen("AGE-SECRET-KEY-1");
    g_autofree char *lower = g_ascii_strdown(body, -1);

    for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = tpath(dir, files[i]);
        g_autofree char *seen = NULL;

        g_assert_true(g_file_get_contents(path, &seen, NULL, NULL));
        g_assert_cmpuint(strlen(seen), >, 0);
        g_assert_null(strstr(seen, body));
        g_assert_null(strstr(seen, lower));
        g_assert_null(strstr(seen, "AGE-SECRET-KEY"));
    }
    if (text) {
        g_assert_null(strstr(text, body));
        g_assert_null(strstr(text, "AGE-SECRET-KEY"));
    }
}

/* A save and a restore (right identity, then a wrong one) through the spy: the identity
 * is on fd 4 (`--identity-fd=4`), and its secret is in no command line, no environment,
 * no status line, no record and no error message. */
static void
test_age_secrets(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *real = g_strdup(g_getenv("IOHELPER_PATH"));
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "back");
    g_autofree char *spy = NULL;
    g_autofree char *cmdlines = NULL;
    g_autofree char *cmdline_path = tpath(fx->dir, "seen.cmdline");
    g_autoptr(IohWrapOptions) so = ioh_wrap_options_new();
    g_autoptr(IohWrapOptions) ro = NULL;
    g_autoptr(IohWrapOptions) wrong = NULL;
    g_autoptr(GError) error = NULL;
    Key k1, k2;
    guint64 stored, got;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k1 = key_new(fx->dir, "k1");
    k2 = key_new(fx->dir, "k2");
    ioht_write_random_file(src, MIB + 5, 43);
    g_setenv("IOH_REAL_HELPER", real, TRUE);
    spy = fake_helper(fx->dir, "spy-helper", spy_script);
    g_assert_true(ioh_wrap_options_add_recipient(so, k1.recipient, &error));
    stored = save_with(src, saved, so, IOH_WRAP_NONE);
    ro = options_identity(k1.file);
    g_assert_true(restore_with(saved, back, stored, ro, &got, &error));
    g_assert_no_error(error);
    g_assert_true(ioht_files_equal(src, back));
    wrong = options_identity(k2.file);
    g_assert_false(restore_with(saved, back, stored, wrong, &got, &error));
    g_setenv("IOHELPER_PATH", real, TRUE);
    g_unsetenv("IOH_REAL_HELPER");

    g_assert_true(g_file_get_contents(cmdline_path, &cmdlines, NULL, NULL));
    g_assert_nonnull(strstr(cmdlines, "--identity-fd=4"));
    g_assert_nonnull(strstr(cmdlines, k1.recipient));    /* public: it may be seen */
    assert_no_secret(fx->dir, &k1, error->message);
    assert_no_secret(fx->dir, &k2, error->message);
    ioht_age_key_clear(&k1);
    ioht_age_key_clear(&k2);
}

/* The host's config names a recipient: a save that asks for none is encrypted to it, and
 * ioh_wrap_get_encryption() says so (the caller must record it); without the config it
 * says NULL; a restore reports "age" when it decrypted. */
static void
test_age_host_config(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    g_autofree char *src = tpath(fx->dir, "src");
    g_autofree char *saved = tpath(fx->dir, "vm.save");
    g_autofree char *back = tpath(fx->dir, "back");
    g_autofree char *conf = tpath(fx->dir, "iohelper.conf");
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    IohWrapParams params = { .offset = 4096 };
    Key k;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k = key_new(fx->dir, "k");
    ioht_write_random_file(src, MIB + 9, 44);
    text = g_strdup_printf("[iohelper]\nrecipients=%s\n", k.recipient);
    g_assert_true(g_file_set_contents_full(conf, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0644, NULL));
    for (int with_conf = 0; with_conf < 2; with_conf++) {
        g_autoptr(IohWrapOptions) o = ioh_wrap_options_new();
        g_autoptr(IohWrap) wrap = NULL;
        int fd = open_save(saved);

        g_setenv("IOHELPER_CONF", with_conf ? conf : "/nonexistent/iohelper.conf", TRUE);
        g_assert_true(ioh_wrap_options_set_checksum(o, "xxh3", NULL));
        wrap = ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_NONE, &params, o, &error);
        g_assert_no_error(error);
        g_assert_null(ioh_wrap_get_encryption(wrap));     /* not before the finish */
        g_assert_true(ioht_feed_file(src, fd));
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_cmpstr(ioh_wrap_get_encryption(wrap), ==, with_conf ? "age" : NULL);
    }
    g_unsetenv("IOHELPER_CONF");
    assert_age_reads(saved, &k, FALSE, src);
    {
        g_autoptr(IohWrapOptions) ro = options_identity(k.file);
        g_autoptr(IohWrap) wrap = NULL;
        IohWrapParams rp = { .offset = 4096 };
        int fd = open_restore(saved);

        wrap = ioh_wrap_new_with_options(&fd, saved, IOH_WRAP_POLLABLE, &rp, ro, &error);
        g_assert_no_error(error);
        ioht_drain_to_file(fd, back);
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_cmpstr(ioh_wrap_get_encryption(wrap), ==, "age");
    }
    g_assert_true(ioht_files_equal(src, back));
    g_assert_null(ioh_wrap_get_encryption(NULL));
    ioht_age_key_clear(&k);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    ioht_dir_add("/libwrap/age/roundtrip/raw", GINT_TO_POINTER(FALSE), test_age_roundtrip);
    ioht_dir_add("/libwrap/age/roundtrip/compressed", GINT_TO_POINTER(TRUE),
                 test_age_roundtrip);
    ioht_dir_add("/libwrap/age/wrong-and-loose-identity", NULL, test_age_wrong_and_loose);
    ioht_dir_add("/libwrap/age/refuses", NULL, test_age_refuses);
    ioht_dir_add("/libwrap/age/secrets", NULL, test_age_secrets);
    ioht_dir_add("/libwrap/age/host-config", NULL, test_age_host_config);
    return g_test_run();
}
