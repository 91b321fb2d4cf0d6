/* test-channels-errors.c - failed multi-channel saves with real QEMUs (issue 31):
 * - two saves into one socket: a second QEMU (another -uuid) told by the test to migrate
 *   to the tool's socket while the tool saves the first;
 * - channels missing: the source QEMU's fd limit lowered (prlimit) so that it cannot open
 *   its multifd connections: the tool gives up after --stall-timeout;
 * - a channel closed early: the source QEMU killed mid-save;
 * - the socket out of other users' reach: nobody cannot connect to it.
 * Each failed save: exit 1, one line, the old image at PATH as it was, no temporary file
 * left, and (QEMU alive) QEMU's multifd capability turned off again. */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ioh-test.h"
#include "qg-test.h"

#define OLD_IMAGE "the previous image: must stay\n"

static char *workdir, *data_file, *tmpdir;

typedef struct {
    const char *const *args;
    int code;
    char *err;
} ToolRun;

static gpointer
tool_thread(gpointer data)
{
    ToolRun *t = data;

    t->code = qgt_tool_run_timeout(t->args, 300, NULL, &t->err);
    return NULL;
}

/* The socket a running save listens on: $TMPDIR/qemu-iohelper-XXXXXX/mig.sock (TMPDIR is
 * this test's). NULL when the tool has not made it within 60 s (or never). */
static char *
wait_socket(ToolRun *t)
{
    for (guint i = 0; i < 6000 && !t->err; i++) {
        g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name(d))) {
            g_autofree char *p = g_build_filename(tmpdir, name, "mig.sock", NULL);

            if (g_str_has_prefix(name, "qemu-iohelper-") &&
                g_file_test(p, G_FILE_TEST_EXISTS)) {
                return g_steal_pointer(&p);
            }
        }
        g_usleep(10000);
    }
    return NULL;
}

/* The same, asserting that the socket came; freed by the caller. */
static char *
wait_socket_or_fail(ToolRun *t)
{
    char *p = wait_socket(t);

    g_assert_nonnull(p);
    return p;
}

/* A QMP command on the test's monitor of @q; asserts success. */
static void
qmp_run(QgtQemu *q, const char *cmd, const char *json_args)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node = json_args ? json_from_string(json_args, &error) : NULL;

    g_assert_no_error(error);
    g_assert_true(qg_qmp_run(q->qmp, cmd, node ? json_node_get_object(node) : NULL, &error));
    g_assert_no_error(error);
}

/* QEMU's multifd capability, asked through the test's monitor. */
static gboolean
multifd_on(QgtQemu *q)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) r = qg_qmp_execute(q->qmp, "query-migrate-capabilities", NULL,
                                           &error);
    JsonArray *a;

    g_assert_no_error(error);
    a = json_node_get_array(r);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);

        if (g_str_equal(json_object_get_string_member(o, "capability"), "multifd")) {
            return json_object_get_boolean_member(o, "state");
        }
    }
    return FALSE;
}

/* Starts the save of @src into @img (holding OLD_IMAGE) with @extra (or NULL). */
static GThread *
save_start(ToolRun *t, const char **args, QgtQemu *src, const char *img, const char *extra)
{
    args[0] = "save";
    args[1] = "--qmp";
    args[2] = src->sock;
    args[3] = img;
    args[4] = "--channels=2";
    args[5] = extra;
    args[6] = NULL;
    t->args = args;
    g_assert_true(g_file_set_contents(img, OLD_IMAGE, -1, NULL));
    return g_thread_new("tool", tool_thread, t);
}

/* The save failed as it must: exit 1, one line with @needle, the old image intact, no
 * temporary file; QEMU @src (NULL: gone) has multifd off again. */
static void
save_failed(ToolRun *t, const char *img, QgtQemu *src, const char *needle)
{
    g_autofree char *text = NULL;
    g_autofree char *base = g_path_get_basename(img);
    g_autofree char *prefix = g_strconcat(base, ".part-", NULL);

    g_assert_cmpint(t->code, ==, 1);
    qgt_assert_one_line(t->err);
    if (!strstr(t->err, needle)) {
        g_test_fail_printf("'%s' does not say '%s'", t->err, needle);
    }
    g_assert_true(g_file_get_contents(img, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, OLD_IMAGE);
    g_assert_cmpuint(ioht_count_prefix(workdir, prefix), ==, 0);
    if (src) {
        g_assert_false(multifd_on(src));
    }
    g_free(t->err);
    g_unlink(img);
}

/* A second QEMU (another UUID) migrates with multifd into the socket of a running save
 * of the first: the connections of two saves meet. The tool refuses (two main channels,
 * a channel id twice, another save's UUID, or an extra connection: whichever it sees
 * first). */
static void
test_two_saves(void)
{
    static const char *const uuid_a[] = { "-uuid", "11111111-2222-3333-4444-555555555555", NULL };
    static const char *const uuid_b[] = { "-uuid", "66666666-7777-8888-9999-aaaaaaaaaaaa", NULL };
    g_autofree char *img = g_build_filename(workdir, "two.img", NULL);
    g_autofree char *sock = NULL;
    g_autofree char *uri = NULL;
    const char *args[8];
    ToolRun t = { 0 };
    QgtQemu *a, *b;
    GThread *th;

    qgt_qemu_extra_args = uuid_a;
    a = qgt_qemu_start(data_file, FALSE);
    qgt_qemu_extra_args = uuid_b;
    b = qgt_qemu_start(data_file, FALSE);
    qgt_qemu_extra_args = NULL;
    qmp_run(b, "migrate-set-capabilities",
            "{\"capabilities\":[{\"capability\":\"multifd\",\"state\":true}]}");
    qmp_run(b, "migrate-set-parameters", "{\"multifd-channels\":2}");
    th = save_start(&t, args, a, img, "--stall-timeout=20");
    sock = wait_socket(&t);
    g_assert_nonnull(sock);
    uri = g_strdup_printf("{\"uri\":\"unix:%s\"}", sock);
    qmp_run(b, "migrate", uri);
    g_thread_join(th);
    save_failed(&t, img, a, "two.img: ");
    qgt_qemu_stop(a);
    qgt_qemu_stop(b);
}

/* Open fds of process @pid. */
static guint
open_fds(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd", (int)pid);
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    guint n = 0;

    g_assert_nonnull(d);
    while (g_dir_read_name(d)) {
        n++;
    }
    return n;
}

/* The source QEMU may open two more fds than it holds: the tool's QMP connection and
 * its main channel at most, no multifd channel. The tool refuses: QEMU closes what it opened, or never opens the
 * channels (then the tool waits --stall-timeout for them). */
static void
test_channels_missing(void)
{
    g_autofree char *img = g_build_filename(workdir, "missing.img", NULL);
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    struct rlimit rl;
    const char *args[8];
    ToolRun t = { 0 };
    GThread *th;

    /* two more: the tool's QMP connection, the main channel */
    g_assert_cmpint(prlimit(src->pid, RLIMIT_NOFILE, NULL, &rl), ==, 0);
    rl.rlim_cur = open_fds(src->pid) + 2;
    g_assert_cmpint(prlimit(src->pid, RLIMIT_NOFILE, &rl, NULL), ==, 0);
    th = save_start(&t, args, src, img, "--stall-timeout=3");
    g_thread_join(th);
    /* QEMU 7.2 aborts on it (an assertion in its yank code after "Failed to create
     * socket: Too many open files"): the connections it opened close early */
    save_failed(&t, img, kill(src->pid, 0) == 0 && waitpid(src->pid, NULL, WNOHANG) == 0 ?
                src : NULL, "missing.img: ");
    qgt_qemu_stop(src);
}

/* Kills the source QEMU mid-save: its connections close before their end. */
static void
test_closed_early(void)
{
    g_autofree char *img = g_build_filename(workdir, "early.img", NULL);
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    const char *args[8];
    ToolRun t = { 0 };
    GThread *th;

    th = save_start(&t, args, src, img, NULL);
    g_free(wait_socket_or_fail(&t));
    /* mid-stream: once a temporary file holds a few MiB of the streams */
    for (guint i = 0; i < 6000 && qgt_part_blocks(workdir, "early.img") < (4u << 20); i++) {
        g_usleep(2000);
    }
    kill(src->pid, SIGKILL);
    g_thread_join(th);
    save_failed(&t, img, NULL, "early.img: ");
    qgt_qemu_stop(src);
}

/* The socket's folder is ours alone (0700): another user (nobody) cannot connect to the
 * socket, so no other user can inject a channel; the tool's own user can (it can also
 * ptrace the tool: it is trusted). */
static void
test_socket_private(void)
{
    g_autofree char *img = g_build_filename(workdir, "private.img", NULL);
    QgtQemu *src = qgt_qemu_start(data_file, FALSE);
    g_autofree char *sock = NULL;
    g_autofree char *dir = NULL;
    const char *args[8];
    ToolRun t = { 0 };
    struct stat st;
    GThread *th;
    pid_t pid;
    int status = 0;

    if (geteuid() != 0) {
        qgt_qemu_stop(src);
        g_test_skip("not root: cannot run a process as nobody");
        return;
    }
    /* QEMU stopped: the tool waits for its connections until --stall-timeout */
    th = save_start(&t, args, src, img, "--stall-timeout=5");
    sock = wait_socket(&t);
    g_assert_nonnull(sock);
    kill(src->pid, SIGSTOP);
    dir = g_path_get_dirname(sock);
    g_assert_cmpint(stat(dir, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0700);
    pid = fork();
    if (pid == 0) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        ioht_drop_to_nobody(NULL);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_strlcpy(sa.sun_path, sock, sizeof(sa.sun_path));
        _exit(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == EACCES ? 0 : 1);
    }
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    kill(src->pid, SIGCONT);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_thread_join(th);
    g_free(t.err);
    g_unlink(img);
    qgt_qemu_stop(src);
}

int
main(int argc, char **argv)
{
    int ret;

    qgt_test_init(&argc, &argv);
    if (!qgt_qemu_binary()) {
        g_test_skip("no qemu-system-x86_64: no guest to save");
    }
    workdir = ioht_workdir();
    tmpdir = g_dir_make_tmp("qgce-XXXXXX", NULL);   /* short: socket paths are limited */
    g_setenv("TMPDIR", tmpdir, TRUE);
    data_file = g_build_filename(workdir, "guest.bin", NULL);
    ioht_write_random_file(data_file, QGT_DATA_SIZE, 3);
    if (qgt_qemu_binary()) {
        g_test_add_func("/qemu/channels/save/two-saves", test_two_saves);
        g_test_add_func("/qemu/channels/save/channels-missing", test_channels_missing);
        g_test_add_func("/qemu/channels/save/closed-early", test_closed_early);
        g_test_add_func("/qemu/channels/save/socket-private", test_socket_private);
    }
    ret = g_test_run();
    ioht_workdir_remove(workdir);
    g_rmdir(tmpdir);
    return ret;
}
