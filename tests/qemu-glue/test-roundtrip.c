/* test-roundtrip.c - qemu-iohelper saves a real QEMU guest and restores it into a
 * second one; the guest RAM must come back byte for byte. And every way it can fail. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include <xxhash.h>

#include "ioh-test.h"
#include "qg-image.h"
#include "qg-test.h"

static char *workdir;
static char *data_file;    /* what the source guest holds */
static char *other_file;   /* what the destination holds before the restore */

static void
assert_status(QgtQemu *q, const char *want)
{
    g_autofree char *st = qgt_qemu_status(q);

    g_assert_cmpstr(st, ==, want);
}

/* Loaded but not running: "paused", or "prelaunch" when the source never ran (QEMU
 * hands the source's run state over). */
static void
assert_not_running(QgtQemu *q)
{
    g_autofree char *st = qgt_qemu_status(q);

    if (!g_str_equal(st, "paused") && !g_str_equal(st, "prelaunch")) {
        g_test_message("status %s", st);
        g_assert_not_reached();
    }
}

/* Saves a guest holding data_file into @img. */
static void
save_guest(const char *img, const char *mode, gboolean running, gboolean live)
{
    g_autofree char *mode_opt = mode ? g_strdup_printf("--bypass-cache=%s", mode) : NULL;
    g_autofree char *out = NULL;
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    const char *args[10];
    int n = 0;

    if (running) {
        g_assert_true(qg_qmp_run(src->qmp, "cont", NULL, NULL));
    }
    args[n++] = "save";
    args[n++] = "--qmp";
    args[n++] = src->sock;
    args[n++] = img;
    args[n++] = "--stats=json";
    if (mode_opt) {
        args[n++] = mode_opt;
    }
    if (live) {
        args[n++] = "--live";
    }
    args[n] = NULL;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    ioht_assert_contains(out, "\"operation\":\"save\"");
    ioht_assert_contains(out, running ? "\"running\":true" : "\"running\":false");
    /* QEMU 7.2 keeps a saved source paused, whatever it was. */
    assert_status(src, "postmigrate");
    qgt_qemu_stop(src);
}

static void
roundtrip(const char *mode, gboolean running, gboolean live)
{
    g_autofree char *img = g_build_filename(workdir, "rt.img", NULL);
    g_autofree char *dump = g_build_filename(workdir, "rt.dump", NULL);
    g_autofree char *mode_opt = mode ? g_strdup_printf("--bypass-cache=%s", mode) : NULL;
    g_autofree char *out = NULL;
    const char *args[8];
    QgtQemu *dst;
    int n = 0;

    if (!qgt_have_qemu()) {
        return;
    }
    save_guest(img, mode, running, live);

    dst = qgt_qemu_start(other_file, TRUE);
    args[n++] = "restore";
    args[n++] = "--qmp";
    args[n++] = dst->sock;
    args[n++] = img;
    args[n++] = "--stats=json";
    if (mode_opt) {
        args[n++] = mode_opt;
    }
    args[n] = NULL;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    ioht_assert_contains(out, "\"operation\":\"restore\"");
    if (running) {
        assert_status(dst, "running");
    } else {
        assert_not_running(dst);
    }
    qgt_qemu_pmemsave(dst, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, data_file));
    qgt_qemu_stop(dst);
    g_unlink(dump);
    g_unlink(img);
}

static void test_buffered_paused(void) { roundtrip(NULL, FALSE, FALSE); }
static void test_direct_paused(void) { roundtrip("direct", FALSE, FALSE); }
static void test_fadvise_paused(void) { roundtrip("fadvise", FALSE, FALSE); }
static void test_buffered_running(void) { roundtrip(NULL, TRUE, FALSE); }
static void test_direct_running(void) { roundtrip("direct", TRUE, FALSE); }
static void test_fadvise_live(void) { roundtrip("fadvise", TRUE, TRUE); }

static char *
load_file(const char *path, gsize *len)
{
    char *buf = NULL;

    g_assert_true(g_file_get_contents(path, &buf, len, NULL));
    return buf;
}

static void
store_file(const char *path, const char *buf, gsize len)
{
    g_assert_true(g_file_set_contents(path, buf, len, NULL));
}

/* Runs a restore of @img into @dst that must fail saying @needle. */
static void
restore_fails(QgtQemu *dst, const char *img, const char *needle)
{
    g_autofree char *err = NULL;
    const char *args[] = { "restore", "--qmp", dst->sock, img, NULL };

    g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 1);
    ioht_assert_contains(err, needle);
}

/* Rewrites the header of @image so that it carries the checksum of its (changed)
 * stream: for streams that only QEMU can find wrong. */
static void
patch_checksum(char *image, gsize ilen)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = qg_image_header_decode((guint8 *)image, 4096, "img",
                                                         &error);

    g_assert_no_error(error);
    info->checksum = XXH3_64bits(image + 4096, info->stream_length);
    g_assert_cmpuint(ilen, >=, 4096 + info->stream_length);
    g_assert_true(qg_image_header_encode(info, (guint8 *)image, &error));
}

/* A damaged image is refused before QEMU sees a byte, or (a flipped byte that QEMU
 * cannot notice) after, with the guest left paused. */
static void
test_damaged_images(void)
{
    g_autofree char *img = g_build_filename(workdir, "good.img", NULL);
    g_autofree char *bad = g_build_filename(workdir, "bad.img", NULL);
    g_autofree char *image = NULL;
    g_autofree char *data = NULL;
    gsize ilen, dlen;
    const char *hit;
    QgtQemu *dst;

    if (!qgt_have_qemu()) {
        return;
    }
    save_guest(img, NULL, TRUE, TRUE);   /* live: the stream says "running", QEMU may autostart */
    image = load_file(img, &ilen);
    dst = qgt_qemu_start(other_file, TRUE);

    image[0] ^= 0x20;
    store_file(bad, image, ilen);
    restore_fails(dst, bad, "wrong magic");
    image[0] ^= 0x20;

    /* QEMU itself would accept this one: the last 100 KiB are its JSON trailer. */
    store_file(bad, image, ilen - 100 * 1024);
    restore_fails(dst, bad, "image truncated");

    memcpy(image, "IOHQPART", 8);
    store_file(bad, image, ilen);
    restore_fails(dst, bad, "incomplete image");
    memcpy(image, "IOHQEMU\n", 8);

    restore_fails(dst, "/nonexistent.img", "cannot open the image /nonexistent.img");
    assert_status(dst, "inmigrate");

    qgt_qemu_stop(dst);

    /* Flip one bit inside a page of guest data: a valid stream to QEMU. The destination
     * has no -S, so QEMU starts the guest by itself: the tool must stop it again. */
    data = load_file(data_file, &dlen);
    hit = memmem(image + 4096, ilen - 4096, data + (32 << 20) + 256, 64);
    g_assert_nonnull(hit);
    image[hit - image + 10] ^= 0x01;
    store_file(bad, image, ilen);
    dst = qgt_qemu_start_full(other_file, TRUE, FALSE);
    restore_fails(dst, bad, "xxh3 checksum mismatch");   /* the helper's verify */
    assert_status(dst, "paused");
    qgt_qemu_stop(dst);
    image[hit - image + 10] ^= 0x01;

    /* Bytes after the stream (an O_DIRECT pad left behind) are not fed to QEMU. */
    {
        g_autofree char *dump = g_build_filename(workdir, "extra.dump", NULL);
        g_autofree char *padded = g_malloc0(ilen + 65536);
        const char *args[] = { "restore", "--qmp", NULL, bad, NULL };

        memcpy(padded, image, ilen);
        store_file(bad, padded, ilen + 65536);
        dst = qgt_qemu_start(other_file, TRUE);
        args[2] = dst->sock;
        g_assert_cmpint(qgt_tool_run(args, NULL, NULL), ==, 0);
        qgt_qemu_pmemsave(dst, dump, QGT_DATA_SIZE);
        g_assert_true(ioht_files_equal(dump, data_file));
        g_unlink(dump);
    }
    qgt_qemu_stop(dst);

    /* A stream QEMU refuses (its magic broken, checksum recomputed so only QEMU can tell):
     * the destination QEMU exits, the tool says the restore failed. */
    {
        g_autofree char *err = NULL;
        g_autofree char *log = NULL;
        int status;
        image[4096] ^= 0xff;
        patch_checksum(image, ilen);
        store_file(bad, image, ilen);
        dst = qgt_qemu_start(other_file, TRUE);
        restore_fails(dst, bad, "restore failed");
        g_assert_cmpint(waitpid(dst->pid, &status, 0), ==, dst->pid);
        dst->pid = 0;
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
        qgt_qemu_stop(dst);
    }
    g_unlink(img);
    g_unlink(bad);
}

/* The save's "IMG.part-XXXXXX" in progress, or NULL. */
static char *
find_part_file(const char *img)
{
    g_autofree char *dir = g_path_get_dirname(img);
    g_autofree char *prefix = g_strdup_printf("%s.part-", img);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        if (g_str_has_prefix(p, prefix)) {
            return g_steal_pointer(&p);
        }
    }
    return NULL;
}

static GPid
find_child(GPid parent, const char *comm)
{
    g_autoptr(GDir) d = g_dir_open("/proc", 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *path = NULL;
        g_autofree char *stat = NULL;
        g_autofree char *want = NULL;
        char *close_paren;
        int ppid = 0;

        if (!g_ascii_isdigit(name[0])) {
            continue;
        }
        path = g_build_filename("/proc", name, "stat", NULL);
        if (!g_file_get_contents(path, &stat, NULL, NULL)) {
            continue;
        }
        want = g_strdup_printf("(%s)", comm);
        close_paren = strrchr(stat, ')');
        if (!strstr(stat, want) || !close_paren ||
            sscanf(close_paren + 2, "%*c %d", &ppid) != 1) {
            continue;
        }
        if (ppid == parent) {
            return atoi(name);
        }
    }
    return 0;
}

typedef enum {
    DISTURB_KILL_HELPER,
    DISTURB_TERM_TOOL,
    DISTURB_FREEZE_QEMU,   /* SIGSTOP QEMU for 4 s: it sends nothing, answers nothing */
} Disturb;

/* Starts a slow save (8 MiB/s) of a running guest, waits until it is well under way,
 * then does @how to it. The tool must fail and say @needle, leave no image file, and
 * the guest it paused must run again. */
static void
disturbed_save(Disturb how, const char *needle)
{
    g_autofree char *img = g_build_filename(workdir, "disturbed.img", NULL);
    g_autofree char *err = NULL;
    g_autoptr(GError) error = NULL;
    QgtQemu *src;
    GPid tool, helper = 0;
    int err_fd, status;
    gint64 deadline;
    struct stat st;
    const char *argv[] = { qgt_tool(), "save", "--qmp", NULL, NULL, "--max-bandwidth=8",
                           "--progress", "--bypass-cache=direct", NULL, NULL };

    if (!qgt_have_qemu()) {
        return;
    }
    /* An older image at the path must survive the failed save. */
    store_file(img, "old image", 9);
    src = qgt_qemu_start(data_file, FALSE);
    g_assert_true(qg_qmp_run(src->qmp, "cont", NULL, NULL));
    argv[3] = src->sock;
    argv[4] = img;
    if (how == DISTURB_FREEZE_QEMU) {
        argv[8] = "--stall-timeout=2";
    }
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &tool,
                                           NULL, NULL, &err_fd, &error));
    g_assert_no_error(error);
    deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        g_autofree char *part = find_part_file(img);
        helper = find_child(tool, "iohelper");
        if (helper && part && stat(part, &st) == 0 && st.st_size > 4096 + (8 << 20)) {
            break;
        }
        g_usleep(20000);
    }
    g_assert_cmpint(helper, >, 0);
    {
        g_autofree char *st_text = qgt_qemu_status(src);
        g_assert_cmpstr(st_text, ==, "paused");   /* not a live save: paused by the tool */
    }
    if (how == DISTURB_FREEZE_QEMU) {
        /* The tool finds the stream stalled after 2 s; its migrate_cancel then waits
         * for QEMU, which answers once it runs again. */
        g_assert_cmpint(kill(src->pid, SIGSTOP), ==, 0);
        g_usleep(4 * G_USEC_PER_SEC);
        g_assert_cmpint(kill(src->pid, SIGCONT), ==, 0);
    } else {
        g_assert_cmpint(kill(how == DISTURB_KILL_HELPER ? helper : tool,
                             how == DISTURB_KILL_HELPER ? SIGKILL : SIGTERM), ==, 0);
    }
    g_assert_cmpint(waitpid(tool, &status, 0), ==, tool);
    {
        g_autoptr(GIOChannel) ch = g_io_channel_unix_new(err_fd);
        g_io_channel_set_close_on_unref(ch, TRUE);
        g_io_channel_read_to_end(ch, &err, NULL, NULL);
    }
    g_test_message("stderr: %s", err);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 1);
    ioht_assert_contains(err, needle);
    ioht_assert_contains(err, "save: ");          /* --progress lines */
    ioht_assert_contains(err, "MiB/s");
    {
        g_autofree char *part = find_part_file(img);
        g_autofree char *old = load_file(img, NULL);
        g_assert_null(part);
        g_assert_cmpstr(old, ==, "old image");
    }
    assert_status(src, "running");
    qgt_qemu_stop(src);
    g_unlink(img);
}

static void
test_helper_killed(void)
{
    disturbed_save(DISTURB_KILL_HELPER, "helper killed by signal 9");
}

static void
test_interrupted(void)
{
    disturbed_save(DISTURB_TERM_TOOL, "save interrupted");
}

static void
test_qemu_frozen(void)
{
    disturbed_save(DISTURB_FREEZE_QEMU,
                   "save failed: the migration stalled: no byte of the stream moved for 2 s");
}

/* A FILE name with a quote, a backslash and a newline: --stats=json still prints valid
 * JSON naming it, and --stats (text) one line. */
static void
test_stats_odd_name(void)
{
    g_autofree char *img = g_build_filename(workdir, "a\"b\\c\nd.img", NULL);
    g_autofree char *out = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    QgtQemu *src;
    const char *args[] = { "save", "--qmp", NULL, img, "--stats=json", NULL };

    if (!qgt_have_qemu()) {
        return;
    }
    src = qgt_qemu_start(data_file, FALSE);
    args[2] = src->sock;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    g_assert_true(json_parser_load_from_data(parser, out, -1, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(json_object_get_string_member(
                        json_node_get_object(json_parser_get_root(parser)), "file"), ==, img);
    qgt_qemu_stop(src);
    g_unlink(img);
}

/* A typo in the helper's config file (memory-budget=64MB): the save fails before the
 * guest is touched, in one line naming the file and the cause. The guest still runs and
 * QEMU never saw a migration (query-migrate is empty); no image is left. */
static void
test_config_typo(void)
{
    g_autofree char *img = g_build_filename(workdir, "typo.img", NULL);
    g_autofree char *conf = g_build_filename(workdir, "typo.conf", NULL);
    g_autofree char *err = NULL;
    g_autofree char *st = NULL;
    g_autoptr(JsonNode) mig = NULL;
    g_autoptr(GError) error = NULL;
    const char *args[] = { "save", "--qmp", NULL, img, NULL };
    QgtQemu *src;

    if (!qgt_have_qemu()) {
        return;
    }
    g_assert_true(g_file_set_contents(conf, "[iohelper]\nmemory-budget=64MB\n", -1, NULL));
    src = qgt_qemu_start_full(data_file, FALSE, FALSE);
    args[2] = src->sock;
    g_setenv("IOHELPER_CONF", conf, TRUE);
    g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 1);
    g_unsetenv("IOHELPER_CONF");
    qgt_assert_one_line(err);
    ioht_assert_contains(err, conf);
    ioht_assert_contains(err, "64MB");
    st = qgt_qemu_status(src);
    g_assert_cmpstr(st, ==, "running");
    mig = qg_qmp_execute(src->qmp, "query-migrate", NULL, &error);
    g_assert_no_error(error);
    g_assert_false(json_object_has_member(json_node_get_object(mig), "status"));
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
    qgt_qemu_stop(src);
    g_unlink(conf);
}

/* G_MESSAGES_DEBUG=iohelper: the decisions on stderr, stdout still only the JSON object. */
static void
test_debug_lines(void)
{
    g_autofree char *img = g_build_filename(workdir, "debug.img", NULL);
    g_autofree char *out = NULL;
    g_autofree char *err = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    QgtQemu *src;
    const char *args[] = { "save", "--qmp", NULL, img, "--stats=json", "--bypass-cache=fadvise",
                           NULL };
    int status;

    if (!qgt_have_qemu()) {
        return;
    }
    src = qgt_qemu_start(data_file, FALSE);
    args[2] = src->sock;
    g_setenv("G_MESSAGES_DEBUG", "iohelper", TRUE);
    status = qgt_tool_run(args, &out, &err);
    g_unsetenv("G_MESSAGES_DEBUG");
    g_assert_cmpint(status, ==, 0);
    g_assert_true(json_parser_load_from_data(parser, out, -1, &error));
    g_assert_no_error(error);
    g_assert_true(json_object_get_boolean_member(
                      json_node_get_object(json_parser_get_root(parser)), "helper"));
    g_assert_null(strstr(out, "DEBUG"));
    ioht_assert_contains(err, "iohelper-DEBUG");
    ioht_assert_contains(err, "cache mode fadvise");
    ioht_assert_contains(err, "QEMU's pipe: ");
    ioht_assert_contains(err, "greeting capabilities: ");
    qgt_qemu_stop(src);
    g_unlink(img);
}

static void
test_bad_qmp(void)
{
    g_autofree char *err = NULL;
    g_autofree char *img = g_build_filename(workdir, "x.img", NULL);
    const char *missing[] = { "save", "--qmp", "/nonexistent/qmp.sock", img, NULL };
    const char *file[] = { "save", "--qmp", data_file, img, NULL };
    const char *usage[] = { "save", img, NULL };

    g_assert_cmpint(qgt_tool_run(missing, NULL, &err), ==, 1);
    ioht_assert_contains(err, "cannot connect to QMP socket /nonexistent/qmp.sock");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(qgt_tool_run(file, NULL, &err), ==, 1);
    ioht_assert_contains(err, "not a socket");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(qgt_tool_run(usage, NULL, &err), ==, 2);
    g_assert_false(g_file_test(img, G_FILE_TEST_EXISTS));
}

/* Restore into a QEMU that is not waiting, save from one that is, save twice. */
static void
test_wrong_state(void)
{
    g_autofree char *img = g_build_filename(workdir, "state.img", NULL);
    g_autofree char *img2 = g_build_filename(workdir, "state2.img", NULL);
    g_autofree char *err = NULL;
    QgtQemu *src, *dst;

    if (!qgt_have_qemu()) {
        return;
    }
    src = qgt_qemu_start(data_file, FALSE);
    {
        const char *save[] = { "save", "--qmp", src->sock, img, "--stats", NULL };
        const char *restore[] = { "restore", "--qmp", src->sock, img, NULL };
        const char *again[] = { "save", "--qmp", src->sock, img2, NULL };
        const char *qmp_ok[] = { "qmp", "--qmp", src->sock, "query-status", NULL };
        const char *qmp_bad[] = { "qmp", "--qmp", src->sock, "no\nsuch\x1b[31mcmd", NULL };
        const char *qmp_args[] = { "qmp", "--qmp", src->sock, "stop", "[1]", NULL };
        g_autofree char *out = NULL;

        /* The qmp subcommand the demo uses. */
        g_assert_cmpint(qgt_tool_run(qmp_ok, &out, NULL), ==, 0);
        ioht_assert_contains(out, "\"status\":\"prelaunch\"");
        g_clear_pointer(&out, g_free);
        /* QEMU quotes the name back, newline and escape included: one line all the same */
        g_assert_cmpint(qgt_tool_run(qmp_bad, NULL, &err), ==, 1);
        ioht_assert_contains(err, "CommandNotFound");
        qgt_assert_one_line(err);
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(qgt_tool_run(qmp_args, NULL, &err), ==, 2);
        g_clear_pointer(&err, g_free);

        /* Text stats. */
        g_assert_cmpint(qgt_tool_run(save, &out, NULL), ==, 0);
        ioht_assert_contains(out, "save: ");
        ioht_assert_contains(out, "xxh3-64:");
        g_assert_cmpint(qgt_tool_run(restore, NULL, &err), ==, 1);
        ioht_assert_contains(err, "-incoming defer");
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(qgt_tool_run(again, NULL, &err), ==, 1);
        ioht_assert_contains(err, "saves a guest only once");
        g_clear_pointer(&err, g_free);
        g_assert_false(g_file_test(img2, G_FILE_TEST_EXISTS));
    }
    qgt_qemu_stop(src);
    dst = qgt_qemu_start(other_file, TRUE);
    {
        const char *save[] = { "save", "--qmp", dst->sock, img2, NULL };
        g_assert_cmpint(qgt_tool_run(save, NULL, &err), ==, 1);
        ioht_assert_contains(err, "waiting for an incoming migration");
        g_assert_false(g_file_test(img2, G_FILE_TEST_EXISTS));
    }
    qgt_qemu_stop(dst);
    g_unlink(img);
}

/* The --stats=json line's CPU figures: this process moves no byte of the stream (QEMU
 * reads and writes the helper's pipe), the helper does. Logged, and checked only for
 * being there and sane: at this stream size (64 MiB) the tool's startup and QMP cost as
 * much as a relay would, so a bound would not be robust (benchmarks/qemu-onehop measures
 * 1 GiB: docs/qemu-glue.md, "One hop"). */
static void
stats_cpu(const char *out, const char *what)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o;
    double self, helper;

    g_assert_true(json_parser_load_from_data(parser, out, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    self = json_object_get_double_member_with_default(o, "cpu_seconds", -1);
    helper = json_object_get_double_member_with_default(o, "helper_cpu_seconds", -1);
    g_test_message("%s: qemu-iohelper %.3f CPU s, iohelper %.3f CPU s, %" G_GINT64_FORMAT
                   " stream bytes", what, self, helper,
                   json_object_get_int_member_with_default(o, "stream_bytes", 0));
    g_assert_cmpfloat(self, >=, 0);
    g_assert_cmpfloat(helper, >, 0);   /* the helper, reaped by libwrap, is counted */
}

static void
test_stats_cpu(void)
{
    g_autofree char *img = g_build_filename(workdir, "cpu.img", NULL);
    g_autofree char *out = NULL;
    const char *args[] = { "save", "--qmp", NULL, img, "--stats=json", NULL };
    QgtQemu *q;

    if (!qgt_have_qemu()) {
        return;
    }
    q = qgt_qemu_start(data_file, FALSE);
    args[2] = q->sock;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    qgt_qemu_stop(q);
    stats_cpu(out, "save");
    g_clear_pointer(&out, g_free);
    q = qgt_qemu_start(other_file, TRUE);
    args[0] = "restore";
    args[2] = q->sock;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    qgt_qemu_stop(q);
    stats_cpu(out, "restore");
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    qgt_test_init(&argc, &argv);
    qgt_guest_files(&workdir, &data_file, &other_file, 1);

    g_test_add_func("/qemu/roundtrip/buffered/paused", test_buffered_paused);
    g_test_add_func("/qemu/roundtrip/direct/paused", test_direct_paused);
    g_test_add_func("/qemu/roundtrip/fadvise/paused", test_fadvise_paused);
    g_test_add_func("/qemu/roundtrip/buffered/running", test_buffered_running);
    g_test_add_func("/qemu/roundtrip/direct/running", test_direct_running);
    g_test_add_func("/qemu/roundtrip/fadvise/live", test_fadvise_live);
    g_test_add_func("/qemu/error/damaged-images", test_damaged_images);
    g_test_add_func("/qemu/error/helper-killed", test_helper_killed);
    g_test_add_func("/qemu/error/interrupted", test_interrupted);
    g_test_add_func("/qemu/stats/debug-lines", test_debug_lines);
    g_test_add_func("/qemu/error/qemu-frozen-stall", test_qemu_frozen);
    g_test_add_func("/qemu/stats/odd-file-name", test_stats_odd_name);
    g_test_add_func("/qemu/error/bad-qmp-socket", test_bad_qmp);
    g_test_add_func("/qemu/error/wrong-state", test_wrong_state);
    g_test_add_func("/qemu/error/config-typo-before-migration", test_config_typo);
    g_test_add_func("/qemu/stats/cpu-figures", test_stats_cpu);
    return ioht_run_tests(&workdir);
}
