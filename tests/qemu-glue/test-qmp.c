/* test-qmp.c - the QMP client against non-QEMU peers and a real QEMU */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <glib-unix.h>

#include "ioh-test.h"
#include "qg-qmp.h"
#include "qg-test.h"

static void
test_missing_socket(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(QgQmp) qmp = qg_qmp_connect("/nonexistent/qmp.sock", 0, &error);

    g_assert_null(qmp);
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT);
    g_test_message("error: %s", error->message);
    g_assert_nonnull(strstr(error->message, "/nonexistent/qmp.sock"));
}

static void
test_not_a_socket(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("qgt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "file", NULL);
    g_autoptr(QgQmp) qmp = NULL;

    g_assert_true(g_file_set_contents(path, "x", 1, NULL));
    qmp = qg_qmp_connect(path, 0, &error);
    g_assert_null(qmp);
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT);
    g_test_message("error: %s", error->message);
    g_unlink(path);
    g_rmdir(dir);
    g_clear_error(&error);

    qmp = qg_qmp_connect("/tmp/this-path-is-far-too-long-for-a-unix-socket-"
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                         0, &error);
    g_assert_null(qmp);
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CONNECT);
    g_assert_nonnull(strstr(error->message, "107"));
}

typedef struct {
    GSocket *listener;
    const char *say;
} FakePeer;

static gpointer
fake_peer_thread(gpointer p)
{
    FakePeer *f = p;
    g_autoptr(GSocket) conn = g_socket_accept(f->listener, NULL, NULL);

    if (conn && f->say) {
        g_socket_send(conn, f->say, strlen(f->say), NULL, NULL);
    }
    g_usleep(200000);
    return NULL;
}

/* A unix socket server that says @say and hangs up. */
static void
expect_not_qmp(const char *say, const char *needle)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("qgt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "fake.sock", NULL);
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    g_autoptr(QgQmp) qmp = NULL;
    FakePeer f = { NULL, say };
    GThread *t;

    f.listener = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                              G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_no_error(error);
    g_assert_true(g_socket_bind(f.listener, addr, TRUE, &error));
    g_assert_true(g_socket_listen(f.listener, &error));
    t = g_thread_new("fake", fake_peer_thread, &f);
    qmp = qg_qmp_connect(path, 0, &error);
    g_assert_null(qmp);
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_NOT_QMP);
    g_test_message("error: %s", error->message);
    g_assert_nonnull(strstr(error->message, needle));
    g_thread_join(t);
    g_object_unref(f.listener);
    g_unlink(path);
    g_rmdir(dir);
}

static void
test_not_qemu(void)
{
    expect_not_qmp("SSH-2.0-OpenSSH_9.2\r\n", "not a QMP socket");
    expect_not_qmp("{\"hello\": 1}\r\n", "no QMP greeting");
    expect_not_qmp(NULL, "not a QMP socket");
}

static void
test_real_qemu(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *data = NULL;
    g_autoptr(JsonNode) r = NULL;
    g_autoptr(JsonObject) args = NULL;
    g_autofree char *status = NULL;
    gboolean resumed = FALSE;
    QgtQemu *q;
    int p[2];

    if (!qgt_have_qemu()) {
        return;
    }
    dir = ioht_workdir();
    data = g_build_filename(dir, "random.bin", NULL);
    ioht_write_random_file(data, 1 << 20, 7);
    q = qgt_qemu_start(data, FALSE);
    g_assert_cmpstr(qg_qmp_get_version(q->qmp), !=, "unknown");

    status = qgt_qemu_status(q);
    g_assert_cmpstr(status, ==, "prelaunch");

    /* QEMU's own words come back in the error. */
    r = qg_qmp_execute(q->qmp, "no-such-command", NULL, &error);
    g_assert_null(r);
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND);
    g_test_message("error: %s", error->message);
    g_assert_nonnull(strstr(error->message, "CommandNotFound"));
    g_clear_error(&error);

    /* An fd travels with getfd, and closefd finds it by name. */
    g_assert_true(g_unix_open_pipe(p, FD_CLOEXEC, NULL));
    args = json_object_new();
    json_object_set_string_member(args, "fdname", "t");
    r = qg_qmp_execute_with_fd(q->qmp, "getfd", args, p[1], &error);
    g_assert_no_error(error);
    g_clear_pointer(&r, json_node_unref);
    g_assert_true(qg_qmp_run(q->qmp, "closefd", args, &error));
    g_assert_no_error(error);
    g_assert_false(qg_qmp_run(q->qmp, "closefd", args, &error));
    g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_COMMAND);
    g_clear_error(&error);
    close(p[0]);
    close(p[1]);

    /* Events arrive and are queued. */
    g_assert_true(qg_qmp_run(q->qmp, "cont", NULL, &error));
    for (int i = 0; i < 10 && !resumed; i++) {
        g_autoptr(JsonObject) ev = qg_qmp_next_event(q->qmp, 1000, &error);
        g_assert_no_error(error);
        resumed = ev && g_str_equal(json_object_get_string_member(ev, "event"), "RESUME");
    }
    g_assert_true(resumed);

    /* QEMU going away is CLOSED, not a hang. */
    g_assert_true(qg_qmp_run(q->qmp, "quit", NULL, &error));
    {
        g_autoptr(JsonObject) ev = NULL;
        do {
            g_clear_pointer(&ev, json_object_unref);
            ev = qg_qmp_next_event(q->qmp, 5000, &error);
        } while (ev);
        g_assert_error(error, QG_QMP_ERROR, QG_QMP_ERROR_CLOSED);
    }
    qgt_qemu_stop(q);
    ioht_workdir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qemu/qmp/missing-socket", test_missing_socket);
    g_test_add_func("/qemu/qmp/not-a-socket", test_not_a_socket);
    g_test_add_func("/qemu/qmp/not-qemu", test_not_qemu);
    g_test_add_func("/qemu/qmp/real-qemu", test_real_qemu);
    return g_test_run();
}
