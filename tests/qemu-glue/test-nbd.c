/* test-nbd.c - qemu-iohelper saves a real QEMU guest to an NBD export and restores it
 * from there: nbdkit (memory, file) and qemu-nbd serving a qcow2, each started here on a
 * unix socket; and the failures: an export too small, the server killed mid-save (the
 * placeholder stays: a restore refuses the image), a mute server (save and SIGTERM during
 * a restore's handshake), a server without flush. Skipped with the reason when QEMU,
 * nbdkit or qemu-nbd is missing (CI installs them). */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-image-nbd.h"
#include "qg-test.h"

static char *workdir;
static char *data_file;    /* what the source guest holds */
static char *other_file;   /* what the destination holds before the restore */

typedef struct {
    GPid pid;
    char *sock;
    char *uri;
} Server;

/* Starts @argv (the server, serving on @s->sock) and waits for its socket. */
static gboolean
server_start(Server *s, const char *const *argv)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *prog = g_find_program_in_path(argv[0]);

    if (!qgt_qemu_binary() || !prog) {
        g_test_skip(prog ? "qemu-system-x86_64 is not installed"
                         : "nbdkit or qemu-nbd is not installed (Debian nbdkit, qemu-utils)");
        return FALSE;
    }
    g_unlink(s->sock);
    g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH |
                                G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &s->pid, &error));
    for (int i = 0; i < 1000 && !g_file_test(s->sock, G_FILE_TEST_EXISTS); i++) {
        g_usleep(10000);
    }
    g_assert_true(g_file_test(s->sock, G_FILE_TEST_EXISTS));
    return TRUE;
}

static Server *
server_new(const char *name)
{
    Server *s = g_new0(Server, 1);

    s->sock = g_build_filename(workdir, name, NULL);
    s->uri = g_strdup_printf("nbd+unix:///?socket=%s", s->sock);
    return s;
}

static void
server_kill(Server *s)
{
    if (s->pid) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        g_spawn_close_pid(s->pid);
        s->pid = 0;
    }
}

static void
server_free(Server *s)
{
    server_kill(s);
    g_unlink(s->sock);
    g_free(s->sock);
    g_free(s->uri);
    g_free(s);
}

/* nbdkit PLUGIN ARG, or with @filter (e.g. "delay") that filter and its @farg
 * ("delay-write=2000ms"). */
static gboolean
nbdkit(Server *s, const char *plugin, const char *arg, const char *filter,
       const char *farg)
{
    g_autofree char *fopt = g_strdup_printf("--filter=%s", filter ? filter : "");
    const char *argv[] = { "nbdkit", "-f", "--unix", s->sock, plugin, arg, NULL };
    const char *fargv[] = { "nbdkit", "-f", "--unix", s->sock, fopt, plugin, arg, farg,
                            NULL };

    return server_start(s, filter ? fargv : argv);
}

/* The tool on @q with @cmd and @uri: its exit code, *ret_err its stderr. */
static int
tool(const char *cmd, QgtQemu *q, const char *uri, char **ret_err)
{
    const char *args[] = { cmd, "--qmp", q->sock, uri, NULL };

    return qgt_tool_run_timeout(args, 240, NULL, ret_err);
}

/* Saves a guest holding data_file to @uri (with @extra, e.g. "--compress=zstd:1", or NULL),
 * restores it into another, compares RAM. */
static void
roundtrip(const char *uri, const char *extra)
{
    g_autofree char *dump = g_build_filename(workdir, "rt.dump", NULL);
    g_autoptr(QgImageNbd) img = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    g_autofree char *out = NULL, *err = NULL;
    /* a query secret (libnbd ignores tls-psk-file without TLS): never printed */
    g_autofree char *secret_uri = g_strdup_printf("%s&tls-psk-file=/SECRET", uri);
    QgtQemu *q = qgt_qemu_start(data_file, FALSE);
    const char *args[] = { "save", "--qmp", q->sock, secret_uri, "--stats=json", extra, NULL };

    g_assert_cmpint(qgt_tool_run_timeout(args, 240, &out, &err), ==, 0);
    g_assert_nonnull(strstr(out, "\"file\":\"nbd+unix:///?socket="));
    g_assert_null(strstr(out, "SECRET"));
    g_assert_null(strstr(err, "SECRET"));
    qgt_qemu_stop(q);
    img = qg_image_nbd_open(uri, FALSE, 0, NULL, NULL);
    g_assert_nonnull(img);
    info = qg_image_nbd_read_header(img, NULL);   /* the final header, complete */
    g_assert_nonnull(info);
    g_assert_cmpuint(info->stream_length, >, QGT_DATA_SIZE);
    if (extra) {    /* compressed on the export: the header says so, frames are smaller */
        g_assert_nonnull(info->compression);
        g_assert_cmpuint(info->stored_length, <, info->stream_length);
    } else {
        g_assert_null(info->compression);
        g_assert_cmpuint(info->stored_length, ==, info->stream_length);
    }
    g_clear_pointer(&img, qg_image_nbd_free);     /* qemu-nbd: one client at a time */
    q = qgt_qemu_start(other_file, TRUE);
    g_assert_cmpint(tool("restore", q, uri, NULL), ==, 0);
    qgt_qemu_pmemsave(q, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, data_file));
    qgt_qemu_stop(q);
    g_unlink(dump);
}

static void
test_nbdkit_memory(void)
{
    Server *s = server_new("mem.sock");

    if (nbdkit(s, "memory", "300M", NULL, NULL)) {
        roundtrip(s->uri, NULL);
    }
    server_free(s);
}

/* save --compress to an export: the frames after the header, restored with no flag. */
static void
test_nbdkit_memory_compressed(void)
{
    Server *s = server_new("memz.sock");

    if (nbdkit(s, "memory", "300M", NULL, NULL)) {
        roundtrip(s->uri, "--compress=zstd:1");   /* a fixed level: auto may store raw */
    }
    server_free(s);
}

static void
test_qemu_nbd_qcow2(void)
{
    g_autofree char *disk = g_build_filename(workdir, "disk.qcow2", NULL);
    const char *mk[] = { "qemu-img", "create", "-q", "-f", "qcow2", disk, "300M", NULL };
    Server *s = server_new("qnbd.sock");
    /* one client at a time (qemu-nbd's default): the tool's header connection and the
     * helper's never overlap */
    const char *argv[] = { "qemu-nbd", "--persistent", "--format=qcow2",
                           "--socket", s->sock, disk, NULL };
    g_autofree char *qemu_img = g_find_program_in_path("qemu-img");

    if (!qemu_img) {
        g_test_skip("qemu-img is not installed (Debian qemu-utils)");
    } else {
        mk[0] = qemu_img;
        g_assert_cmpint(ioht_run((char **)mk, -1, -1, NULL), ==, 0);
        if (server_start(s, argv)) {
            roundtrip(s->uri, NULL);
        }
    }
    server_free(s);
    g_unlink(disk);
}

/* 64 MiB for a 256 MiB guest: refused before QEMU sends a byte; no header written. */
static void
test_too_small(void)
{
    Server *s = server_new("small.sock");
    g_autofree char *err = NULL, *want = NULL, *status = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageNbd) img = NULL;
    QgtQemu *q;

    if (!nbdkit(s, "memory", "64M", NULL, NULL)) {
        server_free(s);
        return;
    }
    q = qgt_qemu_start(data_file, FALSE);
    g_assert_cmpint(tool("save", q, s->uri, &err), ==, 1);
    qgt_assert_one_line(err);
    want = g_strdup_printf("export %s is 67108864 bytes, the image may need up to", s->uri);
    g_assert_nonnull(strstr(err, want));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");   /* never migrated, never paused by us */
    qgt_qemu_stop(q);
    img = qg_image_nbd_open(s->uri, FALSE, 0, NULL, NULL);
    g_assert_null(qg_image_nbd_read_header(img, &error));
    g_assert_error(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_BAD_MAGIC);   /* zeros */
    server_free(s);
}

/* What is left to read on @fd (closed). */
static char *
read_all(int fd)
{
    GString *out = g_string_new(NULL);
    char buf[4096];
    ssize_t n;

    while ((n = read(fd, buf, sizeof buf)) > 0) {
        g_string_append_len(out, buf, n);
    }
    close(fd);
    return g_string_free(out, FALSE);
}

/* Waits until the export's header is the placeholder (the save is in flight). */
static void
wait_placeholder(const char *uri)
{
    for (int i = 0; i < 3000; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(QgImageNbd) img = qg_image_nbd_open(uri, FALSE, 0, NULL, NULL);
        g_autoptr(QgImageInfo) info = img ? qg_image_nbd_read_header(img, &error) : NULL;

        if (g_error_matches(error, QG_IMAGE_ERROR, QG_IMAGE_ERROR_INCOMPLETE)) {
            return;
        }
        g_usleep(10000);
    }
    g_assert_not_reached();
}

/* nbdkit file (slowed by the delay filter) killed mid-stream: the tool fails, the file
 * keeps the placeholder, and a restore from it (served again) refuses it. */
static void
test_killed_server(void)
{
    g_autofree char *disk = g_build_filename(workdir, "killed.img", NULL);
    g_autofree char *err = NULL;
    g_autoptr(GError) error = NULL;
    Server *s = server_new("killed.sock");
    const char *args[] = { qgt_tool(), "save", "--qmp", NULL, s->uri, NULL };
    QgtQemu *q;
    GPid pid;
    int status, err_fd = -1;

    g_assert_true(g_file_set_contents(disk, "", 0, NULL));
    g_assert_cmpint(truncate(disk, 300 << 20), ==, 0);
    if (!nbdkit(s, "file", disk, "delay", "delay-write=2000ms")) {
        server_free(s);
        return;
    }
    q = qgt_qemu_start(data_file, FALSE);
    args[3] = q->sock;
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)args, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                           NULL, NULL, &err_fd, &error));
    /* Every write waits 2 s: the 64 MiB stream (256 requests of 256 KiB, at most 64
     * in flight) cannot be through in less than 8 s; 1 s after the placeholder, the
     * helper is mid-stream. */
    wait_placeholder(s->uri);
    g_usleep(G_USEC_PER_SEC);
    server_kill(s);
    g_assert_true(ioht_wait_timeout(pid, 120000, &status));
    err = read_all(err_fd);
    g_test_message("status %d, stderr: %s", status, err);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(err, s->sock));   /* names the export */
    g_clear_pointer(&err, g_free);
    qgt_qemu_stop(q);
    g_assert_true(nbdkit(s, "file", disk, NULL, NULL));
    q = qgt_qemu_start(other_file, TRUE);
    g_assert_cmpint(tool("restore", q, s->uri, &err), ==, 1);
    g_assert_nonnull(strstr(err, "incomplete image"));
    qgt_qemu_stop(q);
    server_free(s);
    g_unlink(disk);
}

/* A listening unix socket that nobody accepts on: connections complete in the kernel's
 * backlog and the server never says a word (a mute server). */
static int
mute_listen(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    g_unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(fd, 16), ==, 0);
    return fd;
}

/* A save to a mute server: the header's connection gives up after --stall-timeout, one
 * line naming the URI, the guest untouched (it hung before: a blocking connect). */
static void
test_mute_save(void)
{
    Server *s = server_new("mute.sock");
    g_autofree char *err = NULL, *status = NULL;
    QgtQemu *q;
    int fd;

    if (!qgt_qemu_binary()) {
        g_test_skip("qemu-system-x86_64 is not installed");
        server_free(s);
        return;
    }
    fd = mute_listen(s->sock);
    q = qgt_qemu_start(data_file, FALSE);
    {
        const char *args[] = { "save", "--qmp", q->sock, s->uri, "--stall-timeout=3", NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 100, NULL, &err), ==, 1);
    }
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    g_assert_nonnull(strstr(err, "the server did not complete the NBD handshake in 3 s"));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");   /* never paused, never migrated */
    qgt_qemu_stop(q);
    close(fd);
    server_free(s);
}

/* A restore from a mute server, SIGTERM while the handshake waits: the tool ends at
 * once, exit 1 (it ignored SIGTERM before, in a blocking connect). */
static void
test_mute_restore_sigterm(void)
{
    Server *s = server_new("mute2.sock");
    g_autoptr(GError) error = NULL;
    g_autofree char *err = NULL;
    const char *args[] = { qgt_tool(), "restore", "--qmp", NULL, s->uri, NULL };
    struct pollfd p = { .events = POLLIN };
    QgtQemu *q;
    GPid pid;
    int status, err_fd = -1;

    if (!qgt_qemu_binary()) {
        g_test_skip("qemu-system-x86_64 is not installed");
        server_free(s);
        return;
    }
    p.fd = mute_listen(s->sock);
    q = qgt_qemu_start(other_file, TRUE);
    args[3] = q->sock;
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)args, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                           NULL, NULL, &err_fd, &error));
    /* the listening socket turns readable once the tool's connection waits in it */
    g_assert_cmpint(poll(&p, 1, 60000), ==, 1);
    g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
    g_assert_true(ioht_wait_timeout(pid, 60000, &status));
    err = read_all(err_fd);
    g_test_message("status %d, stderr: %s", status, err);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    qgt_qemu_stop(q);
    close(p.fd);
    server_free(s);
}

/* A server that completes the handshake and then does not answer the header's commands
 * (nbdkit's delay filter, 60 s per write, per read): the save fails after its
 * --stall-timeout on the placeholder's write, the guest untouched; the restore after its
 * --stall-timeout on the header's read. They waited for each answer before (blocking
 * nbd_pwrite(), nbd_pread()), --stall-timeout and SIGTERM alike. */
static void
test_slow_header(void)
{
    Server *s = server_new("slowhdr.sock");
    g_autofree char *err = NULL, *err2 = NULL, *status = NULL;
    QgtQemu *q;

    if (!nbdkit(s, "memory", "300M", "delay", "delay-write=60")) {
        server_free(s);
        return;
    }
    q = qgt_qemu_start(data_file, FALSE);
    {
        const char *args[] = { "save", "--qmp", q->sock, s->uri, "--stall-timeout=3", NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 40, NULL, &err), ==, 1);
    }
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    g_assert_nonnull(strstr(err, "write "));
    g_assert_nonnull(strstr(err, "the server did not answer in 3 s"));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");
    qgt_qemu_stop(q);
    server_kill(s);
    g_assert_true(nbdkit(s, "memory", "300M", "delay", "delay-read=60"));
    q = qgt_qemu_start(other_file, TRUE);
    {
        const char *args[] = { "restore", "--qmp", q->sock, s->uri, "--stall-timeout=3",
                               NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 40, NULL, &err2), ==, 1);
    }
    qgt_assert_one_line(err2);
    g_assert_nonnull(strstr(err2, "read "));
    g_assert_nonnull(strstr(err2, "the server did not answer in 3 s"));
    qgt_qemu_stop(q);
    server_free(s);
}

/* A server that answers the placeholder's flush and then no flush (nbdkit's eval plugin,
 * 60 s per later flush): the helper's final flush fails the save after --stall-timeout,
 * one line naming the URI. The job's own stall watch follows QEMU's progress, which ends
 * with the stream: the save waited for the answer, --stall-timeout=3 or not. A guest of
 * 1 MiB of data: its stream stays under the helper's write-behind flush (32 MiB), so
 * that the final flush is the one that meets the mute server. */
static void
test_flush_mute_after_stream(void)
{
    Server *s = server_new("mflush.sock");
    g_autofree char *flag = g_build_filename(workdir, "mflush.first", NULL);
    g_autofree char *flush = g_strdup_printf("flush=if [ -e %s ]; then sleep 60; else "
                                             ": >%s; fi", flag, flag);
    const char *argv[] = { "nbdkit", "-f", "--unix", s->sock, "eval",
                           "get_size=echo 314572800", "can_write=exit 0", "can_flush=exit 0",
                           "pwrite=cat >/dev/null", "pread=head -c $3 /dev/zero", flush,
                           NULL };
    g_autofree char *err = NULL;
    g_autofree char *small = g_build_filename(workdir, "mflush.data", NULL);
    QgtQemu *q;

    g_unlink(flag);
    ioht_write_random_file(small, 1 << 20, 5);
    if (!server_start(s, argv)) {
        server_free(s);
        return;
    }
    q = qgt_qemu_start(small, FALSE);
    {
        const char *args[] = { "save", "--qmp", q->sock, s->uri, "--stall-timeout=3", NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 45, NULL, &err), ==, 1);
    }
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    g_assert_nonnull(strstr(err, "flush "));
    g_assert_nonnull(strstr(err, "the server did not answer in 3 s"));
    qgt_qemu_stop(q);
    g_unlink(small);
    server_free(s);
}

/* A server that does not advertise flush (nbdkit eval without a flush method; its
 * writes fail, so that a write would show): refused before the placeholder is written,
 * one line naming the URI, the guest untouched. */
static void
test_no_flush(void)
{
    Server *s = server_new("noflush.sock");
    const char *argv[] = { "nbdkit", "-f", "--unix", s->sock, "eval",
                           "get_size=echo 314572800", "can_write=exit 0",
                           "pwrite=echo EIO no >&2; exit 1", NULL };
    g_autofree char *err = NULL, *status = NULL;
    QgtQemu *q;

    if (!server_start(s, argv)) {
        server_free(s);
        return;
    }
    q = qgt_qemu_start(data_file, FALSE);
    g_assert_cmpint(tool("save", q, s->uri, &err), ==, 1);
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    g_assert_nonnull(strstr(err, "NBD server does not support flush: cannot make the save "
                                 "durable"));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");
    qgt_qemu_stop(q);
    server_free(s);
}

/* A complete image of the guest holding data_file in @disk (300 MiB), saved through
 * nbdkit file on @s, which is stopped again; FALSE (skipped) without the tools. */
static gboolean
save_to_file(Server *s, const char *disk)
{
    QgtQemu *q;

    g_assert_true(g_file_set_contents(disk, "", 0, NULL));
    g_assert_cmpint(truncate(disk, 300 << 20), ==, 0);
    if (!nbdkit(s, "file", disk, NULL, NULL)) {
        return FALSE;
    }
    q = qgt_qemu_start(data_file, FALSE);
    g_assert_cmpint(tool("save", q, s->uri, NULL), ==, 0);
    qgt_qemu_stop(q);
    server_kill(s);
    return TRUE;
}

/* A guest whose RAM is all random (loaders below the 640 KiB hole, from 1 MiB to
 * QGT_DATA_ADDR, and data_file's from there on): its stream is larger than its RAM
 * size (each page's header, the ROMs). */
static QgtQemu *
full_guest_start(void)
{
    g_autofree char *low = g_build_filename(workdir, "full-low.bin", NULL);
    g_autofree char *mid = g_build_filename(workdir, "full-mid.bin", NULL);
    g_autofree char *high = g_build_filename(workdir, "full-high.bin", NULL);
    g_autofree char *a1 = g_strdup_printf("loader,file=%s,addr=0x0,force-raw=on", low);
    g_autofree char *a2 = g_strdup_printf("loader,file=%s,addr=0x100000,force-raw=on", mid);
    const char *extra[] = { "-device", a1, "-device", a2, NULL };
    QgtQemu *q;

    ioht_write_random_file(low, 0xa0000, 3);
    ioht_write_random_file(mid, QGT_DATA_ADDR - 0x100000, 4);
    ioht_write_random_file(high, ((guint64)QGT_RAM_MIB << 20) - QGT_DATA_ADDR, 5);
    qgt_qemu_extra_args = extra;
    q = qgt_qemu_start(high, FALSE);
    qgt_qemu_extra_args = NULL;
    g_unlink(low);
    g_unlink(mid);
    g_unlink(high);
    return q;
}

/* The image on @s's export: its header, complete. */
static QgImageInfo *
export_header(Server *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageNbd) img = qg_image_nbd_open(s->uri, FALSE, 0, NULL, &error);
    QgImageInfo *info;

    g_assert_no_error(error);
    info = qg_image_nbd_read_header(img, &error);
    g_assert_no_error(error);
    return info;
}

/* An export of the header + the guest's RAM size (what the old check let through) holding
 * a good image; a guest whose RAM is all random, whose stream is larger than that: the
 * save is refused before anything is written, and the image there stays whole (it was
 * overwritten by the placeholder and half a stream). */
static void
test_bound_keeps_old_image(void)
{
    g_autofree char *disk = g_build_filename(workdir, "bound.img", NULL);
    g_autofree char *err = NULL, *status = NULL;
    g_autoptr(QgImageInfo) before = NULL, after = NULL;
    Server *s = server_new("bound.sock");
    QgtQemu *q;

    if (!save_to_file(s, disk)) {
        server_free(s);
        return;
    }
    g_assert_cmpint(truncate(disk, QG_IMAGE_HEADER_SIZE + ((off_t)QGT_RAM_MIB << 20)), ==, 0);
    g_assert_true(nbdkit(s, "file", disk, NULL, NULL));
    before = export_header(s);
    q = full_guest_start();
    g_assert_cmpint(tool("save", q, s->uri, &err), ==, 1);
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, "the image may need up to"));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");
    qgt_qemu_stop(q);
    after = export_header(s);
    g_assert_cmpuint(after->checksum, ==, before->checksum);
    g_assert_cmpuint(after->stored_length, ==, before->stored_length);
    server_free(s);
    g_unlink(disk);
}

/* A server that answers the header's reads and then no read past it (nbdkit's eval
 * plugin over a saved image, 60 s per read beyond the 4 KiB header): the restore fails
 * after its --stall-timeout with one line naming the URI, and no QEMU is left that could
 * run the guest; it never waits for the server's answer. */
static void
test_stream_mute_restore(void)
{
    Server *s = server_new("mread.sock");
    g_autofree char *disk = g_build_filename(workdir, "mread.img", NULL);
    g_autofree char *pread = NULL, *err = NULL;
    QgtQemu *q;

    if (!save_to_file(s, disk)) {
        server_free(s);
        return;
    }
    pread = g_strdup_printf("pread=if [ $4 -ge 4096 ]; then sleep 60; fi; "
                            "dd if=%s iflag=skip_bytes,count_bytes skip=$4 count=$3 "
                            "status=none", disk);
    {
        const char *argv[] = { "nbdkit", "-f", "--unix", s->sock, "eval",
                               "get_size=echo 314572800", pread, NULL };

        g_assert_true(server_start(s, argv));
    }
    q = qgt_qemu_start(other_file, TRUE);
    {
        const char *args[] = { "restore", "--qmp", q->sock, s->uri, "--stall-timeout=3",
                               NULL };

        g_assert_cmpint(qgt_tool_run_timeout(args, 45, NULL, &err), ==, 1);
    }
    qgt_assert_one_line(err);
    g_assert_nonnull(strstr(err, s->sock));
    qgt_qemu_stop(q);
    g_unlink(disk);
    server_free(s);
}

/* QEMU's legacy "nbd:HOST" syntax: a usage error before QEMU is asked anything, never a
 * local file of that name. */
static void
test_legacy_syntax(void)
{
    static const char *const specs[] = { "nbd:127.0.0.1", "nbd:unix:/x.sock:exportname=e" };

    for (guint i = 0; i < G_N_ELEMENTS(specs); i++) {
        const char *args[] = { "save", "--qmp", "/nonexistent/qmp.sock", specs[i], NULL };
        g_autofree char *err = NULL;

        g_assert_cmpint(qgt_tool_run_timeout(args, 60, NULL, &err), ==, 2);
        qgt_assert_one_line(err);
        g_assert_nonnull(strstr(err, "legacy NBD syntax: use an NBD URI"));
        g_assert_false(g_file_test(specs[i], G_FILE_TEST_EXISTS));
    }
}

/* What the source guest holds (seed 1) and what the destination holds before (seed 2). */
static void
make_guest_data(void)
{
    char **files[] = { &data_file, &other_file };

    workdir = ioht_workdir();
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *name = g_strdup_printf("guest-%u.bin", i + 1);

        *files[i] = g_build_filename(workdir, name, NULL);
        ioht_write_random_file(*files[i], QGT_DATA_SIZE, i + 1);
    }
}

/* A complete image on nbdkit file, served again through the truncate filter as an
 * export shorter than the stream its header announces: the restore refuses it before
 * QEMU gets a byte. */
static void
test_truncated(void)
{
    g_autofree char *disk = g_build_filename(workdir, "trunc.img", NULL);
    g_autofree char *err = NULL, *status = NULL;
    Server *s = server_new("trunc.sock");
    QgtQemu *q;

    if (!save_to_file(s, disk)) {
        server_free(s);
        return;
    }
    g_assert_true(nbdkit(s, "file", disk, "truncate", "truncate=32M"));
    q = qgt_qemu_start(other_file, TRUE);
    g_assert_cmpint(tool("restore", q, s->uri, &err), ==, 1);
    g_assert_nonnull(strstr(err, "image truncated"));
    g_assert_nonnull(strstr(err, "the export is 33554432 bytes"));
    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "inmigrate");   /* untouched: still waits */
    qgt_qemu_stop(q);
    server_free(s);
    g_unlink(disk);
}

int
main(int argc, char **argv)
{
    int ret;

    signal(SIGPIPE, SIG_IGN);   /* a killed helper: EPIPE, not death */
    g_test_init(&argc, &argv, NULL);
    if (argc < 2) {
        g_printerr("usage: %s QEMU-IOHELPER-PATH\n", argv[0]);
        return 2;
    }
    make_guest_data();
    qgt_set_tool(argv[1]);

    g_test_add_func("/qemu/nbd/roundtrip/nbdkit-memory", test_nbdkit_memory);
    g_test_add_func("/qemu/nbd/roundtrip/qemu-nbd-qcow2", test_qemu_nbd_qcow2);
    g_test_add_func("/qemu/nbd/roundtrip/nbdkit-memory-compressed",
                    test_nbdkit_memory_compressed);
    g_test_add_func("/qemu/nbd/error/too-small", test_too_small);
    g_test_add_func("/qemu/nbd/error/killed-server", test_killed_server);
    g_test_add_func("/qemu/nbd/error/truncated-export", test_truncated);
    g_test_add_func("/qemu/nbd/error/mute-server-save", test_mute_save);
    g_test_add_func("/qemu/nbd/error/mute-server-restore-sigterm", test_mute_restore_sigterm);
    g_test_add_func("/qemu/nbd/error/no-flush", test_no_flush);
    g_test_add_func("/qemu/nbd/error/slow-header", test_slow_header);
    g_test_add_func("/qemu/nbd/error/flush-mute-after-stream", test_flush_mute_after_stream);
    g_test_add_func("/qemu/nbd/error/stream-mute-restore", test_stream_mute_restore);
    g_test_add_func("/qemu/nbd/error/legacy-syntax", test_legacy_syntax);
    g_test_add_func("/qemu/nbd/error/stream-bound-keeps-old-image", test_bound_keeps_old_image);
    ret = g_test_run();
    ioht_workdir_remove(workdir);
    g_free(data_file);
    g_free(other_file);
    g_free(workdir);
    return ret;
}
