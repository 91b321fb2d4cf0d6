/* ioh-test-spawn.c - the one way the C tests start a program (the helper, mostly): its
 * fds as the test says, stderr collected, waited for with or without a time limit. */
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void
child_setup(gpointer data)
{
    const IohtSpawn *s = data;

    if (s->fsize_limit) {
        struct rlimit rl = { s->fsize_limit, s->fsize_limit };
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    if (s->setup) {
        s->setup(s->setup_data);
    }
}

/* argv[0] is the helper (s->helper, else the one under test) unless the spec gives a
 * whole argv. */
static GPtrArray *
spawn_argv(const IohtSpawn *s)
{
    GPtrArray *argv = g_ptr_array_new();

    if (!s->argv) {
        g_ptr_array_add(argv, (gpointer)(s->helper ? s->helper : ioht_helper_path()));
    }
    for (const char *const *a = s->argv ? s->argv : s->args; a && *a; a++) {
        g_ptr_array_add(argv, (gpointer)*a);
    }
    g_ptr_array_add(argv, NULL);
    return argv;
}

gboolean
ioht_try_spawn(const IohtSpawn *s, IohtChild *ret_child, GError **error)
{
    g_autoptr(GPtrArray) argv = spawn_argv(s);
    IohtChild c = { 0, -1, NULL, NULL };
    GSpawnFlags flags = G_SPAWN_DO_NOT_REAP_CHILD;
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int in_fd = s->in_fd < 0 ? null_fd : s->in_fd;
    int out_fd = s->out_fd < 0 ? null_fd : s->out_fd;
    gboolean ok;

    g_assert_cmpint(null_fd, >=, 0);
    if (s->leave_fds_open) {
        flags |= G_SPAWN_LEAVE_DESCRIPTORS_OPEN;
    }
    ok = g_spawn_async_with_pipes_and_fds(
        NULL, (const char *const *)argv->pdata, s->env, flags, child_setup, (gpointer)s,
        in_fd, out_fd, s->err_fd > 0 ? s->err_fd : -1, s->extra_fds,
        s->extra_targets ? s->extra_targets : s->extra_fds, (gsize)s->n_extra, &c.pid,
        NULL, NULL, s->err_fd > 0 ? NULL : &c.err_fd, error);
    close(null_fd);
    *ret_child = c;
    return ok;
}

IohtChild
ioht_spawn(const IohtSpawn *s)
{
    g_autoptr(GError) error = NULL;
    IohtChild c;
    gboolean ok = ioht_try_spawn(s, &c, &error);

    g_assert_no_error(error);    /* says why, e.g. a program its user cannot reach */
    g_assert_true(ok);
    return c;
}

static char *
read_all(int fd)
{
    GString *text = g_string_new(NULL);
    char buf[4096];
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf))) != 0) {
        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        g_string_append_len(text, buf, n);
    }
    return g_string_free(text, FALSE);
}

void
ioht_child_wait(IohtChild *c, IohtResult *r)
{
    memset(r, 0, sizeof(*r));
    if (c->err_fd >= 0) {
        r->err = read_all(c->err_fd);
        close(c->err_fd);
        c->err_fd = -1;
    }
    if (c->before_reap) {
        c->before_reap(c->before_reap_data);
    }
    while (wait4(c->pid, &r->status, 0, &r->ru) < 0) {
        g_assert_cmpint(errno, ==, EINTR);
    }
    g_spawn_close_pid(c->pid);
    c->pid = 0;
    r->code = ioht_exit_code(r->status);
    if (!r->err) {
        r->err = g_strdup("");
    }
}

void
ioht_result_clear(IohtResult *r)
{
    g_clear_pointer(&r->err, g_free);
}

gboolean
ioht_wait_timeout(GPid pid, guint timeout_ms, int *ret_status)
{
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    int st = 0;
    pid_t got;

    while ((got = waitpid(pid, &st, WNOHANG)) == 0) {
        if (g_get_monotonic_time() > end) {
            kill(pid, SIGKILL);
            g_assert_cmpint(waitpid(pid, &st, 0), ==, pid);
            *ret_status = st;
            return FALSE;
        }
        g_usleep(20000);
    }
    g_assert_cmpint(got, ==, pid);
    *ret_status = st;
    return TRUE;
}

int
ioht_wait_exit_code(GPid pid)
{
    int st;

    if (!ioht_wait_timeout(pid, IOHT_WAIT_MS, &st)) {
        g_error("pid %d still running after %u ms: killed", (int)pid, IOHT_WAIT_MS);
    }
    return ioht_exit_code(st);
}

gboolean
ioht_try_spawn_wait(const IohtSpawn *s, int *ret_status, char **ret_stderr, GError **error)
{
    IohtChild c;
    IohtResult r;

    if (!ioht_try_spawn(s, &c, error)) {
        return FALSE;
    }
    ioht_child_wait(&c, &r);
    *ret_status = r.status;
    *ret_stderr = g_steal_pointer(&r.err);
    ioht_result_clear(&r);
    return TRUE;
}

int
ioht_spawn_wait(const IohtSpawn *s, char **ret_stderr)
{
    IohtChild c = ioht_spawn(s);
    IohtResult r;

    ioht_child_wait(&c, &r);
    if (*r.err) {
        g_test_message("%s: stderr: %s", s->argv ? s->argv[0] : "iohelper", r.err);
    }
    if (ret_stderr) {
        *ret_stderr = g_steal_pointer(&r.err);
    }
    ioht_result_clear(&r);
    return r.status;
}

int
ioht_run(char **argv, int stdin_fd, int stdout_fd, char **ret_stderr)
{
    IohtSpawn s = { .argv = (const char *const *)argv, .in_fd = stdin_fd,
                    .out_fd = stdout_fd, .err_fd = -1, .leave_fds_open = TRUE };

    return ioht_spawn_wait(&s, ret_stderr);
}

int
ioht_run_output(char **argv, char **ret_stdout)
{
    g_autoptr(GByteArray) out = g_byte_array_new();
    IohtPumpOpts o = { .keep = out };
    IohtPump *drain;
    int p[2], status;

    g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
    drain = ioht_drain_start(p[0], &o);
    status = ioht_run(argv, -1, p[1], NULL);
    close(p[1]);
    ioht_pump_join(drain, NULL);
    g_byte_array_append(out, (const guint8 *)"", 1);
    *ret_stdout = g_strdup((const char *)out->data);
    return ioht_exit_code(status);
}

int
ioht_exit_code(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}
