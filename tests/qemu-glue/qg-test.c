/* qg-test.c - real QEMU guests for the qemu-glue tests */
#include "qg-test.h"
#include "qg-image.h"
#include "ioh-test.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

static const char *tool_path;

void
qgt_set_tool(const char *path)
{
    tool_path = path;
}

const char *
qgt_tool(void)
{
    g_assert_nonnull(tool_path);
    return tool_path;
}

const char *
qgt_qemu_binary(void)
{
    static char *path;

    if (!path) {
        path = g_find_program_in_path("qemu-system-x86_64");
    }
    return path;
}

gboolean
qgt_have_qemu(void)
{
    if (!qgt_qemu_binary()) {
        g_test_skip("qemu-system-x86_64 is not installed");
        return FALSE;
    }
    return TRUE;
}

void
qgt_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    if (*argc < 2) {
        g_printerr("usage: %s QEMU-IOHELPER-PATH\n", (*argv)[0]);
        exit(2);
    }
    qgt_set_tool((*argv)[1]);
}

int qgt_qemu_cpu = -1;

static void
die_with_parent(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (qgt_qemu_cpu >= 0) {
        /* taskset -c N: QEMU and every thread it starts on that CPU */
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(qgt_qemu_cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
            _exit(127);
        }
    }
}

const char *const *qgt_qemu_extra_args;

QgtQemu *
qgt_qemu_start(const char *data_file, gboolean incoming)
{
    return qgt_qemu_start_full(data_file, incoming, TRUE);
}

QgtQemu *
qgt_qemu_start_full(const char *data_file, gboolean incoming, gboolean paused)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    QgtQemu *q = g_new0(QgtQemu, 1);
    gint64 deadline;

    q->sockdir = g_dir_make_tmp("qgt-XXXXXX", &error);
    g_assert_no_error(error);
    q->sock = g_build_filename(q->sockdir, "qmp.sock", NULL);
    q->test_sock = g_build_filename(q->sockdir, "test.sock", NULL);
    g_ptr_array_add(argv, g_strdup(qgt_qemu_binary()));
    g_ptr_array_add(argv, g_strdup("-machine"));
    g_ptr_array_add(argv, g_strdup("pc,accel=tcg"));
    g_ptr_array_add(argv, g_strdup("-m"));
    g_ptr_array_add(argv, g_strdup_printf("%uM", QGT_RAM_MIB));
    g_ptr_array_add(argv, g_strdup("-nodefaults"));
    g_ptr_array_add(argv, g_strdup("-display"));
    g_ptr_array_add(argv, g_strdup("none"));
    if (paused) {
        g_ptr_array_add(argv, g_strdup("-S"));
    }
    g_ptr_array_add(argv, g_strdup("-qmp"));
    g_ptr_array_add(argv, g_strdup_printf("unix:%s,server=on,wait=off", q->sock));
    g_ptr_array_add(argv, g_strdup("-qmp"));
    g_ptr_array_add(argv, g_strdup_printf("unix:%s,server=on,wait=off", q->test_sock));
    g_ptr_array_add(argv, g_strdup("-device"));
    g_ptr_array_add(argv, g_strdup_printf("loader,file=%s,addr=0x%x,force-raw=on",
                                          data_file, QGT_DATA_ADDR));
    for (const char *const *a = qgt_qemu_extra_args; a && *a; a++) {
        g_ptr_array_add(argv, g_strdup(*a));
    }
    if (incoming) {
        g_ptr_array_add(argv, g_strdup("-incoming"));
        g_ptr_array_add(argv, g_strdup("defer"));
    }
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
                                die_with_parent, NULL, &q->pid, &error));
    g_assert_no_error(error);

    deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (!g_file_test(q->sock, G_FILE_TEST_EXISTS) ||
           !g_file_test(q->test_sock, G_FILE_TEST_EXISTS)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20000);
    }
    /* QEMU binds its sockets (the files appear) before it listens on them: a connect in
     * between is refused. Both monitors are set up, in order, before the main loop. */
    while (!(q->qmp = qg_qmp_connect(q->test_sock, 0, &error)) &&
           g_error_matches(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT) &&
           g_get_monotonic_time() < deadline) {
        g_clear_error(&error);
        g_usleep(20000);
    }
    g_assert_no_error(error);
    return q;
}

void
qgt_qemu_stop(QgtQemu *q)
{
    if (!q) {
        return;
    }
    qg_qmp_free(q->qmp);
    if (q->pid > 0) {
        kill(q->pid, SIGKILL);
        waitpid(q->pid, NULL, 0);
        g_spawn_close_pid(q->pid);
    }
    g_unlink(q->sock);
    g_unlink(q->test_sock);
    g_rmdir(q->sockdir);
    g_free(q->sock);
    g_free(q->test_sock);
    g_free(q->sockdir);
    g_free(q);
}

gboolean
qgt_qemu_exited_within(QgtQemu *q, guint secs, int *ret_status)
{
    for (guint i = 0; i < secs * 50; i++) {
        pid_t r = waitpid(q->pid, ret_status, WNOHANG);
        if (r == q->pid) {
            q->pid = 0;   /* reaped: qgt_qemu_stop() must not kill that number */
            return TRUE;
        }
        g_usleep(20000);
    }
    return FALSE;
}

char *
qgt_qemu_status(QgtQemu *q)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) r = qg_qmp_execute(q->qmp, "query-status", NULL, &error);

    g_assert_no_error(error);
    return g_strdup(json_object_get_string_member(json_node_get_object(r), "status"));
}

void
qgt_qemu_pmemsave(QgtQemu *q, const char *path, guint64 size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_int_member(args, "val", QGT_DATA_ADDR);
    json_object_set_int_member(args, "size", (gint64)size);
    json_object_set_string_member(args, "filename", path);
    g_assert_true(qg_qmp_run(q->qmp, "pmemsave", args, &error));
    g_assert_no_error(error);
}

void
qgt_assert_one_line(const char *err)
{
    g_assert_nonnull(err);
    if (!g_str_has_prefix(err, "qemu-iohelper: ") || !g_str_has_suffix(err, "\n")) {
        g_test_fail_printf("not one line of ours: '%s'", err);
        return;
    }
    for (const guchar *p = (const guchar *)err; *p; p++) {
        gboolean last = p[0] == '\n' && p[1] == '\0';
        if ((*p < 0x20 && !last) || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
            g_test_fail_printf("control character 0x%02x at %d in '%s'", *p,
                               (int)((const char *)p - err), err);
            return;
        }
    }
}

int
qgt_tool_run(const char *const *args, char **ret_stdout, char **ret_stderr)
{
    return qgt_tool_run_timeout(args, 0, ret_stdout, ret_stderr);
}

int
qgt_tool_run_timeout(const char *const *args, guint secs, char **ret_stdout,
                     char **ret_stderr)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL;
    g_autofree char *err = NULL;
    g_autofree char *line = NULL;
    int status = -1;

    if (secs) {
        g_ptr_array_add(argv, g_strdup("timeout"));
        g_ptr_array_add(argv, g_strdup("-s"));
        g_ptr_array_add(argv, g_strdup("KILL"));
        g_ptr_array_add(argv, g_strdup_printf("%u", secs));
    }
    g_ptr_array_add(argv, g_strdup(qgt_tool()));
    for (; *args; args++) {
        g_ptr_array_add(argv, g_strdup(*args));
    }
    g_ptr_array_add(argv, NULL);
    line = g_strjoinv(" ", (char **)argv->pdata);
    g_test_message("run: %s", line);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL,
                               NULL, &out, &err, &status, &error));
    g_assert_no_error(error);
    /* Whatever the case, GLib's own complaints never reach the user. */
    if (err && (strstr(err, "CRITICAL **") || strstr(err, "WARNING **"))) {
        g_test_fail_printf("GLib warned: %s", err);
    }
    if (secs && WIFEXITED(status) && WEXITSTATUS(status) == 128 + 9) {
        return 128 + 9;   /* timeout(1) killed it */
    }
    if (out && *out) {
        g_test_message("stdout: %s", out);
    }
    if (err && *err) {
        g_test_message("stderr: %s", err);
    }
    if (ret_stdout) {
        *ret_stdout = g_steal_pointer(&out);
    }
    if (ret_stderr) {
        *ret_stderr = g_steal_pointer(&err);
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ---- what the image tests share ---- */

/* Runs `sh -c @cmd`; returns its stdout (it must succeed). */
char *
qgt_sh_out(const char *cmd)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    g_autoptr(GError) error = NULL;
    char *out = NULL;
    int status;

    g_test_message("sh: %s", cmd);
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    return out;
}

QgImageInfo *
qgt_image_info(const char *img)
{
    g_autoptr(GError) error = NULL;
    QgImageInfo *info;
    int fd = open(img, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    info = qg_image_read_header(fd, img, &error);
    g_assert_no_error(error);
    close(fd);
    return info;
}

/* The image format version, from the header's fixed part. */
guint32
qgt_image_version(const char *img)
{
    guint8 buf[12];
    guint32 v;
    int fd = open(img, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pread(fd, buf, sizeof(buf), 0), ==, sizeof(buf));
    close(fd);
    memcpy(&v, buf + 8, 4);
    return GUINT32_FROM_LE(v);
}

/* After a refused restore the guest did not resume: QEMU quit (a half-loaded guest) or
 * stays paused (a loaded one that proved bad). */
void
qgt_assert_not_resumed(QgtQemu *dst)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) r = qg_qmp_execute(dst->qmp, "query-status", NULL, &error);
    int status;

    if (r) {
        const char *st = json_object_get_string_member(json_node_get_object(r), "status");

        g_test_message("destination status: %s", st);
        g_assert_cmpstr(st, !=, "running");
        return;
    }
    g_test_message("destination gone: %s", error->message);
    g_assert_cmpint(waitpid(dst->pid, &status, 0), ==, dst->pid);
    dst->pid = 0;
}

void
qgt_copy_truncated(const char *from, const char *to, guint64 len)
{
    g_autofree char *buf = NULL;
    gsize flen;

    g_assert_true(g_file_get_contents(from, &buf, &flen, NULL));
    g_assert_cmpuint(len, <=, flen);
    g_assert_true(g_file_set_contents(to, buf, (gssize)len, NULL));
}

/* The whole RAM of @q (QGT_RAM_MIB) into @path (QMP pmemsave from address 0). */
static void
pmemsave_all(QgtQemu *q, const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) args = json_object_new();

    json_object_set_int_member(args, "val", 0);
    json_object_set_int_member(args, "size", (gint64)QGT_RAM_MIB << 20);
    json_object_set_string_member(args, "filename", path);
    g_assert_true(qg_qmp_run(q->qmp, "pmemsave", args, &error));
    g_assert_no_error(error);
}

char *
qgt_save_guest(const char *data, const char *img, const char *const *extra,
               gboolean running, const char *src_dump, const char *ram_dump)
{
    g_autofree char *out = NULL;
    g_autofree char *st = NULL;
    QgtQemu *src = qgt_qemu_start(data, FALSE);
    const char *args[16] = { "save", "--qmp", src->sock, img };
    int n = 4;

    if (running) {
        g_assert_true(qg_qmp_run(src->qmp, "cont", NULL, NULL));
    }
    for (; extra && *extra && n < 15; extra++) {
        args[n++] = *extra;
    }
    args[n] = NULL;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    st = qgt_qemu_status(src);
    g_assert_cmpstr(st, ==, "postmigrate");   /* paused: its RAM is the image's */
    if (src_dump) {
        qgt_qemu_pmemsave(src, src_dump, QGT_DATA_SIZE);
    }
    if (ram_dump) {
        pmemsave_all(src, ram_dump);
    }
    qgt_qemu_stop(src);
    return g_steal_pointer(&out);
}

char *
qgt_restore_guest(const char *img, const char *other, const char *const *opts,
                  const char *want)
{
    g_autofree char *dir = g_path_get_dirname(other);   /* img may be an NBD URI */
    g_autofree char *dump = g_build_filename(dir, "restored.dump", NULL);
    g_autofree char *out = NULL;
    g_autofree char *st = NULL;
    QgtQemu *dst = qgt_qemu_start(other, TRUE);
    const char *args[16] = { "restore", "--qmp", dst->sock, img, "--stats=json" };
    int n = 5;

    for (gsize i = 0; opts && i < 2 && n < 15; i++) {
        if (opts[i]) {
            args[n++] = opts[i];   /* NULL entries skipped: at most two options */
        }
    }
    args[n] = NULL;
    g_assert_cmpint(qgt_tool_run(args, &out, NULL), ==, 0);
    st = qgt_qemu_status(dst);
    g_assert_cmpstr(st, ==, "running");   /* the sources are saved running */
    qgt_qemu_pmemsave(dst, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, want));
    qgt_qemu_stop(dst);
    g_unlink(dump);
    return g_steal_pointer(&out);
}

void
qgt_assert_usage(const char *const *args, const char *needle)
{
    g_autofree char *err = NULL;

    g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 2);
    qgt_assert_one_line(err);
    g_test_message("looking for \"%s\"", needle);
    g_assert_nonnull(strstr(err, needle));
}

void
qgt_guest_files(char **ret_workdir, char **ret_data, char **ret_other, guint32 seed)
{
    *ret_workdir = ioht_workdir();
    *ret_data = g_build_filename(*ret_workdir, "random.bin", NULL);
    *ret_other = g_build_filename(*ret_workdir, "other.bin", NULL);
    ioht_write_random_file(*ret_data, QGT_DATA_SIZE, seed);
    ioht_write_random_file(*ret_other, QGT_DATA_SIZE, seed + 1);
}

char *
qgt_restore_refused(const char *img, const char *other, const char *opt,
                    const char *needle, gboolean untouched)
{
    g_autofree char *err = NULL;
    QgtQemu *dst = qgt_qemu_start(other, TRUE);
    const char *args[] = { "restore", "--qmp", dst->sock, img, opt, NULL };

    g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    g_test_message("refused: %s", err);
    g_assert_nonnull(strstr(err, needle));
    if (untouched) {
        g_autofree char *st = qgt_qemu_status(dst);
        g_assert_cmpstr(st, ==, "inmigrate");
    } else {
        qgt_assert_not_resumed(dst);
    }
    qgt_qemu_stop(dst);
    return g_steal_pointer(&err);
}

guint64
qgt_part_blocks(const char *dir, const char *base)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    guint64 used = 0;

    for (const char *name; d && (name = g_dir_read_name(d));) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        struct stat st;

        used += g_str_has_prefix(name, base) && strstr(name, ".part-") && stat(p, &st) == 0
                ? (guint64)st.st_blocks * 512 : 0;
    }
    return used;
}
