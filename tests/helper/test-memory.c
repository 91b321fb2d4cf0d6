/* test-memory.c - one memory account for every layer (--memory-budget): the real helper
 * with every layer on (zstd with many --threads, an NBD end with many connections and
 * requests in flight against a real nbdkit on a unix socket, the ring) under a small
 * budget, its peak resident memory measured (wait4's ru_maxrss: the most the process
 * ever held, read when it is reaped) against budget + the layers' floors + the program's
 * base, and every round trip byte-exact.
 *
 * The floors are the documented ones (docs/engine.md, "One memory account"), fixed here:
 * the bound does not trust the helper's own report, which is then checked against them
 * (--stats=json's "memory"). Each case uses its own IOHELPER_RUNDIR: no other
 * helper's lease counts. Skipped under AddressSanitizer (its shadow memory and quarantine
 * are most of the resident memory then) and, saying why, without nbdkit.
 */
#include "ioh-test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#define MiB ((guint64)1024 * 1024)

/* What the helper holds whatever its options: the program, its libraries (GLib, json-glib,
 * libzstd, libnbd and GnuTLS), their first allocations and its threads' stacks: 9-10 MiB
 * resident for a plain save on the machine this was written on; this leaves room. */
#define BASE_BYTES (16 * MiB)

/* The documented floors (docs/engine.md): the ring's one buffer (1 MiB, --buffer-size's
 * default), one NBD request per connection of at most 256 KiB, and zstd's one context:
 * its own 4.6 MiB plus libzstd's at a window of 1 MiB (2.5 MiB at level 3, 19 MiB at 19;
 * 7.4 MiB for the decoder of a level-3 image, whose window is 2 MiB). */
#define RING_FLOOR MiB
#define NBD_FLOOR_PER_CONN (256 * 1024)
#define ZSTD3_FLOOR_MAX (8 * MiB)
#define ZSTD19_FLOOR_MAX (25 * MiB)
#define UNZSTD_FLOOR_MAX (8 * MiB)      /* images of windows up to 2 MiB */

typedef struct {
    char *sock;
    char *uri;
    GPid pid;
} Server;

/* nbdkit --unix DIR/s.sock memory 256M in @dir; FALSE (skipped) without nbdkit. */
static gboolean
server_start(Server *s, const char *dir)
{
    const char *plugin[] = { "memory", "256M", NULL };

    s->sock = g_build_filename(dir, "s.sock", NULL);
    s->uri = g_strdup_printf("nbd+unix:///?socket=%s", s->sock);
    s->pid = ioht_nbdkit_start(dir, s->sock, plugin);
    return s->pid != 0;
}

static void
server_stop(Server *s)
{
    if (s->pid) {    /* a daemon, not our child */
        kill(s->pid, SIGKILL);
    }
    g_free(s->sock);
    g_free(s->uri);
}

/* @size bytes that compress to about a third and that zstd's probe does not store raw:
 * each 4 KiB page half pseudo-random, half a run of its number. */
static void
write_stream(const char *path, guint64 size)
{
    g_autofree guint8 *page = g_malloc(4096);
    FILE *f = fopen(path, "wbe");
    guint32 x = 2463534242u;

    g_assert_nonnull(f);
    for (guint64 off = 0; off < size; off += 4096) {
        for (int i = 0; i < 2048; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            page[i] = (guint8)x;
        }
        memset(page + 2048, (int)(off / 4096), 2048);
        g_assert_cmpuint(fwrite(page, 1, 4096, f), ==, 4096);
    }
    g_assert_cmpint(fclose(f), ==, 0);
}

/* A helper's run: exit code, the --stats=json object, peak RSS in bytes. */
typedef struct {
    int code;
    JsonParser *parser;
    JsonObject *stats;
    guint64 peak;
} Run;

/* The environment of a helper: @rundir for the budget, no host config. */
static char **
helper_env(const char *rundir)
{
    char **env = g_get_environ();

    env = g_environ_setenv(env, "IOHELPER_RUNDIR", rundir, TRUE);
    return g_environ_setenv(env, "IOHELPER_CONF", "/nonexistent/iohelper.conf", TRUE);
}

/* Runs the helper with @args, stdin from @in (NULL: none), stdout into @out (NULL:
 * none). */
static Run
run_helper(const char *const *args, const char *rundir, const char *in, const char *out)
{
    g_auto(GStrv) env = helper_env(rundir);
    IohtSpawn s = { .args = args, .env = (const char *const *)env, .in_fd = -1,
                    .out_fd = -1 };
    IohtPump *feed = NULL, *drain = NULL;
    IohtPumpOpts fo = { .path = in }, dro = { .path = out };
    IohtResult r;
    Run run = { 0 };
    int pin[2] = { -1, -1 }, pout[2] = { -1, -1 };
    const char *last;

    if (in) {
        g_assert_no_errno(pipe2(pin, O_CLOEXEC));
        s.in_fd = pin[0];
    }
    if (out) {
        g_assert_no_errno(pipe2(pout, O_CLOEXEC));
        s.out_fd = pout[1];
    }
    IohtChild child = ioht_spawn(&s);

    if (in) {
        close(pin[0]);
        feed = ioht_feed_start(pin[1], &fo);
    }
    if (out) {
        close(pout[1]);
        drain = ioht_drain_start(pout[0], &dro);
    }
    ioht_child_wait(&child, &r);
    if (feed) {
        ioht_pump_join(feed, NULL);
    }
    if (drain) {
        ioht_pump_join(drain, NULL);
    }
    run.code = r.code;
    run.peak = (guint64)r.ru.ru_maxrss * 1024;
    g_test_message("iohelper %s ...: exit %d, peak RSS %.1f MiB; stderr: %s", args[0], r.code,
                   (double)run.peak / MiB, r.err);
    g_assert_cmpint(r.code, ==, 0);
    last = g_strrstr(g_strchomp(r.err), "\n");
    run.parser = json_parser_new();
    g_assert_true(json_parser_load_from_data(run.parser, last ? last + 1 : r.err, -1, NULL));
    run.stats = json_node_get_object(json_parser_get_root(run.parser));
    ioht_result_clear(&r);
    return run;
}

static void
run_clear(Run *run)
{
    g_clear_object(&run->parser);
}

/* The layer @name of the stats' memory object (it must be there). */
static JsonObject *
layer_of(const Run *run, const char *name)
{
    JsonObject *mem = json_object_get_object_member(run->stats, "memory");
    JsonObject *layers = json_object_get_object_member(mem, "layers");

    g_assert_true(json_object_has_member(layers, name));
    return json_object_get_object_member(layers, name);
}

/* Whether a peak RSS means anything: under AddressSanitizer its shadow memory and
 * quarantine are most of it, so there the round trips and the account's own report are
 * checked, not the peak. */
/* The floor --stats=json gave for @run's layer @name. */
static gint64
floor_of(const Run *run, const char *name)
{
    return json_object_get_int_member(layer_of(run, name), "floor");
}

/* A round trip's end: @back holds what @src held; both runs cleared. */
static void
assert_round_trip(const char *src, const char *back, Run *save, Run *restore)
{
    g_assert_true(ioht_files_equal(src, back));
    run_clear(save);
    run_clear(restore);
}

static gboolean
rss_meaningful(void)
{
#if defined(__SANITIZE_ADDRESS__)
    g_test_message("AddressSanitizer: the peak RSS is not checked");
    return FALSE;
#else
    return TRUE;
#endif
}

/* The peak stays within @budget + @floors (the documented floors of the layers on) + the
 * base; the helper's report agrees: its floors within those, each layer between its floor
 * and its floor + the budget, scaled down exactly when it got less than it wanted. */
static void
assert_bounded(const Run *run, guint64 budget, guint64 floors)
{
    JsonObject *mem, *layers;
    g_autoptr(GList) names = NULL;
    guint64 reported = 0;

    g_test_message("peak %.1f MiB, bound %.1f MiB (budget %.1f + floors %.1f + base %.1f)",
                   (double)run->peak / MiB, (double)(budget + floors + BASE_BYTES) / MiB,
                   (double)budget / MiB, (double)floors / MiB, (double)BASE_BYTES / MiB);
    if (rss_meaningful()) {
        g_assert_cmpuint(run->peak, <=, budget + floors + BASE_BYTES);
    }
    g_assert_true(json_object_has_member(run->stats, "memory"));
    mem = json_object_get_object_member(run->stats, "memory");
    layers = json_object_get_object_member(mem, "layers");
    names = json_object_get_members(layers);
    g_assert_cmpint(json_object_get_int_member(mem, "budget"), ==, (gint64)budget);
    for (GList *l = names; l; l = l->next) {
        JsonObject *o = json_object_get_object_member(layers, l->data);
        gint64 floor = json_object_get_int_member(o, "floor");
        gint64 want = json_object_get_int_member(o, "want");
        gint64 got = json_object_get_int_member(o, "got");

        g_test_message("layer %s: floor %" G_GINT64_FORMAT ", want %" G_GINT64_FORMAT
                       ", got %" G_GINT64_FORMAT "%s", (char *)l->data, floor, want, got,
                       json_object_get_boolean_member(o, "scaled") ? ", scaled down" : "");
        g_assert_cmpint(got, >=, floor);
        g_assert_cmpint(got, <=, floor + (gint64)budget);
        g_assert_true(json_object_get_boolean_member(o, "scaled") == (got < want));
        reported += (guint64)floor;
    }
    g_assert_cmpuint(reported, <=, floors);
}

/* The NBD layer's floor: one request of 256 KiB per connection; it was scaled down. */
static void
assert_nbd_floor(const Run *run, guint conns)
{
    JsonObject *nbd = layer_of(run, "nbd");

    g_assert_cmpint(json_object_get_int_member(nbd, "floor"), ==,
                    (gint64)(conns * NBD_FLOOR_PER_CONN));
    g_assert_true(json_object_get_boolean_member(nbd, "scaled"));
}


/* A save of 96 MiB through zstd (64 threads) into nbdkit over 16 connections of 256
 * requests of 2 MiB, then the restore through the decompressor, each with 8 MiB of budget:
 * unbounded, the save peaked at 150-190 MiB (zstd's jobs and the request pool filling
 * with the stream), the restore at about 50 MiB. */
static void
test_nbd_zstd_round_trip(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = ioht_dir_path(fx, "src"), *back = ioht_dir_path(fx, "back");
    g_autofree char *rundir = ioht_dir_path(fx, "run");
    g_autofree char *length = NULL;
    const char *budget = "--memory-budget=8M";
    Server srv = { 0 };
    Run save, restore;

    (void)data;
    if (!server_start(&srv, fx->dir)) {
        server_stop(&srv);
        return;
    }
    write_stream(src, 96 * MiB);
    const char *save_args[] = { budget, "--compress=zstd:3", "--threads=64",
                                "--connections=16", "--requests=256", "--request-size=2M",
                                "--stats=json", "-", srv.uri, NULL };
    save = run_helper(save_args, rundir, src, NULL);
    assert_bounded(&save, 8 * MiB, RING_FLOOR + 16 * NBD_FLOOR_PER_CONN + ZSTD3_FLOOR_MAX);
    assert_nbd_floor(&save, 16);
    g_assert_cmpint(floor_of(&save, "ring"), ==, RING_FLOOR);
    g_assert_cmpint(floor_of(&save, "zstd"), <=, ZSTD3_FLOOR_MAX);
    g_assert_true(json_object_get_boolean_member(layer_of(&save, "zstd"), "scaled"));

    length = g_strdup_printf("--length=%" G_GINT64_FORMAT,
                             json_object_get_int_member(save.stats, "stored"));
    const char *restore_args[] = { budget, "--decompress", "--connections=16",
                                   "--requests=256", "--request-size=2M", length,
                                   "--stats=json", srv.uri, "-", NULL };
    restore = run_helper(restore_args, rundir, NULL, back);
    assert_bounded(&restore, 8 * MiB,
                   RING_FLOOR + 16 * NBD_FLOOR_PER_CONN + UNZSTD_FLOOR_MAX);
    assert_nbd_floor(&restore, 16);
    g_assert_cmpint(floor_of(&restore, "unzstd"), <=, UNZSTD_FLOOR_MAX);
    assert_round_trip(src, back, &save, &restore);
    server_stop(&srv);
}

/* zstd level 19 with 64 threads into a file, with no budget beyond the floors: unbounded,
 * 846-934 MiB on 200 MiB; here 32 MiB, then the restore, byte-exact. */
static void
test_zstd19_budget_zero(IohtDir *fx, gconstpointer data)
{
    g_autofree char *src = ioht_dir_path(fx, "src"), *img = ioht_dir_path(fx, "img");
    g_autofree char *back = ioht_dir_path(fx, "back");
    g_autofree char *rundir = ioht_dir_path(fx, "run");
    Run save, restore;

    (void)data;
    write_stream(src, 32 * MiB);
    const char *save_args[] = { "--memory-budget=0", "--compress=zstd:19", "--threads=64",
                                "--stats=json", "-", img, NULL };
    save = run_helper(save_args, rundir, src, NULL);
    assert_bounded(&save, 0, RING_FLOOR + ZSTD19_FLOOR_MAX);
    g_assert_cmpint(floor_of(&save, "zstd"), <=, ZSTD19_FLOOR_MAX);
    const char *restore_args[] = { "--memory-budget=0", "--decompress", "--stats=json", img,
                                   "-", NULL };
    restore = run_helper(restore_args, rundir, NULL, back);
    assert_bounded(&restore, 0, RING_FLOOR + UNZSTD_FLOOR_MAX);
    assert_round_trip(src, back, &save, &restore);
}

/* An image whose first frame has a small window and a later one a window of 128 MiB
 * (`zstd --long=27` from a pipe, which records the whole window): the decoder's floor
 * is the largest window any frame asks, charged when that frame's header is read, so
 * the account and --stats say what libzstd allocates (charged for the first frame
 * only, the floor left the later window out). */
static void
test_unzstd_later_window(IohtDir *fx, gconstpointer data)
{
    g_autofree char *img = ioht_dir_path(fx, "img"), *back = ioht_dir_path(fx, "back");
    g_autofree char *rundir = ioht_dir_path(fx, "run");
    g_autofree char *cmd = NULL, *err = NULL;
    int status = 0;
    Run restore;

    (void)data;
    cmd = g_strdup_printf("sh -c 'printf x | zstd -q -1 -c > \"%s\" && "
                          "head -c 1M /dev/urandom | zstd -q -1 --long=27 -c >> \"%s\"'",
                          img, img);
    g_assert_true(g_spawn_command_line_sync(cmd, NULL, &err, &status, NULL));
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    const char *args[] = { "--memory-budget=0", "--decompress", "--stats=json", img, "-",
                           NULL };
    restore = run_helper(args, rundir, NULL, back);
    g_assert_cmpint(floor_of(&restore, "unzstd"), >=, 128 * MiB);
    if (rss_meaningful()) {
        g_assert_cmpuint(restore.peak, <=,
                         (guint64)floor_of(&restore, "unzstd") + RING_FLOOR + BASE_BYTES);
    }
    run_clear(&restore);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    ioht_dir_add("/memory/nbd-zstd/round-trip", NULL, test_nbd_zstd_round_trip);
    ioht_dir_add("/memory/zstd19/budget-zero", NULL, test_zstd19_budget_zero);
    ioht_dir_add("/memory/unzstd/later-frame-window", NULL, test_unzstd_later_window);
    return g_test_run();
}
