/* test-iohelper-cli.c - the iohelper binary, end to end (real pipes, real files on ext4,
 * O_DIRECT): the command line: help, stats, the status fd, progress, record
 * (/helper/cli/...)
 */
#include "iohelper-util.h"

static void
test_help_version(void)
{
    g_autofree char *out = NULL;
    const char *help[] = { ioht_helper_path(), "--help", NULL };
    const char *version[] = { ioht_helper_path(), "--version", NULL };

    g_assert_cmpint(ioht_run_output((char **)help, &out), ==, 0);
    g_assert_nonnull(strstr(out, "Usage: iohelper"));
    g_clear_pointer(&out, g_free);
    g_assert_cmpint(ioht_run_output((char **)version, &out), ==, 0);
    g_assert_true(g_str_has_prefix(out, "iohelper "));
}

/* --stats=json is one JSON object with the counters; --stats is one text line. */
static void
test_stats(void)
{
    g_autofree char *src = wpath("st-src");
    g_autofree char *img = wpath("st-img");
    const char *jopts[] = { "--stats=json", NULL };
    const char *topts[] = { "--stats", NULL };
    g_auto(GStrv) jargv = helper_argv(ioht_helper_path(), jopts, "-", img);
    g_auto(GStrv) targv = helper_argv(ioht_helper_path(), topts, "-", img);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree char *jerr = NULL;
    g_autofree char *terr = NULL;
    JsonObject *o;

    ioht_write_random_file(src, 2 * MiB + 5, 12);
    g_assert_cmpint(run_fed(jargv, src, -1, &jerr), ==, 0);
    g_assert_true(json_parser_load_from_data(parser, jerr, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, 2 * MiB + 5);
    g_assert_cmpint(json_object_get_int_member(o, "synced"), ==, 2 * MiB + 5);
    g_assert_cmpint(json_object_get_int_member(o, "writes"), >=, 3);
    g_assert_cmpint(json_object_get_int_member(o, "reads"), >=, 3);
    g_assert_true(json_object_has_member(o, "sync_seconds"));
    g_assert_cmpstr(json_object_get_string_member(o, "direction"), ==, "save");
    g_assert_cmpint(run_fed(targv, src, -1, &terr), ==, 0);
    assert_one_line(terr, "total: 2097157 bytes");
    g_unlink(src);
    g_unlink(img);
}

/* --status-fd: JSON progress lines, the last one done with every byte synced. */
static void
test_status_fd(void)
{
    g_autofree char *src = wpath("sf-src");
    g_autofree char *img = wpath("sf-img");
    g_autofree char *status = wpath("sf-status");
    const char *opts[] = { "--status-fd=1", "--status-interval=10", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    guint n;
    JsonObject *last;

    ioht_write_random_file(src, 32 * MiB, 13);
    g_assert_cmpint(run_fed(argv, src, fd, NULL), ==, 0);
    close(fd);
    g_assert_true(g_file_get_contents(status, &text, NULL, NULL));
    lines = g_strsplit(g_strstrip(text), "\n", -1);
    n = g_strv_length(lines);
    g_assert_cmpuint(n, >=, 2);
    /* the first line says the copy starts (libwrap waits for it) */
    g_assert_cmpstr(lines[0], ==, "{\"v\":1,\"minor\":3,\"type\":\"ready\"}");
    g_assert_true(json_parser_load_from_data(parser, lines[n - 1], -1, NULL));
    last = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpint(json_object_get_int_member(last, "written"), ==, 32 * MiB);
    g_assert_cmpint(json_object_get_int_member(last, "synced"), ==, 32 * MiB);
    g_assert_true(json_object_get_boolean_member(last, "done"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(status);
}

/* --progress redraws a dd-style line on a terminal (and stays silent elsewhere). */
static void
test_progress_tty(void)
{
    g_autofree char *src = wpath("pg-src");
    g_autofree char *img = wpath("pg-img");
    const char *opts[] = { "--progress", "--status-interval=10", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autoptr(GString) screen = g_string_new(NULL);
    int master, slave, p[2];
    IohtPumpOpts feed = { .path = src };
    IohtPump *t;
    GPid pid;
    char buf[4096];
    gssize n;

    ioht_write_random_file(src, 64 * MiB, 14);
    g_assert_cmpint(openpty(&master, &slave, NULL, NULL, NULL), ==, 0);
    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    pid = spawn_helper(argv, p[0], slave);
    close(p[0]);
    close(slave);
    t = ioht_feed_start(p[1], &feed);
    /* read the terminal until the helper closes it (EIO once the slave is gone) */
    while ((n = read(master, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) {
            g_string_append_len(screen, buf, n);
        }
    }
    ioht_pump_join(t, NULL);
    g_assert_cmpint(ioht_wait_exit_code(pid), ==, 0);
    close(master);
    g_test_message("terminal: %s", screen->str);
    g_assert_nonnull(strstr(screen->str, "\r67108864 bytes (0.1 GB, 0.1 GiB) copied"));
    g_assert_nonnull(strstr(screen->str, "synced"));
    g_unlink(src);
    g_unlink(img);
}

/* --record appends one JSON line per copy saying what was done. */
static void
test_record(void)
{
    g_autofree char *src = wpath("rc-src");
    g_autofree char *img = wpath("rc-img");
    g_autofree char *rec = wpath("rc-record");
    g_autofree char *opt = g_strdup_printf("--record=%s", rec);
    const char *opts[] = { opt, "--fadvise", NULL };
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", img);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree char *text = NULL;
    JsonObject *o;

    ioht_write_random_file(src, 12345, 15);
    g_assert_cmpint(run_fed(argv, src, -1, NULL), ==, 0);
    g_assert_true(g_file_get_contents(rec, &text, NULL, NULL));
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpstr(json_object_get_string_member(o, "mode"), ==, "fadvise");
    g_assert_cmpstr(json_object_get_string_member(o, "direction"), ==, "save");
    g_assert_cmpstr(json_object_get_string_member(o, "form"), ==, "standalone");
    g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, 12345);
    g_assert_true(json_object_get_boolean_member(o, "ok"));
    g_unlink(src);
    g_unlink(img);
    g_unlink(rec);
}

/* The last line of @path (a status fd's or a record's), decoded as the protocol. */
static void
load_last_line(const char *path, IohProtocolMsg *msg, JsonObject **ret_obj,
               JsonParser *parser)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    gsize len;
    char *last;

    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    g_assert_cmpuint(len, >, 0);
    g_assert_cmpint(text[len - 1], ==, '\n');
    text[len - 1] = '\0';
    last = strrchr(text, '\n') ? strrchr(text, '\n') + 1 : text;
    g_assert_true(json_parser_load_from_data(parser, last, -1, &error));
    g_assert_no_error(error);
    *ret_obj = json_node_get_object(json_parser_get_root(parser));
    g_assert_true(ioh_protocol_decode(last, strlen(last), msg, &error));
    g_assert_no_error(error);
}

/* A path holding '"', a newline and control characters: the status fd's final line and
 * the record are valid JSON that give the path back byte for byte, and stderr keeps it on
 * one line. Once for a save that succeeds, once for one that fails (a directory). */
static void
test_record_odd_path(void)
{
    g_autofree char *dir = wpath("od-we\"ird\nna\x01me\t\x7f\x1b[0m");
    g_autofree char *img = g_build_filename(dir, "i\"m\ng", NULL);
    g_autofree char *src = wpath("od-src");
    g_autofree char *rec = wpath("od-record");
    g_autofree char *status = wpath("od-status");
    g_autofree char *opt = g_strdup_printf("--record=%s", rec);
    const char *opts[] = { opt, "--status-fd=1", NULL };

    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    ioht_write_random_file(src, 12345, 31);
    for (int fail = 0; fail < 2; fail++) {
        g_auto(GStrv) argv = helper_argv(ioht_helper_path(), opts, "-", fail ? dir : img);
        g_autoptr(JsonParser) sp = json_parser_new();
        g_autoptr(JsonParser) rp = json_parser_new();
        g_auto(IohProtocolMsg) sm = { 0 };
        g_auto(IohProtocolMsg) rm = { 0 };
        g_autofree char *err = NULL;
        JsonObject *so, *ro;
        int fd = open(status, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        g_assert_cmpint(run_fed(argv, src, fd, &err), ==, fail ? 1 : 0);
        close(fd);
        load_last_line(status, &sm, &so, sp);
        load_last_line(rec, &rm, &ro, rp);
        g_assert_cmpstr(json_object_get_string_member(ro, "form"), ==, "standalone");
        g_assert_cmpint(json_object_get_boolean_member(ro, "ok"), ==, !fail);
        if (!fail) {
            g_assert_cmpint(sm.kind, ==, IOH_PROTOCOL_RESULT);
            g_assert_cmpuint(sm.written, ==, 12345);
            g_assert_cmpstr(json_object_get_string_member(ro, "path"), ==, img);
            g_assert_cmpint(json_object_get_int_member(ro, "bytes"), ==, 12345);
            continue;
        }
        assert_one_line(err, "Is a directory");
        g_assert_cmpstr(json_object_get_string_member(ro, "path"), ==, dir);
        g_assert_cmpstr(json_object_get_string_member(ro, "direction"), ==, "copy");
        g_assert_cmpstr(json_object_get_string_member(ro, "mode"), ==, "buffered");
        for (IohProtocolMsg *m = &sm; m; m = m == &sm ? &rm : NULL) {
            g_assert_cmpint(m->kind, ==, IOH_PROTOCOL_ERROR);
            g_assert_cmpint(m->errsv, ==, EISDIR);
            g_assert_cmpstr(m->errno_name, ==, "EISDIR");
            g_assert_cmpstr(m->operation, ==, "open");
            g_assert_cmpstr(m->path, ==, dir);
            g_assert_true(g_str_has_suffix(m->message, ": Is a directory"));
        }
    }
    g_unlink(img);
    g_rmdir(dir);
    g_unlink(src);
    g_unlink(rec);
    g_unlink(status);
}

/* ---- case 6: one fd on both sides (a socket, fd:3 fd:3) is closed once ---- */
static gpointer
echo_peer(gpointer data)
{
    int fd = GPOINTER_TO_INT(data);
    char buf[4096];
    gssize n, total = 0;

    g_assert_cmpint(write(fd, "hello socket", 12), ==, 12);
    shutdown(fd, SHUT_WR);
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        total += n;
    }
    return GINT_TO_POINTER((int)total);
}

static void
test_one_fd_both_sides(void)
{
    g_auto(GStrv) argv = helper_argv(ioht_helper_path(), NULL, "fd:0", "fd:0");
    g_autofree char *err = NULL;
    GThread *t;
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    t = g_thread_new("peer", echo_peer, GINT_TO_POINTER(sv[1]));
    g_assert_cmpint(ioht_exit_code(ioht_run(argv, sv[0], -1, &err)), ==, 0);
    close(sv[0]);
    g_assert_cmpint(GPOINTER_TO_INT(g_thread_join(t)), ==, 12);
    close(sv[1]);
    g_assert_true(err == NULL || *err == '\0');
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    g_test_add_func("/helper/cli/help-version", test_help_version);
    g_test_add_func("/helper/cli/stats", test_stats);
    g_test_add_func("/helper/cli/status-fd", test_status_fd);
    g_test_add_func("/helper/cli/progress-on-a-terminal", test_progress_tty);
    g_test_add_func("/helper/cli/record", test_record);
    g_test_add_func("/helper/cli/record-odd-path", test_record_odd_path);
    g_test_add_func("/helper/cli/one-fd-both-sides", test_one_fd_both_sides);
    return iohelper_test_run();
}
