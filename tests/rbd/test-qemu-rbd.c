/* test-qemu-rbd.c - qemu-iohelper saves a real QEMU guest to an RBD image and restores it
 * (issue 29): a test cluster of its own (scripts/ceph-cluster, in the test's work
 * directory, stopped at the end whatever happened), the guest's RAM compared byte for
 * byte (pmemsave), raw and --compress, and with --channels=2 (issue 31: each channel's
 * helper writes its region of one image). The image's name carries conf= and keyring=:
 * the report names it without them. Skips without QEMU or the Ceph packages. */
#include <signal.h>
#include <string.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-test.h"

static char *workdir;
static char *data_file;    /* what the source guest holds */
static char *other_file;   /* what the destination holds before the restore */
static char *cluster_dir;
static char *conf;         /* the cluster's ceph.conf (NULL: no cluster) */
static const char *skip_reason;

static char *
cluster_script(void)
{
    return g_build_filename(g_getenv("IOH_SOURCE_ROOT") ? g_getenv("IOH_SOURCE_ROOT")
                                                        : SOURCE_ROOT,
                            "scripts", "ceph-cluster", NULL);
}

/* The cluster, started once for the cases; its failure is every case's skip reason. */
static void
cluster_start(void)
{
    const char *tools[] = { "ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "uuidgen" };
    g_autofree char *script = cluster_script();
    g_autofree char *out = NULL, *err = NULL;
    const char *argv[] = { script, "start", NULL, NULL };
    int status = 0;

    for (gsize i = 0; i < G_N_ELEMENTS(tools); i++) {
        g_autofree char *p = g_find_program_in_path(tools[i]);
        if (!p) {
            skip_reason = "the Ceph packages are not installed (scripts/deps/rbd.txt)";
            return;
        }
    }
    if (!qgt_qemu_binary()) {
        skip_reason = "qemu-system-x86_64 is not installed";
        return;
    }
    cluster_dir = g_build_filename(workdir, "cluster", NULL);
    argv[2] = cluster_dir;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err, &status, NULL));
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_printerr("%s", err);
        g_error("the test cluster did not start");
    }
    conf = g_strstrip(g_steal_pointer(&out));
}

static void
cluster_stop(void)
{
    g_autofree char *script = cluster_script();
    const char *argv[] = { script, "stop", cluster_dir, NULL };

    if (cluster_dir) {
        g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL |
                     G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    }
}

/* qemu-iohelper's name of rbd:rbd/@image (@image may carry @SNAP), with conf= and
 * keyring=. */
static char *
image_name(const char *image)
{
    g_autofree char *keyring = g_build_filename(cluster_dir, "keyring.client.admin", NULL);

    return g_strdup_printf("rbd:rbd/%s:conf=%s:keyring=%s", image, conf, keyring);
}

/* Restores rbd:rbd/@image into a guest that held other_file, compares the RAM. */
static void
restore_compare(const char *image)
{
    g_autofree char *dump = g_build_filename(workdir, "rt.dump", NULL);
    g_autofree char *name = image_name(image);
    QgtQemu *q = qgt_qemu_start(other_file, TRUE);
    const char *args[] = { "restore", "--qmp", q->sock, name, NULL };

    g_assert_cmpint(qgt_tool_run_timeout(args, 240, NULL, NULL), ==, 0);
    qgt_qemu_pmemsave(q, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, data_file));
    qgt_qemu_stop(q);
    g_unlink(dump);
}

/* Saves a guest holding data_file to rbd:rbd/@image (with @extra and @extra2, each may be
 * NULL), restores it and compares the RAM; the save's --stats=json holds @expect (or
 * NULL). */
static void
roundtrip_expect(const char *image, const char *extra, const char *extra2, const char *expect)
{
    g_autofree char *name = NULL;
    g_autofree char *shown = g_strdup_printf("\"file\":\"rbd:rbd/%s\"", image);
    g_autofree char *out = NULL, *err = NULL;
    QgtQemu *q;

    if (skip_reason) {
        g_test_skip(skip_reason);
        return;
    }
    name = image_name(image);
    q = qgt_qemu_start(data_file, FALSE);
    {
        const char *args[] = { "save", "--qmp", q->sock, name, "--stats=json", extra,
                               extra ? extra2 : NULL, NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 240, &out, &err), ==, 0);
    }
    ioht_assert_contains(out, shown);
    if (expect) {
        ioht_assert_contains(out, expect);
    }
    g_assert_null(strstr(out, "keyring"));
    g_assert_null(strstr(err, "keyring"));
    qgt_qemu_stop(q);
    restore_compare(image);
}

static void
roundtrip(const char *image, const char *extra)
{
    roundtrip_expect(image, extra, NULL, NULL);
}

/* The rbd CLI on the test cluster with @tail (NULL-terminated, at most 6): its success. */
static gboolean
rbd_cli(const char *const *tail)
{
    g_autofree char *keyring = g_build_filename(cluster_dir, "keyring.client.admin", NULL);
    const char *argv[12] = { "rbd", "--conf", conf, "--keyring", keyring };
    int status = -1;

    for (guint i = 0; tail[i]; i++) {
        g_assert_cmpuint(i, <, 6);
        argv[5 + i] = tail[i];
    }
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH |
                               G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, NULL, NULL, &status, NULL));
    return g_spawn_check_wait_status(status, NULL);
}

/* Whether rbd/@image holds the metadata @key. */
static gboolean
image_has_meta(const char *image, const char *key)
{
    g_autofree char *spec = g_strdup_printf("rbd/%s", image);
    const char *tail[] = { "image-meta", "get", spec, key, NULL };

    return rbd_cli(tail);
}

/* --channels=2 into one image: each channel's helper writes its region, none records the
 * single-stream length (the last one's would name one region the image's stream). A
 * snapshot of it restores (each region's offset and length from the header). Then a
 * single-stream save over it (it records its length), then channels again: that record
 * is forgotten before the regions are written (a plain `iohelper` restore of the image
 * would otherwise read the old length's bytes as a stream). */
static void
test_channels(void)
{
    const char *snap[] = { "snap", "create", "rbd/vm3@s1", NULL };

    roundtrip_expect("vm3", "--channels=2", NULL, "\"per_channel\"");
    if (skip_reason) {
        return;
    }
    g_assert_false(image_has_meta("vm3", "iohelper.length"));
    g_assert_false(image_has_meta("vm3", "iohelper.offset"));
    g_assert_true(rbd_cli(snap));
    roundtrip("vm3", NULL);
    g_assert_true(image_has_meta("vm3", "iohelper.length"));
    roundtrip_expect("vm3", "--channels=2", NULL, "\"per_channel\"");
    g_assert_false(image_has_meta("vm3", "iohelper.length"));
    g_assert_false(image_has_meta("vm3", "iohelper.offset"));
    restore_compare("vm3@s1");
}

/* Each channel's helper compresses its region (zstd frames), as to a file. */
static void
test_channels_compressed(void)
{
    roundtrip_expect("vm4", "--channels=2", "--compress", "\"compression\":\"zstd\"");
}

/* An existing image too small for the header and 3 regions (vm1: a single-stream save's,
 * sized for one stream) is refused before the guest is paused, one line, and left as it
 * was (its single-stream record still there). */
static void
test_channels_too_small(void)
{
    g_autofree char *name = NULL, *err = NULL, *st = NULL;
    QgtQemu *q;

    if (skip_reason) {
        g_test_skip(skip_reason);
        return;
    }
    g_assert_true(image_has_meta("vm1", "iohelper.length"));
    name = image_name("vm1");
    q = qgt_qemu_start(data_file, FALSE);
    {
        const char *args[] = { "save", "--qmp", q->sock, name, "--channels=2", NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 240, NULL, &err), ==, 1);
    }
    qgt_assert_one_line(err);
    ioht_assert_contains(err, "image rbd:rbd/vm1 is ");
    ioht_assert_contains(err, "may need up to");
    g_assert_null(strstr(err, "keyring"));
    st = qgt_qemu_status(q);
    g_assert_cmpstr(st, ==, "prelaunch");   /* as started: never paused nor migrated */
    qgt_qemu_stop(q);
    g_assert_true(image_has_meta("vm1", "iohelper.length"));
}

/* A snapshot is read-only: --channels into one is a usage error, before QEMU is asked
 * anything (the QMP socket does not exist). */
static void
test_channels_snapshot(void)
{
    g_autofree char *keyring = g_build_filename(cluster_dir ? cluster_dir : workdir,
                                                "keyring.client.admin", NULL);
    g_autofree char *name = g_strdup_printf("rbd:rbd/vm3@s1:conf=%s:keyring=%s",
                                            conf ? conf : "none", keyring);
    g_autofree char *sock = g_build_filename(workdir, "no-qmp.sock", NULL);
    const char *args[] = { "save", "--qmp", sock, "--channels=2", name, NULL };

    /* the name without conf= and keyring=: the needle ends where they would start */
    qgt_assert_usage(args, "not a snapshot (rbd:rbd/vm3@s1 is read-only: restore from it");
}

static void
test_raw(void)
{
    roundtrip("vm1", NULL);
}

static void
test_compressed(void)
{
    roundtrip("vm2", "--compress");
}

int
main(int argc, char **argv)
{
    int ret;

    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: %s QEMU-IOHELPER-PATH\n", argv[0]);
        return 2;
    }
    qgt_set_tool(argv[1]);
    workdir = ioht_workdir();
    data_file = g_build_filename(workdir, "guest-1.bin", NULL);
    other_file = g_build_filename(workdir, "guest-2.bin", NULL);
    ioht_write_random_file(data_file, QGT_DATA_SIZE, 1);
    ioht_write_random_file(other_file, QGT_DATA_SIZE, 2);
    cluster_start();
    g_test_add_func("/rbd/qemu/roundtrip", test_raw);
    g_test_add_func("/rbd/qemu/roundtrip-compressed", test_compressed);
    g_test_add_func("/rbd/qemu/channels", test_channels);
    g_test_add_func("/rbd/qemu/channels-compressed", test_channels_compressed);
    g_test_add_func("/rbd/qemu/channels-image-too-small", test_channels_too_small);
    g_test_add_func("/rbd/qemu/channels-snapshot-refused", test_channels_snapshot);
    ret = g_test_run();
    cluster_stop();
    ioht_workdir_remove(workdir);
    return ret;
}
