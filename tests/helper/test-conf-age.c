/* test-conf-age.c - the host's recipients in the config file (ioh-conf-age.h): every save
 * that names none is encrypted to them (the standalone form, and libvirt's form as
 * libwrap uses it, with --status-fd), the command line's recipients win, restores are
 * untouched, a malformed recipient is a usage error naming the file and never quoting
 * it. (libvirt's own saves refuse them: the tests /helper/libvirt/conf-recipients-refused/...)
 */
#include "iohelper-util.h"

typedef IohtAgeKey Key;

/* Runs `sh -c @cmd`; its exit code. */
static int
sh(const char *cmd)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                               NULL, NULL, NULL, &status, NULL));
    return ioht_exit_code(status);
}

static Key
key_new(const char *name)
{
    g_autofree char *path = wpath(name);

    return ioht_age_key_new(path);
}

/* The config file @text (mode 0644: the helper refuses a group-writable one), in use
 * from now on. Its path. */
static char *
use_conf(const char *text)
{
    char *conf = wpath("iohelper.conf");

    g_assert_true(g_file_set_contents_full(conf, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0644, NULL));
    g_setenv("IOHELPER_CONF", conf, TRUE);
    return conf;
}

/* `age -d -i KEY` of @img's bytes from @offset is @src: 0 (else age's exit code). */
static int
age_reads(const char *img, guint64 offset, const Key *k, const char *src)
{
    g_autofree char *cmd = g_strdup_printf("tail -c +%" G_GUINT64_FORMAT " '%s' | "
                                           "age -d -i '%s' | cmp -s - '%s'", offset + 1, img,
                                           k->file, src);

    return sh(cmd);
}

/* A standalone save (`- IMG`) names no recipient: it is encrypted to the config's two
 * (a list and a recipients file), its stats say so; a save naming its own recipient is
 * encrypted to that one only; a restore with an identity and a copy are untouched. */
static void
test_conf_standalone(void)
{
    g_autofree char *src = wpath("ca-src");
    g_autofree char *img = wpath("ca-img");
    g_autofree char *back = wpath("ca-back");
    g_autofree char *rfile = wpath("ca-recipients");
    g_autofree char *conf = NULL;
    g_autofree char *text = NULL;
    g_autofree char *err = NULL;
    g_autofree char *own = NULL;
    g_autofree char *id = NULL;
    const char *stats[] = { "--stats=json", NULL };
    Key k1, k2, k3;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k1 = key_new("ca-k1");
    k2 = key_new("ca-k2");
    k3 = key_new("ca-k3");
    ioht_write_random_file(src, MiB + 4097, 31);
    g_assert_true(g_file_set_contents(rfile, k2.recipient, -1, NULL));
    text = g_strdup_printf("[iohelper]\nrecipients=%s;\nrecipients-file=%s\n", k1.recipient,
                           rfile);
    conf = use_conf(text);
    {
        g_auto(GStrv) save = helper_argv(ioht_helper_path(), stats, "-", img);
        int fd = -1;

        g_assert_cmpint(run_fed(save, src, fd, &err), ==, 0);
    }
    ioht_assert_contains(err, "\"encryption\":\"age\"");
    ioht_assert_contains(err, "\"encryption_recipients\":2");
    g_assert_cmpint(age_reads(img, 0, &k1, src), ==, 0);
    g_assert_cmpint(age_reads(img, 0, &k2, src), ==, 0);

    own = g_strdup_printf("--recipient=%s", k3.recipient);
    {
        const char *opts[] = { own, NULL };
        g_auto(GStrv) save = helper_argv(ioht_helper_path(), opts, "-", img);

        g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    }
    g_assert_cmpint(age_reads(img, 0, &k3, src), ==, 0);
    g_assert_cmpint(age_reads(img, 0, &k1, src), !=, 0);

    id = g_strdup_printf("--identity=%s", k3.file);
    {
        const char *opts[] = { id, NULL };
        g_auto(GStrv) restore = helper_argv(ioht_helper_path(), opts, img, "-");

        g_assert_cmpint(run_drained(restore, open(img, O_RDONLY | O_CLOEXEC), back, NULL),
                        ==, 0);
    }
    g_assert_true(ioht_files_equal(src, back));
    g_unsetenv("IOHELPER_CONF");
    ioht_age_key_clear(&k1);
    ioht_age_key_clear(&k2);
    ioht_age_key_clear(&k3);
}

/* libvirt's form as libwrap runs it (`--status-fd=N PATH 1`, the stream after a header at
 * the fd's position): encrypted to the config's recipient, and the result line says
 * "encryption":"age", which is how libwrap and qemu-iohelper learn it. */
static void
test_conf_libwrap_form(void)
{
    g_autofree char *src = wpath("cl-src");
    g_autofree char *img = wpath("cl-img");
    g_autofree char *status = wpath("cl-status");
    g_autofree char *text = NULL;
    g_autofree char *conf = NULL;
    g_autofree char *lines = NULL;
    const char *args[] = { "--status-fd=3", img, "1", NULL };
    IohtPumpOpts feed = { .path = src };
    IohtPump *pump;
    Key k;
    int fd, sfd, p[2];

    if (!ioht_skip_unless_age()) {
        return;
    }
    k = key_new("cl-k");
    ioht_write_random_file(src, 2 * MiB + 3, 32);
    text = g_strdup_printf("[iohelper]\nrecipients=%s\n", k.recipient);
    conf = use_conf(text);
    fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(write(fd, "H", 1), ==, 1);
    sfd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    pump = ioht_feed_start(p[1], &feed);
    {
        IohtSpawn s = { .args = args, .in_fd = p[0], .out_fd = fd, .extra_fds = &sfd,
                        .extra_targets = (const int[]){ 3 }, .n_extra = 1 };

        g_assert_cmpint(ioht_exit_code(ioht_spawn_wait(&s, NULL)), ==, 0);
    }
    close(p[0]);
    ioht_pump_join(pump, NULL);
    close(sfd);
    close(fd);
    g_assert_cmpint(age_reads(img, 1, &k, src), ==, 0);
    g_assert_true(g_file_get_contents(status, &lines, NULL, NULL));
    ioht_assert_contains(lines, "\"type\":\"result\"");
    ioht_assert_contains(lines, "\"encryption\":\"age\"");
    g_unsetenv("IOHELPER_CONF");
    ioht_age_key_clear(&k);
}

/* A recipient in the config that is not one: a usage error (exit 2) naming the file and
 * never quoting the value (it could be a secret key pasted by mistake); nothing written.
 * A restore is not concerned: it never reads the recipients. */
static void
test_conf_bad_recipient(void)
{
    g_autofree char *src = wpath("cb-src");
    g_autofree char *img = wpath("cb-img");
    g_autofree char *back = wpath("cb-back");
    g_autofree char *conf = NULL;
    g_autofree char *err = NULL;
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), NULL, "-", img);
    g_auto(GStrv) restore = helper_argv(ioht_helper_path(), NULL, img, "-");

    ioht_write_random_file(src, 70000, 33);
    g_setenv("IOHELPER_CONF", "/nonexistent/iohelper.conf", TRUE);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    conf = use_conf("[iohelper]\nrecipients=AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"
                    "QQQQQQQQQQQQQQQQQQQQQQQQQQ\n");
    g_assert_cmpint(run_drained(restore, open(img, O_RDONLY | O_CLOEXEC), back, NULL), ==, 0);
    g_assert_true(ioht_files_equal(src, back));
    g_unlink(img);
    g_assert_cmpint(run_fed(save, src, -1, &err), ==, 2);
    assert_one_line(err, conf);
    ioht_assert_contains(err, "not an age X25519 recipient");
    g_assert_null(strstr(err, "AGE-SECRET-KEY"));
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    g_unsetenv("IOHELPER_CONF");
}

/* The host's recipients file is read as the config file is: one that others may write
 * (or behind a relative path, which would depend on the helper's working directory)
 * would let another local user add a recipient of their own to every save on the host.
 * Refused, exit 2, naming the config file; nothing written. */
static void
test_conf_recipients_file_trusted(void)
{
    g_autofree char *src = wpath("ct-src");
    g_autofree char *img = wpath("ct-img");
    g_autofree char *rfile = wpath("ct-recipients");
    g_autofree char *conf = NULL;
    g_autofree char *text = NULL;
    g_auto(GStrv) save = helper_argv(ioht_helper_path(), NULL, "-", img);
    const char *bad[] = { "writable by group or others (mode 0666)", "not an absolute path" };
    Key k;

    if (!ioht_skip_unless_age()) {
        return;
    }
    k = key_new("ct-k");
    ioht_write_random_file(src, 70000, 34);
    g_assert_true(g_file_set_contents(rfile, k.recipient, -1, NULL));
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *err = NULL;

        g_free(text);
        text = g_strdup_printf("[iohelper]\nrecipients-file=%s\n",
                               i == 0 ? rfile : "ct-recipients");

        g_assert_cmpint(chmod(rfile, i == 0 ? 0666 : 0644), ==, 0);
        g_free(conf);
        conf = use_conf(text);
        g_assert_cmpint(run_fed(save, src, -1, &err), ==, 2);
        assert_one_line(err, conf);
        ioht_assert_contains(err, bad[i]);
        g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    }
    g_free(conf);
    g_free(text);
    text = g_strdup_printf("[iohelper]\nrecipients-file=%s\n", rfile);
    conf = use_conf(text);
    g_assert_cmpint(run_fed(save, src, -1, NULL), ==, 0);
    g_assert_cmpint(age_reads(img, 0, &k, src), ==, 0);
    g_unsetenv("IOHELPER_CONF");
    ioht_age_key_clear(&k);
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    g_test_add_func("/helper/conf-age/standalone", test_conf_standalone);
    g_test_add_func("/helper/conf-age/libwrap-form", test_conf_libwrap_form);
    g_test_add_func("/helper/conf-age/bad-recipient", test_conf_bad_recipient);
    g_test_add_func("/helper/conf-age/recipients-file-trusted",
                    test_conf_recipients_file_trusted);
    return iohelper_test_run();
}
