/* test-hostile.c - qemu-iohelper against a QMP peer that sends what QEMU never would
 * (tests/qemu-glue/qg-fake.c): replies of the wrong shape, control characters in its
 * words, a migration that never moves. Each must end in exit 1 and one clean line, no
 * GLib CRITICAL or WARNING (the suite runs with G_DEBUG=fatal-warnings, and the runner
 * checks stderr too), and nothing done to the guest after the surprise: no `stop`,
 * `getfd` or `migrate` once a reply was wrong. What real QEMU does is tested with real
 * QEMU (test-roundtrip.c, tests/faults/test-qemu.c). */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include <xxhash.h>

#include "ioh-test.h"
#include "qg-fake.h"
#include "qg-image.h"
#include "qg-test.h"

static char *workdir;

/* Files left in the work dir whose name starts with @prefix. */
static guint
files_named(const char *prefix)
{
    return ioht_count_prefix(workdir, prefix);
}

/* A valid image of @len random stream bytes (the fake never reads it). */
static char *
make_image(const char *name, gsize len)
{
    g_autofree char *path = g_build_filename(workdir, name, NULL);
    g_autoptr(QgImageInfo) info = qg_image_info_new();
    g_autoptr(GError) error = NULL;
    g_autofree guint8 *buf = g_malloc0(QG_IMAGE_HEADER_SIZE + len);
    g_autoptr(GRand) rand = g_rand_new_with_seed(5);

    for (gsize i = 0; i < len; i++) {
        buf[QG_IMAGE_HEADER_SIZE + i] = (guint8)g_rand_int(rand);
    }
    info->qemu_version = g_strdup("7.2.22");
    info->machine = g_strdup("pc-i440fx-7.2");
    info->stream_offset = QG_IMAGE_HEADER_SIZE;
    info->stream_length = len;
    info->checksum = XXH3_64bits(buf + QG_IMAGE_HEADER_SIZE, len);
    g_assert_true(qg_image_header_encode(info, buf, &error));
    g_assert_true(g_file_set_contents(path, (char *)buf, QG_IMAGE_HEADER_SIZE + len, NULL));
    return g_steal_pointer(&path);
}

/* ---- case 7: one line, whatever the peer or the user wrote ---- */

#define NASTY "no\\nsuch\\u001b[31mcmd\\r\\u007f\\u009b2J"

/* QEMU's error desc with a newline, an escape, DEL and a C1 CSI. */
static void
test_one_line_qmp_error(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *err = NULL;
    const char *args[] = { "qmp", "--qmp", qgt_fake_socket(f), "no\nsuch\x1b[31mcmd", NULL };

    qgt_fake_reply(f, "no\nsuch\x1b[31mcmd",
                   "!{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command "
                   NASTY " has not been found\"}, \"id\": @ID@}", NULL);
    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "has not been found");
}

/* The same desc in each place a save quotes QEMU: a refused command, and the reason of
 * a failed migration (query-migrate's error-desc). */
static void
test_one_line_save_errors(void)
{
    g_autofree char *img = g_build_filename(workdir, "nasty.img", NULL);
    const char *const cmds[] = { "query-status", "stop", "migrate" };

    for (gsize i = 0; i < G_N_ELEMENTS(cmds); i++) {
        g_autoptr(QgtFake) f = qgt_fake_start();
        g_autofree char *err = NULL;
        const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, NULL };

        qgt_fake_reply(f, cmds[i], "!{\"error\": {\"class\": \"GenericError\", \"desc\": \""
                       NASTY "\"}, \"id\": @ID@}", NULL);
        g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
        qgt_assert_one_line(err);
        ioht_assert_contains(err, cmds[i]);
    }
    {
        g_autoptr(QgtFake) f = qgt_fake_start();
        g_autofree char *err = NULL;
        const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, NULL };

        qgt_fake_reply(f, "migrate", "{}",
                       "{\"event\": \"MIGRATION\", \"data\": {\"status\": \"failed\"}}\r\n");
        qgt_fake_reply(f, "query-migrate", "{\"status\": \"failed\", \"error-desc\": \""
                       NASTY "\"}", NULL);
        g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
        qgt_assert_one_line(err);
        ioht_assert_contains(err, "QEMU says: no?such?[31mcmd");
        g_assert_true(qgt_fake_got(f, "cont"));   /* the guest it paused runs again */
    }
    g_assert_cmpuint(files_named("nasty.img"), ==, 0);
}

/* Bytes that are not JSON, quoted in the message. */
static void
test_one_line_garbage(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *err = NULL;
    const char *args[] = { "qmp", "--qmp", qgt_fake_socket(f), "query-status", NULL };

    qgt_fake_set_greeting(f, "\x1b[31m{not json\x1b]0;title\x07");
    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "not a QMP socket");
}

/* What the user typed: FILE, the socket, an option, the qmp arguments. */
static void
test_one_line_arguments(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *bad_dir = g_build_filename(workdir, "no\nsuch\x1b[31mdir", "x.img", NULL);
    const char *save[] = { "save", "--qmp", qgt_fake_socket(f), bad_dir, NULL };
    const char *restore[] = { "restore", "--qmp", qgt_fake_socket(f), bad_dir, NULL };
    const char *sock[] = { "save", "--qmp", "/nonexistent\n\x1b[1m.sock", "x.img", NULL };
    const char *opt[] = { "save", "--qmp", "s", "--bypass-cache=\x1b[31m\n", "x.img", NULL };
    const char *json[] = { "qmp", "--qmp", qgt_fake_socket(f), "stop", "[1\n\x1b[31m", NULL };
    const struct {
        const char *const *args;
        int code;
    } runs[] = { { save, 1 }, { restore, 1 }, { sock, 1 }, { opt, 2 }, { json, 2 } };

    for (gsize i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *err = NULL;

        if (runs[i].args == restore) {
            qgt_fake_reply(f, "query-status",
                           "{\"status\": \"inmigrate\", \"running\": false}", NULL);
        }
        g_assert_cmpint(qgt_tool_run_timeout(runs[i].args, 20, NULL, &err), ==, runs[i].code);
        qgt_assert_one_line(err);
        if (runs[i].args == save || runs[i].args == restore) {
            ioht_assert_contains(err, "no?such?[31mdir");   /* FILE named, made one line */
        }
    }
}

/* ---- case 8: every reply's shape ---- */

typedef struct {
    const char *command;   /* answered with @reply; NULL: the greeting is @reply */
    const char *reply;
    const char *then;      /* lines after the reply */
    const char *needle;
} BadReply;

static const BadReply bad_save[] = {
    { "query-status", "[1, 2, 3]", NULL, "'query-status'" },
    { "query-status", "\"running\"", NULL, "it is a string, not an object" },
    { "query-status", "null", NULL, "it is null, not an object" },
    { "query-status", "{\"status\": 1, \"running\": true}", NULL, "'status' is an integer" },
    { "query-status", "{\"status\": \"running\"}", NULL, "'running' is missing" },
    { "query-status", "{\"status\": \"running\", \"running\": \"yes\"}", NULL,
      "'running' is a string, not a boolean" },
    { "query-status", "{\"status\": {}, \"running\": true}", NULL, "'status' is an object" },
    { "qom-get", "{\"type\": 1}", NULL, "it is an object, not a string" },
    { "qom-get", "[\"pc\"]", NULL, "it is an array, not a string" },
    { "query-memory-size-summary", "[]", NULL, "'query-memory-size-summary'" },
    { "query-memory-size-summary", "{\"base-memory\": \"256M\"}", NULL, "'base-memory'" },
    { "query-memory-size-summary", "{\"base-memory\": 1.5}", NULL, "is a fraction" },
    { "migrate-set-capabilities", "[]", NULL, "'migrate-set-capabilities'" },
    { "query-migrate-parameters", "{\"max-bandwidth\": \"fast\"}", NULL, "'max-bandwidth'" },
    { "query-migrate-parameters", "[{}]", NULL, "'query-migrate-parameters'" },
    { "migrate-set-parameters", "\"ok\"", NULL, "'migrate-set-parameters'" },
    { "query-status", "!{\"return\": {}, \"error\": \"boom\", \"id\": @ID@}", NULL,
      "malformed QMP message" },
    { "query-status", "!{\"error\": {\"class\": 5, \"desc\": []}, \"id\": @ID@}", NULL,
      "malformed QMP message" },
    { "qom-get", "!{\"event\": 7, \"data\": {}}", NULL, "'event' is an integer" },
    { "qom-get", "!{\"event\": \"STOP\", \"data\": [1]}", NULL, "'data' is an array" },
    { "qmp_capabilities", "[]", NULL, "'qmp_capabilities'" },
    { NULL, "{\"QMP\": [1]}", NULL, "no QMP greeting" },
    { NULL, "{\"QMP\": {\"version\": {\"qemu\": {\"major\": \"7\"}}}}", NULL, "'major'" },
    { NULL, "{\"QMP\": {\"version\": [7, 2]}}", NULL, "'version'" },
};

/* The reply to @command is of the wrong shape: the save fails at once, before the guest
 * is touched, and says which reply. */
static void
test_bad_reply_save(gconstpointer data)
{
    const BadReply *b = data;
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = g_build_filename(workdir, "shape.img", NULL);
    g_autofree char *err = NULL;
    g_autofree char *got = NULL;
    const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, "--timeout=5", NULL };

    if (b->command) {
        qgt_fake_reply(f, b->command, b->reply, b->then);
    } else {
        qgt_fake_set_greeting(f, b->reply);
    }
    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, b->needle);
    got = qgt_fake_commands(f);
    g_test_message("commands: %s", got);
    g_assert_false(qgt_fake_got(f, "stop"));
    g_assert_false(qgt_fake_got(f, "getfd"));
    g_assert_false(qgt_fake_got(f, "migrate"));
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    g_assert_cmpuint(files_named("shape.img"), ==, 0);
}

static const BadReply bad_restore[] = {
    { "query-status", "{\"status\": \"inmigrate\", \"running\": 0}", NULL, "'running'" },
    { "query-status", "[\"inmigrate\"]", NULL, "not an object" },
    { "migrate-set-capabilities", "1", NULL, "'migrate-set-capabilities'" },
    { "getfd", "[]", NULL, "'getfd'" },
};

/* The same for a restore: refused before QEMU is asked to load anything. */
static void
test_bad_reply_restore(gconstpointer data)
{
    const BadReply *b = data;
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = make_image("shape-restore.img", 1 << 20);
    g_autofree char *err = NULL;
    const char *args[] = { "restore", "--qmp", qgt_fake_socket(f), img, "--timeout=5", NULL };

    qgt_fake_reply(f, "query-status", "{\"status\": \"inmigrate\", \"running\": false}", NULL);
    qgt_fake_reply(f, b->command, b->reply, b->then);
    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, b->needle);
    g_assert_false(qgt_fake_got(f, "migrate-incoming"));
    g_unlink(img);
}

/* A MIGRATION event whose status is no string, mid-save: the save fails as on any other
 * failure (cancelled in QEMU, the guest it paused resumed, no file). */
static void
test_bad_event_mid_save(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = g_build_filename(workdir, "event.img", NULL);
    g_autofree char *err = NULL;
    const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, NULL };

    qgt_fake_reply(f, "migrate", "{}",
                   "{\"event\": \"MIGRATION\", \"data\": {\"status\": [\"completed\"]}}\r\n");
    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "malformed MIGRATION event");
    g_assert_true(qgt_fake_got(f, "migrate_cancel"));
    g_assert_true(qgt_fake_got(f, "cont"));
    g_assert_cmpuint(files_named("event.img"), ==, 0);
}

/* ---- case 11: a migration that never moves ---- */

/* QEMU accepts `migrate`, holds the pipe, sends nothing: the save fails after the stall
 * timeout, cancels the migration, resumes the guest it paused, leaves no file. */
static void
test_stall_save(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = g_build_filename(workdir, "stall.img", NULL);
    g_autofree char *err = NULL;
    g_autofree char *got = NULL;
    const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, "--stall-timeout=1",
                           NULL };
    gint64 start = g_get_monotonic_time();
    double secs;

    g_assert_cmpint(qgt_tool_run_timeout(args, 30, NULL, &err), ==, 1);
    secs = (g_get_monotonic_time() - start) / 1e6;
    g_test_message("failed after %.2f s", secs);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "save failed: the migration stalled: no byte of the stream moved "
                    "for 1 s");
    g_assert_cmpfloat(secs, >=, 1.0);
    g_assert_cmpfloat(secs, <, 10.0);
    got = qgt_fake_commands(f);
    g_test_message("commands: %s", got);
    g_assert_true(g_str_has_suffix(got, "migrate migrate_cancel cont migrate-set-parameters"));
    g_assert_cmpuint(files_named("stall.img"), ==, 0);
}

/* QEMU accepts `migrate-incoming` and reads nothing: the restore fails after the stall
 * timeout and quits the half-loaded QEMU, as on any failure of a load. */
static void
test_stall_restore(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = make_image("stall-restore.img", 8 << 20);
    g_autofree char *err = NULL;
    g_autofree char *got = NULL;
    const char *args[] = { "restore", "--qmp", qgt_fake_socket(f), img, "--stall-timeout=1",
                           NULL };

    qgt_fake_reply(f, "query-status", "{\"status\": \"inmigrate\", \"running\": false}", NULL);
    g_assert_cmpint(qgt_tool_run_timeout(args, 30, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "restore failed: the migration stalled");
    got = qgt_fake_commands(f);
    g_test_message("commands: %s", got);
    g_assert_true(g_str_has_suffix(got, "migrate-incoming quit"));
    g_unlink(img);
}

/* --stall-timeout=0 waits for ever: still waiting when killed after 3 s. And the
 * option takes no negative number. */
static void
test_stall_zero(void)
{
    g_autoptr(QgtFake) f = qgt_fake_start();
    g_autofree char *img = g_build_filename(workdir, "forever.img", NULL);
    g_autofree char *err = NULL;
    const char *args[] = { "save", "--qmp", qgt_fake_socket(f), img, "--stall-timeout=0",
                           NULL };
    const char *neg[] = { "save", "--qmp", qgt_fake_socket(f), img, "--stall-timeout=-1",
                          NULL };

    g_assert_cmpint(qgt_tool_run_timeout(args, 3, NULL, NULL), ==, 128 + 9);
    g_assert_true(qgt_fake_got(f, "migrate"));
    g_assert_false(qgt_fake_got(f, "migrate_cancel"));
    g_assert_cmpint(qgt_tool_run_timeout(neg, 20, NULL, &err), ==, 2);
    qgt_assert_one_line(err);
    g_clear_pointer(&f, qgt_fake_free);   /* the orphaned helper sees EOF and goes */
    {
        g_autofree char *base = g_path_get_basename(img);
        for (int i = 0; i < 100 && files_named(base) > 0; i++) {
            g_usleep(50000);   /* a killed save leaves its .part: not ours to judge */
        }
    }
}

int
main(int argc, char **argv)
{
    qgt_test_init(&argc, &argv);
    workdir = ioht_workdir();
    g_test_add_func("/qemu/hostile/one-line/qmp-error", test_one_line_qmp_error);
    g_test_add_func("/qemu/hostile/one-line/save-errors", test_one_line_save_errors);
    g_test_add_func("/qemu/hostile/one-line/garbage", test_one_line_garbage);
    g_test_add_func("/qemu/hostile/one-line/arguments", test_one_line_arguments);
    for (gsize i = 0; i < G_N_ELEMENTS(bad_save); i++) {
        g_autofree char *name = g_strdup_printf("/qemu/hostile/shape/save/%s-%zu",
                                                bad_save[i].command ? bad_save[i].command
                                                                    : "greeting", i);
        g_test_add_data_func(name, &bad_save[i], test_bad_reply_save);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(bad_restore); i++) {
        g_autofree char *name = g_strdup_printf("/qemu/hostile/shape/restore/%s-%zu",
                                                bad_restore[i].command, i);
        g_test_add_data_func(name, &bad_restore[i], test_bad_reply_restore);
    }
    g_test_add_func("/qemu/hostile/shape/event-mid-save", test_bad_event_mid_save);
    g_test_add_func("/qemu/hostile/stall/save", test_stall_save);
    g_test_add_func("/qemu/hostile/stall/restore", test_stall_restore);
    g_test_add_func("/qemu/hostile/stall/zero-waits", test_stall_zero);
    return ioht_run_tests(&workdir);
}
