/* qg-fake.c - a hostile QMP peer for the tool's protocol tests */
#include "qg-fake.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>

#define QGT_FAKE_GREETING \
    "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, " \
    "\"package\": \"Debian 1:7.2+dfsg-7+deb12u16\"}, \"capabilities\": [\"oob\"]}}"

typedef struct {
    char *reply;   /* NULL: silence */
    char *then;
} QgtFakeAnswer;

struct _QgtFake {
    char *dir;
    char *path;
    int listen_fd;
    int stop[2];           /* a pipe: written to stop the thread */
    GThread *thread;
    GMutex lock;           /* guards what follows */
    char *greeting;
    GHashTable *answers;   /* command -> QgtFakeAnswer */
    GString *commands;
    GArray *kept_fds;      /* passed to us with getfd: kept open, never read */
};

static void
answer_free(gpointer p)
{
    QgtFakeAnswer *a = p;

    g_free(a->reply);
    g_free(a->then);
    g_free(a);
}

void
qgt_fake_reply(QgtFake *f, const char *command, const char *reply, const char *then)
{
    QgtFakeAnswer *a = g_new0(QgtFakeAnswer, 1);

    a->reply = g_strdup(reply);
    a->then = g_strdup(then);
    g_mutex_lock(&f->lock);
    g_hash_table_replace(f->answers, g_strdup(command), a);
    g_mutex_unlock(&f->lock);
}

static void
send_all(int fd, const char *text)
{
    gsize len = strlen(text);

    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;   /* the tool went away */
        }
        text += n;
        len -= (gsize)n;
    }
}

/* The line answering @command whose request had @id (JSON text). NULL: no answer. */
static char *
answer_line(QgtFake *f, const char *command, const char *id, char **ret_then)
{
    QgtFakeAnswer *a;
    char *line = NULL;

    g_mutex_lock(&f->lock);
    a = g_hash_table_lookup(f->answers, command);
    *ret_then = a ? g_strdup(a->then) : NULL;
    if (!a) {
        line = g_strdup_printf("{\"error\": {\"class\": \"CommandNotFound\", \"desc\": "
                               "\"The command %s has not been found\"}, \"id\": %s}\r\n",
                               command, id);
    } else if (a->reply && a->reply[0] == '!') {
        g_auto(GStrv) parts = g_strsplit(a->reply + 1, "@ID@", -1);
        g_autofree char *joined = g_strjoinv(id, parts);
        line = g_strconcat(joined, "\r\n", NULL);
    } else if (a->reply) {
        line = g_strdup_printf("{\"return\": %s, \"id\": %s}\r\n", a->reply, id);
    }
    g_mutex_unlock(&f->lock);
    return line;
}

/* Handles one request line; FALSE when the connection is to end (after quit). */
static gboolean
handle_line(QgtFake *f, int conn, const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *id = NULL;
    g_autofree char *line = NULL;
    g_autofree char *then = NULL;
    JsonObject *req;
    JsonNode *idn;
    const char *command;

    if (!json_parser_load_from_data(parser, text, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        return TRUE;
    }
    req = json_node_get_object(json_parser_get_root(parser));
    command = json_object_get_string_member_with_default(req, "execute", "?");
    idn = json_object_get_member(req, "id");
    if (idn) {
        json_generator_set_root(gen, idn);
        id = json_generator_to_data(gen, NULL);
    } else {
        id = g_strdup("null");
    }
    g_mutex_lock(&f->lock);
    g_string_append_printf(f->commands, "%s%s", f->commands->len ? " " : "", command);
    g_mutex_unlock(&f->lock);
    line = answer_line(f, command, id, &then);
    if (line) {
        send_all(conn, line);
    }
    if (then) {
        send_all(conn, then);
    }
    return !g_str_equal(command, "quit");
}

/* Receives what the tool sent, keeping any fd that came with it. */
static gssize
receive(QgtFake *f, int conn, char *buf, gsize len)
{
    union {
        char raw[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct iovec iov = { buf, len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.raw, .msg_controllen = sizeof(control) };
    ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);

    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            gsize nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int fds[4];
            memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
            g_mutex_lock(&f->lock);
            g_array_append_vals(f->kept_fds, fds, (guint)nfds);
            g_mutex_unlock(&f->lock);
        }
    }
    return n;
}

static void
serve(QgtFake *f, int conn)
{
    g_autoptr(GString) in = g_string_new(NULL);
    g_autofree char *greeting = NULL;

    g_mutex_lock(&f->lock);
    greeting = g_strconcat(f->greeting, "\r\n", NULL);
    g_mutex_unlock(&f->lock);
    send_all(conn, greeting);
    for (;;) {
        struct pollfd p[2] = { { conn, POLLIN, 0 }, { f->stop[0], POLLIN, 0 } };
        char buf[4096];
        char *nl;
        gssize n;

        if (poll(p, 2, -1) < 0 && errno == EINTR) {
            continue;
        }
        if (p[1].revents) {
            return;
        }
        n = receive(f, conn, buf, sizeof(buf));
        if (n <= 0) {
            return;
        }
        g_string_append_len(in, buf, n);
        while ((nl = memchr(in->str, '\n', in->len))) {
            g_autofree char *line = g_strndup(in->str, nl - in->str);
            g_string_erase(in, 0, nl - in->str + 1);
            if (!handle_line(f, conn, line)) {
                return;
            }
        }
    }
}

static gpointer
fake_thread(gpointer data)
{
    QgtFake *f = data;

    for (;;) {
        struct pollfd p[2] = { { f->listen_fd, POLLIN, 0 }, { f->stop[0], POLLIN, 0 } };
        int conn;

        if (poll(p, 2, -1) < 0 && errno == EINTR) {
            continue;
        }
        if (p[1].revents) {
            return NULL;
        }
        conn = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn >= 0) {
            serve(f, conn);
            close(conn);
        }
    }
}

static void
set_defaults(QgtFake *f)
{
    static const char *const empty[] = {
        "qmp_capabilities", "migrate-set-capabilities", "migrate-set-parameters", "stop",
        "cont", "getfd", "closefd", "migrate", "migrate-incoming", "migrate_cancel", "quit",
    };

    for (gsize i = 0; i < G_N_ELEMENTS(empty); i++) {
        qgt_fake_reply(f, empty[i], "{}", NULL);
    }
    qgt_fake_reply(f, "query-status",
                   "{\"status\": \"running\", \"singlestep\": false, \"running\": true}", NULL);
    qgt_fake_reply(f, "qom-get", "\"pc-i440fx-7.2-machine\"", NULL);
    qgt_fake_reply(f, "query-memory-size-summary", "{\"base-memory\": 268435456}", NULL);
    qgt_fake_reply(f, "query-migrate-parameters", "{\"max-bandwidth\": 134217728}", NULL);
    qgt_fake_reply(f, "query-migrate", "{}", NULL);
}

QgtFake *
qgt_fake_start(void)
{
    QgtFake *f = g_new0(QgtFake, 1);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };

    g_mutex_init(&f->lock);
    f->dir = g_dir_make_tmp("qgt-fake-XXXXXX", NULL);
    g_assert_nonnull(f->dir);
    f->path = g_build_filename(f->dir, "qmp.sock", NULL);
    f->greeting = g_strdup(QGT_FAKE_GREETING);
    f->answers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, answer_free);
    f->commands = g_string_new(NULL);
    f->kept_fds = g_array_new(FALSE, FALSE, sizeof(int));
    set_defaults(f);
    g_assert_true(g_unix_open_pipe(f->stop, FD_CLOEXEC, NULL));
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(f->listen_fd, >=, 0);
    g_strlcpy(addr.sun_path, f->path, sizeof(addr.sun_path));
    g_assert_cmpint(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    g_assert_cmpint(listen(f->listen_fd, 4), ==, 0);
    f->thread = g_thread_new("qgt-fake", fake_thread, f);
    return f;
}

const char *
qgt_fake_socket(QgtFake *f)
{
    return f->path;
}

void
qgt_fake_set_greeting(QgtFake *f, const char *line)
{
    g_mutex_lock(&f->lock);
    g_free(f->greeting);
    f->greeting = g_strdup(line);
    g_mutex_unlock(&f->lock);
}

gboolean
qgt_fake_got(QgtFake *f, const char *command)
{
    g_autofree char *all = qgt_fake_commands(f);
    g_auto(GStrv) names = g_strsplit(all, " ", -1);

    return g_strv_contains((const char *const *)names, command);
}

char *
qgt_fake_commands(QgtFake *f)
{
    char *copy;

    g_mutex_lock(&f->lock);
    copy = g_strdup(f->commands->str);
    g_mutex_unlock(&f->lock);
    return copy;
}

void
qgt_fake_free(QgtFake *f)
{
    if (!f) {
        return;
    }
    g_assert_cmpint(write(f->stop[1], "x", 1), ==, 1);
    g_thread_join(f->thread);
    for (guint i = 0; i < f->kept_fds->len; i++) {
        close(g_array_index(f->kept_fds, int, i));
    }
    g_array_free(f->kept_fds, TRUE);
    close(f->listen_fd);
    close(f->stop[0]);
    close(f->stop[1]);
    g_unlink(f->path);
    g_rmdir(f->dir);
    g_hash_table_destroy(f->answers);
    g_string_free(f->commands, TRUE);
    g_mutex_clear(&f->lock);
    g_free(f->greeting);
    g_free(f->path);
    g_free(f->dir);
    g_free(f);
}
