/* test-qemu.c - faults in a real save and restore through qemu-glue's qemu-iohelper tool:
 * storage faults injected into the helper (libwrap spawns it through iohelper-faulty),
 * the helper killed mid-save, and the tool's own header write failing. A failed save
 * must exit 1 with one line, leave the previous image at PATH as it was, and leave no
 * file a restore would accept; a failed restore must exit 1 and not resume the guest. */
#include "faults-util.h"
#include "ioh-test.h"
#include "qg-image.h"
#include "qg-qmp.h"
#include "qg-test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <glib/gstdio.h>

static char *data_file;
static char *real_helper;
static QgtQemu *source;

/* The helper (or also the tool, @in_tool) runs under the shim with @fault on @path. */
static void
faults_on(const char *fault, const char *path, gboolean in_tool)
{
    ft_use_faulty_helper(fault, path, real_helper);
    if (in_tool) {
        g_setenv("LD_PRELOAD", FAULT_SHIM_PATH, TRUE);
    }
}

static void
faults_off(void)
{
    g_unsetenv("LD_PRELOAD");
    g_unsetenv("IOH_FAULT");
    g_unsetenv("IOH_FAULT_PATH");
    g_setenv("IOHELPER_PATH", real_helper, TRUE);
}

static gboolean
need_qemu(void)
{
    if (!qgt_have_qemu()) {
        return FALSE;
    }
    if (source) {
        /* A save that failed after QEMU completed leaves it "postmigrate": QEMU 7.2 will
         * not save it again, so start another. */
        g_autofree char *status = qgt_qemu_status(source);
        if (g_strcmp0(status, "paused") != 0 && g_strcmp0(status, "prelaunch") != 0) {
            g_test_message("source QEMU is '%s': starting a new one", status);
            qgt_qemu_stop(source);
            source = NULL;
        }
    }
    if (!source) {
        source = qgt_qemu_start(data_file, FALSE);
    }
    return TRUE;
}

/* Files named IMG.part-* left in the work dir. */
static guint
leftovers(const char *img)
{
    g_autofree char *base = g_path_get_basename(img);
    g_autofree char *prefix = g_strdup_printf("%s.part-", base);

    return ioht_count_prefix(ft_workdir(), prefix);
}

/* Kills the iohelper serving @img as soon as it shows up (or, with @argv0, the process
 * whose argv[0] ends so, with @sig instead of SIGKILL). */
typedef struct {
    char *img;
    GPid killed;
    const char *argv0;  /* NULL: "/iohelper" */
    int sig;            /* 0: SIGKILL */
} Killer;

static gpointer
killer_thread(gpointer data)
{
    Killer *k = data;

    for (int tries = 0; tries < 2000 && !k->killed; tries++) {
        g_autoptr(GDir) d = g_dir_open("/proc", 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
            g_autofree char *path = NULL;
            g_autofree char *cmd = NULL;
            gsize len;
            int pid = atoi(name);
            if (pid <= 0) {
                continue;
            }
            path = g_strdup_printf("/proc/%d/cmdline", pid);
            if (!g_file_get_contents(path, &cmd, &len, NULL) || len == 0) {
                continue;
            }
            /* argv[0] is iohelper (exec'd by iohelper-faulty), and PATH is ours. */
            if (g_str_has_suffix(cmd, k->argv0 ? k->argv0 : "/iohelper") &&
                memmem(cmd, len, k->img, strlen(k->img))) {
                g_usleep(300000);   /* mid-stream */
                kill(pid, k->sig ? k->sig : SIGKILL);
                k->killed = pid;
                break;
            }
        }
        g_usleep(5000);
    }
    return NULL;
}

typedef struct {
    const char *fault;
    gboolean in_tool;   /* the tool too runs under the shim (its header write) */
    gboolean kill;      /* kill the helper mid-save */
    const char *cache;  /* --bypass-cache= */
    const char *needle;
    const char *extra;  /* one more option, or NULL */
} SaveFault;

static void
test_save_fault(gconstpointer data)
{
    const SaveFault *t = data;
    g_autofree char *img = g_build_filename(ft_workdir(), "vm.img", NULL);
    g_autofree char *old = g_build_filename(ft_workdir(), "old.img", NULL);
    g_autofree char *cache = g_strdup_printf("--bypass-cache=%s", t->cache);
    g_autofree char *err = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    Killer k = { .img = img };
    GThread *killer = NULL;
    const char *args[] = { "save", "--qmp", NULL, img, cache, t->extra, NULL };
    int code, fd;
    guint n;

    if (!need_qemu()) {
        return;
    }
    args[2] = source->sock;
    /* The previous image of this VM: it must survive the failed save untouched. */
    ioht_write_random_file(old, 3 << 20, 42);
    {
        g_autofree char *cmd = g_strdup_printf("cp %s %s", old, img);
        g_assert_cmpint(system(cmd), ==, 0);
    }
    faults_on(t->fault, img, t->in_tool);
    if (t->kill) {
        killer = g_thread_new("killer", killer_thread, &k);
    }
    code = qgt_tool_run(args, NULL, &err);
    faults_off();
    if (killer) {
        g_thread_join(killer);
        g_assert_cmpint(k.killed, >, 0);
        ft_count_faults(1);
    }
    n = ft_faults_logged();
    g_assert_cmpuint(n + (t->kill ? 1 : 0), >, 0);
    ft_count_faults(n);
    g_assert_cmpint(code, ==, 1);
    g_assert_true(g_str_has_prefix(err, "qemu-iohelper: "));
    g_assert_true(strchr(err, '\n') == NULL || strchr(err, '\n')[1] == '\0');
    if (!strstr(err, t->needle)) {
        g_test_fail_printf("'%s' does not say '%s'", err, t->needle);
    }
    /* Nothing a restore would accept: the old image as it was, no temporary left. */
    g_assert_true(ft_prefix_equal(old, img, 3 << 20));
    g_assert_cmpuint(ft_file_size(img), ==, 3 << 20);
    g_assert_cmpuint(leftovers(img), ==, 0);
    fd = open(img, O_RDONLY | O_CLOEXEC);
    info = qg_image_read_header(fd, img, &error);
    g_assert_null(info);
    g_assert_nonnull(error);
    close(fd);
    g_unlink(img);
    g_unlink(old);
}

/* TRUE unless @pid is gone or a zombie. */
static gboolean
process_alive(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *text = NULL;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strrchr(text, ')'))) {
        return FALSE;
    }
    return p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Kills QEMU if the tool has not returned after @secs: a restore must not hang. */
typedef struct {
    GPid pid;
    guint secs;
    gint done;
    gboolean fired;
} Watchdog;

static gpointer
watchdog_thread(gpointer data)
{
    Watchdog *w = data;

    for (guint i = 0; i < w->secs * 10 && !g_atomic_int_get(&w->done); i++) {
        g_usleep(100000);
    }
    if (!g_atomic_int_get(&w->done)) {
        w->fired = TRUE;
        kill(w->pid, SIGKILL);
    }
    return NULL;
}

static char *saved_img;

/* The control: a save without faults gives an image the header check accepts, so the
 * refusals above are not vacuous. Kept for the restore tests. */
static void
test_save_control(void)
{
    g_autofree char *img = g_build_filename(ft_workdir(), "good.img", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(QgImageInfo) info = NULL;
    const char *save[] = { "save", "--qmp", NULL, img, "--bypass-cache=direct", NULL };
    int fd;

    if (!need_qemu()) {
        return;
    }
    save[2] = source->sock;
    g_assert_cmpint(qgt_tool_run(save, NULL, NULL), ==, 0);
    fd = open(img, O_RDONLY | O_CLOEXEC);
    info = qg_image_read_header(fd, img, &error);
    g_assert_no_error(error);
    g_assert_nonnull(info);
    g_assert_cmpuint(info->stream_length, >, 0);
    close(fd);
    saved_img = g_steal_pointer(&img);
}

/* A fault in the helper mid-restore. */
typedef struct {
    const char *fault;
    gboolean kill;        /* kill the helper mid-restore (after @fault stalled it) */
    gboolean term_tool;   /* instead, SIGTERM the tool mid-restore */
    const char *needle;   /* the message after "qemu-iohelper: "; NULL: the helper's
                           * "restore failed: read IMAGE: Input/output error" */
    const char *extra;    /* one more option, or NULL */
    gboolean untouched;   /* the failure comes before QEMU got the pipe: QEMU still
                           * waits, and takes the image at a second try */
} RestoreFault;

/* A restore whose helper fails reading the image (or is killed): QEMU 7.2 would spin on
 * its cut pipe forever, so the tool itself must notice, within seconds: exit 1, one line
 * with the helper's own message, and the half-loaded destination QEMU gone (quit by the
 * tool through QMP, or exited by itself; not killed), so that no guest of a failed
 * restore can run. A restore interrupted by SIGTERM ends the same way. */
static void
test_restore_fault(gconstpointer data)
{
    const RestoreFault *t = data;
    g_autofree char *err = NULL;
    g_autofree char *want = NULL;
    const char *restore[] = { "restore", "--qmp", NULL, NULL, "--bypass-cache=direct",
                              t->extra, NULL };
    Watchdog wd = { .secs = 12 };
    Killer k = { 0 };
    GThread *killer = NULL;
    GThread *th;
    QgtQemu *dst;
    gint64 start;
    double secs;
    int code, status = 0;

    if (!qgt_have_qemu()) {
        return;
    }
    if (!saved_img) {
        g_test_skip("no image: the control save did not run");
        return;
    }
    dst = qgt_qemu_start(data_file, TRUE);
    restore[2] = dst->sock;
    restore[3] = saved_img;
    wd.pid = dst->pid;
    th = g_thread_new("watchdog", watchdog_thread, &wd);
    faults_on(t->fault, saved_img, FALSE);
    if (t->kill || t->term_tool) {
        k.img = saved_img;
        if (t->term_tool) {
            k.argv0 = "/qemu-iohelper";
            k.sig = SIGTERM;
        }
        killer = g_thread_new("killer", killer_thread, &k);
    }
    start = g_get_monotonic_time();
    code = qgt_tool_run(restore, NULL, &err);
    secs = (g_get_monotonic_time() - start) / 1e6;
    faults_off();
    g_atomic_int_set(&wd.done, 1);
    g_thread_join(th);
    if (killer) {
        g_thread_join(killer);
        g_assert_cmpint(k.killed, >, 0);
        ft_count_faults(1);
    }
    ft_count_faults(ft_faults_logged());
    g_test_message("failed restore reported after %.2f s", secs);
    /* The tool returned by itself: QEMU was not killed to end a hang. */
    g_assert_false(wd.fired);
    g_assert_cmpfloat(secs, <, 6.0);
    g_assert_cmpint(code, ==, 1);
    g_assert_true(g_str_has_prefix(err, "qemu-iohelper: "));
    g_assert_true(strchr(err, '\n') == NULL || strchr(err, '\n')[1] == '\0');
    /* The helper's message, not QEMU's: qemu-iohelper: restore failed: read PATH: EIO */
    if (t->needle) {
        want = g_strdup_printf("qemu-iohelper: %s", t->needle);
    } else {
        want = g_strdup_printf("qemu-iohelper: restore failed: read %s: Input/output error",
                               saved_img);
    }
    if (!g_str_has_prefix(err, want)) {
        g_test_fail_printf("'%s' does not start with '%s'", err, want);
    }
    if (t->untouched) {
        /* Refused before QEMU got a byte: it still waits, and a second try succeeds. */
        g_autofree char *st = qgt_qemu_status(dst);
        const char *again[] = { "restore", "--qmp", dst->sock, saved_img, NULL };
        g_assert_cmpstr(st, ==, "inmigrate");
        g_assert_nonnull(strstr(err, "QEMU untouched"));
        g_assert_cmpint(qgt_tool_run(again, NULL, NULL), ==, 0);
        qgt_qemu_stop(dst);
        return;
    }
    /* The destination was quit through QMP (exit 0), not left spinning or running. */
    if (!qgt_qemu_exited_within(dst, 3, &status)) {
        g_autofree char *st = qgt_qemu_status(dst);
        g_test_fail_printf("destination QEMU still there after the failed restore ('%s')",
                           st);
        g_assert_cmpstr(st, !=, "running");
    } else {
        /* Exit 0 when our `quit` ended it; 1 when QEMU noticed the cut stream itself
         * first (a cut at a section boundary). Never a signal: nobody had to kill it. */
        g_test_message("destination QEMU exited with %d", WEXITSTATUS(status));
        g_assert_true(WIFEXITED(status));
        g_assert_false(process_alive(wd.pid));
    }
    qgt_qemu_stop(dst);
}

/* ---- damaged images: the header parser, and a restore of each ---- */

static const struct {
    const char *seed;      /* in tests/fuzz/corpus-image-header */
    QgImageError code;     /* what qg_image_header_decode says (or read_header for valid) */
} damaged[] = {
    { "truncated-fixed", QG_IMAGE_ERROR_TRUNCATED },
    { "truncated-json", QG_IMAGE_ERROR_TRUNCATED },
    { "wrong-magic", QG_IMAGE_ERROR_BAD_MAGIC },
    { "placeholder", QG_IMAGE_ERROR_INCOMPLETE },
    { "wrong-version", QG_IMAGE_ERROR_VERSION },
    { "oversized-metadata", QG_IMAGE_ERROR_CORRUPT },
    { "wrong-header-size", QG_IMAGE_ERROR_CORRUPT },
    { "wrong-checksum", QG_IMAGE_ERROR_CORRUPT },
    { "bad-json", QG_IMAGE_ERROR_CORRUPT },
    { "wrong-types", QG_IMAGE_ERROR_CORRUPT },
    { "valid", QG_IMAGE_ERROR_TRUNCATED },   /* a good header, but no stream after it */
};

static guint n_bad_inputs;

static char *
seed_path(const char *name)
{
    return g_build_filename(FUZZ_CORPUS_DIR, "corpus-image-header", name, NULL);
}

static void
test_damaged_headers(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(damaged); i++) {
        g_autofree char *path = seed_path(damaged[i].seed);
        g_autofree char *data = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(QgImageInfo) info = NULL;
        gsize len;
        int fd;

        g_assert_true(g_file_get_contents(path, &data, &len, NULL));
        info = qg_image_header_decode((const guint8 *)data, len, path, &error);
        if (!info) {
            /* decoding alone refuses it */
        } else {
            /* the header is fine: the file check must refuse it */
            g_clear_pointer(&info, qg_image_info_free);
            fd = open(path, O_RDONLY | O_CLOEXEC);
            info = qg_image_read_header(fd, path, &error);
            close(fd);
        }
        g_assert_null(info);
        g_test_message("%s: %s", damaged[i].seed, error->message);
        g_assert_error(error, QG_IMAGE_ERROR, (gint)damaged[i].code);
        g_assert_null(strchr(error->message, '\n'));
        n_bad_inputs++;
    }
}

/* A restore into @dst refused before QEMU got a byte: exit 1, one line (naming @needle
 * unless NULL), and QEMU still waiting for an incoming stream. Returns the line. */
static char *
assert_restore_refused(QgtQemu *dst, const char *const *args, const char *needle)
{
    g_autofree char *err = NULL;
    g_autofree char *st = NULL;

    g_assert_cmpint(qgt_tool_run_timeout(args, 20, NULL, &err), ==, 1);
    qgt_assert_one_line(err);
    if (needle) {
        ioht_assert_contains(err, needle);
    }
    st = qgt_qemu_status(dst);
    g_assert_cmpstr(st, ==, "inmigrate");
    n_bad_inputs++;
    return g_steal_pointer(&err);
}

static void
test_restore_damaged(void)
{
    g_autofree char *img = g_build_filename(ft_workdir(), "damaged.img", NULL);
    const char *restore[] = { "restore", "--qmp", NULL, img, NULL };
    QgtQemu *dst;

    if (!qgt_have_qemu()) {
        return;
    }
    dst = qgt_qemu_start(data_file, TRUE);
    restore[2] = dst->sock;
    for (gsize i = 0; i < G_N_ELEMENTS(damaged); i++) {
        g_autofree char *seed = seed_path(damaged[i].seed);
        g_autofree char *data = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(seed, &data, &len, NULL));
        g_assert_true(g_file_set_contents(img, data, (gssize)len, NULL));
        g_free(assert_restore_refused(dst, restore, NULL));
    }
    qgt_qemu_stop(dst);
    g_unlink(img);
}

/* ---- FILE checked before the guest is touched (case 9), O_DIRECT probed (case 10) ---- */

static void
remove_tree(const char *dir)
{
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);

    g_assert_cmpint(system(cmd), ==, 0);
}

/* Events QEMU sent to the test's monitor so far: TRUE if one was @name. */
static gboolean
saw_event(QgtQemu *q, const char *name)
{
    gboolean seen = FALSE;

    for (;;) {
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) ev = qg_qmp_next_event(q->qmp, 0, &error);
        g_assert_no_error(error);
        if (!ev) {
            return seen;
        }
        seen |= g_strcmp0(json_object_get_string_member_with_default(ev, "event", ""),
                          name) == 0;
    }
}

/* The shared source, running, its old events drained. */
static gboolean
running_source(void)
{
    if (!need_qemu()) {
        return FALSE;
    }
    g_assert_true(qg_qmp_run(source->qmp, "cont", NULL, NULL));
    g_usleep(100000);
    saw_event(source, "STOP");
    return TRUE;
}

/* The source back to paused, as need_qemu() expects it. */
static void
pause_source(void)
{
    g_autofree char *st = qgt_qemu_status(source);

    g_assert_cmpstr(st, ==, "running");
    g_assert_true(qg_qmp_run(source->qmp, "stop", NULL, NULL));
}

/* A save to @file must be refused up front: exit @code, one line naming @file and
 * saying @needle, the guest never paused, @file as it was, no temporary file. */
static void
save_refused(const char *file, int code, const char *needle, const char *opt)
{
    g_autofree char *err = NULL;
    g_autofree char *dir = g_path_get_dirname(file);
    g_autofree char *part = g_strdup_printf("%s.part-", file[0] ? strrchr(file, '/') + 1 : "");
    g_autofree char *st = NULL;
    const char *args[] = { "save", "--qmp", source->sock, file, opt, NULL };
    struct stat before = { 0 }, after = { 0 };
    gboolean existed = lstat(file, &before) == 0;

    g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, code);
    qgt_assert_one_line(err);
    if (!strstr(err, needle) || (code == 1 && !strstr(err, file))) {
        g_test_fail_printf("'%s' does not name '%s' and say '%s'", err, file, needle);
    }
    st = qgt_qemu_status(source);
    g_assert_cmpstr(st, ==, "running");
    g_assert_false(saw_event(source, "STOP"));
    if (existed) {
        g_assert_cmpint(lstat(file, &after), ==, 0);
        g_assert_cmpuint(after.st_mode, ==, before.st_mode);
        g_assert_cmpuint(after.st_ino, ==, before.st_ino);
        g_assert_cmpuint(after.st_rdev, ==, before.st_rdev);
    }
    g_assert_cmpuint(ioht_count_prefix(dir, part), ==, 0);
    n_bad_inputs++;
}

/* A directory, a FIFO, a socket, device nodes, a link to a directory, a link loop, an
 * empty name: each refused before the guest is paused, and left as it was. */
static void
test_save_file_kinds(void)
{
    g_autofree char *dir = g_build_filename(ft_workdir(), "kinds", NULL);
    g_autofree char *d = g_build_filename(dir, "dir", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    g_autofree char *sock = g_build_filename(dir, "sock", NULL);
    g_autofree char *chr = g_build_filename(dir, "chr", NULL);
    g_autofree char *blk = g_build_filename(dir, "blk", NULL);
    g_autofree char *link = g_build_filename(dir, "link-dir", NULL);
    g_autofree char *loop_a = g_build_filename(dir, "loop-a", NULL);
    g_autofree char *loop_b = g_build_filename(dir, "loop-b", NULL);
    g_autofree char *want_link = g_strdup_printf("it links to %s, which is a directory", d);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int sfd;

    if (!running_source()) {
        return;
    }
    g_assert_cmpint(g_mkdir_with_parents(d, 0700), ==, 0);
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_strlcpy(addr.sun_path, sock, sizeof(addr.sun_path));
    g_assert_cmpint(bind(sfd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    close(sfd);
    g_assert_cmpint(symlink("dir", link), ==, 0);
    g_assert_cmpint(symlink("loop-b", loop_a), ==, 0);
    g_assert_cmpint(symlink("loop-a", loop_b), ==, 0);

    save_refused(d, 1, "it is a directory, not a regular file", NULL);
    save_refused(fifo, 1, "it is a pipe, not a regular file", NULL);
    save_refused(sock, 1, "it is a socket", NULL);
    save_refused(link, 1, want_link, NULL);
    save_refused(loop_a, 1, "Too many levels of symbolic links", NULL);
    save_refused("", 2, "FILE is empty", NULL);
    /* Device nodes: the class the issue found (a block node replaced by a file). */
    if (mknod(chr, S_IFCHR | 0600, makedev(1, 3)) == 0 &&
        mknod(blk, S_IFBLK | 0600, makedev(7, 0)) == 0) {
        save_refused(chr, 1, "it is a character device", NULL);
        save_refused(blk, 1, "it is a block device", NULL);
    } else {
        g_test_message("no device nodes here (%s): those two cases not run", g_strerror(errno));
    }
    pause_source();
    remove_tree(dir);
}

/* A symlink at FILE is followed: the file it leads to (through a chain of relative
 * links) is replaced by the new image, made in that file's folder; the links stay. A
 * dangling link gets its file created. */
static void
test_save_symlink(void)
{
    g_autofree char *links = g_build_filename(ft_workdir(), "links", NULL);
    g_autofree char *store = g_build_filename(ft_workdir(), "store", NULL);
    g_autofree char *target = g_build_filename(store, "vm.img", NULL);
    g_autofree char *link = g_build_filename(links, "vm.img", NULL);
    g_autofree char *chain = g_build_filename(links, "chain", NULL);
    g_autofree char *dangling = g_build_filename(links, "new", NULL);
    g_autofree char *created = g_build_filename(store, "new.img", NULL);
    const char *const via[] = { chain, dangling };
    const char *const lands[] = { target, created };

    g_assert_cmpint(g_mkdir_with_parents(links, 0700), ==, 0);
    g_assert_cmpint(g_mkdir_with_parents(store, 0700), ==, 0);
    g_assert_true(g_file_set_contents(target, "old image", -1, NULL));
    g_assert_cmpint(symlink("../store/vm.img", link), ==, 0);
    g_assert_cmpint(symlink("vm.img", chain), ==, 0);
    g_assert_cmpint(symlink("../store/new.img", dangling), ==, 0);
    for (gsize i = 0; i < G_N_ELEMENTS(via); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(QgImageInfo) info = NULL;
        g_autofree char *err = NULL;
        const char *args[] = { "save", "--qmp", NULL, via[i], NULL };
        struct stat st;
        int fd;

        if (!need_qemu()) {
            return;
        }
        args[2] = source->sock;
        g_assert_cmpint(qgt_tool_run(args, NULL, &err), ==, 0);
        g_assert_cmpint(lstat(via[i], &st), ==, 0);
        g_assert_true(S_ISLNK(st.st_mode));
        g_assert_cmpint(lstat(lands[i], &st), ==, 0);
        g_assert_true(S_ISREG(st.st_mode));
        fd = open(lands[i], O_RDONLY | O_CLOEXEC);
        info = qg_image_read_header(fd, lands[i], &error);
        close(fd);
        g_assert_no_error(error);
        g_assert_cmpuint(ioht_count_prefix(links, "vm.img.part-") +
                         ioht_count_prefix(links, "new.part-") +
                         ioht_count_prefix(store, "vm.img.part-") +
                         ioht_count_prefix(store, "new.img.part-"), ==, 0);
    }
    remove_tree(links);
    remove_tree(store);
}

/* A ramfs (no O_DIRECT) in a mount namespace of this thread's own, or NULL (skipped). */
static char *
mount_ramfs(const char *name)
{
    g_autofree char *dir = g_build_filename(ft_workdir(), name, NULL);

    if (geteuid() != 0) {
        g_test_skip("mounting a ramfs needs root");
        return NULL;
    }
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        g_test_message("no private mount namespace (%s): the mount is global",
                       g_strerror(errno));
    }
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    if (mount("ioh-ramfs", dir, "ramfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0) {
        g_test_skip_printf("mount ramfs: %s", g_strerror(errno));
        g_rmdir(dir);
        return NULL;
    }
    return g_steal_pointer(&dir);
}

static void
umount_ramfs(const char *dir)
{
    umount2(dir, MNT_DETACH);
    g_rmdir(dir);
}

/* --bypass-cache=direct onto a file system that refuses O_DIRECT: refused before the
 * guest is paused, nothing left behind. */
static void
test_save_direct_refused(void)
{
    g_autofree char *mnt = NULL;
    g_autofree char *img = NULL;

    if (!running_source()) {
        return;
    }
    mnt = mount_ramfs("ramfs-save");
    if (!mnt) {
        pause_source();
        return;
    }
    img = g_build_filename(mnt, "vm.img", NULL);
    save_refused(img, 1, "refuses O_DIRECT", "--bypass-cache=direct");
    g_assert_cmpuint(ioht_count_prefix(mnt, ""), ==, 0);
    pause_source();
    umount_ramfs(mnt);
}

/* A restore from what is not a regular file: refused at once (a FIFO never blocks the
 * tool), with QEMU still waiting for its stream. */
static void
test_restore_file_kinds(void)
{
    g_autofree char *dir = g_build_filename(ft_workdir(), "rkinds", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    g_autofree char *sock = g_build_filename(dir, "sock", NULL);
    g_autofree char *chr = g_build_filename(dir, "chr", NULL);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    const char *const files[] = { dir, fifo, sock, chr };
    QgtQemu *dst;
    int sfd;

    if (!qgt_have_qemu()) {
        return;
    }
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_strlcpy(addr.sun_path, sock, sizeof(addr.sun_path));
    g_assert_cmpint(bind(sfd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    close(sfd);
    if (mknod(chr, S_IFCHR | 0600, makedev(1, 3)) < 0) {
        g_test_message("no device node here (%s)", g_strerror(errno));
        g_assert_true(g_file_set_contents(chr, "", 0, NULL));   /* stands for it */
    }
    dst = qgt_qemu_start(data_file, TRUE);
    for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
        const char *args[] = { "restore", "--qmp", dst->sock, files[i], NULL };

        g_free(assert_restore_refused(dst, args, files[i]));
    }
    qgt_qemu_stop(dst);
    remove_tree(dir);
}

/* An image on a file system without O_DIRECT, restored with --bypass-cache=direct: the
 * restore fails before QEMU is touched, so the same waiting QEMU takes the image at the
 * next try without it, and its RAM comes back byte for byte. */
static void
test_restore_direct_refused(void)
{
    g_autofree char *mnt = NULL;
    g_autofree char *img = NULL;
    g_autofree char *dump = g_build_filename(ft_workdir(), "direct.dump", NULL);
    g_autofree char *err = NULL;
    g_autofree char *cmd = NULL;
    QgtQemu *dst;

    if (!qgt_have_qemu()) {
        return;
    }
    if (!saved_img) {
        g_test_skip("no image: the control save did not run");
        return;
    }
    mnt = mount_ramfs("ramfs-restore");
    if (!mnt) {
        return;
    }
    img = g_build_filename(mnt, "vm.img", NULL);
    cmd = g_strdup_printf("cp '%s' '%s'", saved_img, img);
    g_assert_cmpint(system(cmd), ==, 0);
    dst = qgt_qemu_start(data_file, TRUE);
    {
        const char *direct[] = { "restore", "--qmp", dst->sock, img, "--bypass-cache=direct",
                                 NULL };
        const char *again[] = { "restore", "--qmp", dst->sock, img, NULL };

        err = assert_restore_refused(dst, direct, img);
        g_assert_nonnull(strstr(err, "O_DIRECT"));
        g_assert_cmpint(qgt_tool_run(again, NULL, NULL), ==, 0);
    }
    qgt_qemu_pmemsave(dst, dump, QGT_DATA_SIZE);
    g_assert_true(ioht_files_equal(dump, data_file));
    qgt_qemu_stop(dst);
    g_unlink(dump);
    g_unlink(img);
    umount_ramfs(mnt);
}

int
main(int argc, char **argv)
{
    static const SaveFault faults[] = {
        { "write:@5M:EIO", FALSE, FALSE, "direct", "Input/output error", NULL },
        { "write:@3M:ENOSPC", FALSE, FALSE, "fadvise", "No space left on device", NULL },
        { "fdatasync:1:EIO", FALSE, FALSE, "direct", "fdatasync", NULL },
        { "close:1:EIO", FALSE, FALSE, "direct", "close", NULL },
        { "write:@2M:stall2000", FALSE, TRUE, "direct", "killed by signal 9", NULL },
        { "pwrite:2:EIO", TRUE, FALSE, "direct", "Input/output error", NULL },
        { "write:@2M:stall5000", FALSE, FALSE, "direct",
          "save failed: the migration stalled: no byte of the stream moved for 1 s",
          "--stall-timeout=1" },
    };
    static const char *const names[] = {
        "helper-write-EIO", "helper-write-ENOSPC", "helper-fdatasync-EIO", "helper-close-EIO",
        "helper-killed", "tool-header-write-EIO", "helper-stalled",
    };
    static const RestoreFault restore_faults[] = {
        /* the read of the stream's first bytes (offset 4096, after the header): with
         * parallel readers the first read call may be another chunk's */
        { "read:@4K:EIO", FALSE, FALSE, NULL, NULL, TRUE },
        { "read:@40M:EIO", FALSE, FALSE, NULL, NULL, FALSE },
        { "read:@3M:stall3000", TRUE, FALSE, "restore failed: helper killed by signal 9", NULL,
          FALSE },
        { "read:@3M:stall3000", FALSE, TRUE, "restore interrupted", NULL, FALSE },
        { "read:@3M:stall5000", FALSE, FALSE,
          "restore failed: the migration stalled: no byte of the stream moved for 1 s",
          "--stall-timeout=1", FALSE },
    };
    int ret;

    qgt_test_init(&argc, &argv);
    signal(SIGPIPE, SIG_IGN);
    real_helper = g_strdup(ioht_helper_path());
    data_file = g_build_filename(ft_workdir(), "ram.bin", NULL);
    ioht_write_random_file(data_file, QGT_DATA_SIZE, 7);
    for (gsize i = 0; i < G_N_ELEMENTS(faults); i++) {
        g_autofree char *p = g_strdup_printf("/faults/qemu/save/%s", names[i]);
        g_test_add_data_func(p, &faults[i], test_save_fault);
    }
    g_test_add_func("/faults/qemu/header/damaged-kinds", test_damaged_headers);
    g_test_add_func("/faults/qemu/restore/damaged-image-refused", test_restore_damaged);
    g_test_add_func("/faults/qemu/save/control-no-fault", test_save_control);
    g_test_add_data_func("/faults/qemu/restore/helper-read-EIO-first", &restore_faults[0],
                         test_restore_fault);
    g_test_add_data_func("/faults/qemu/restore/helper-read-EIO-at-40M", &restore_faults[1],
                         test_restore_fault);
    g_test_add_data_func("/faults/qemu/restore/helper-killed", &restore_faults[2],
                         test_restore_fault);
    g_test_add_data_func("/faults/qemu/restore/tool-interrupted", &restore_faults[3],
                         test_restore_fault);
    g_test_add_data_func("/faults/qemu/restore/helper-stalled", &restore_faults[4],
                         test_restore_fault);
    g_test_add_func("/faults/qemu/save/file-kinds-refused", test_save_file_kinds);
    g_test_add_func("/faults/qemu/save/symlink-followed", test_save_symlink);
    g_test_add_func("/faults/qemu/save/direct-refused", test_save_direct_refused);
    g_test_add_func("/faults/qemu/restore/file-kinds-refused", test_restore_file_kinds);
    g_test_add_func("/faults/qemu/restore/direct-refused-then-retried",
                    test_restore_direct_refused);
    ret = g_test_run();
    qgt_qemu_stop(source);
    if (saved_img) {
        g_unlink(saved_img);
        g_free(saved_img);
    }
    ft_total_bad_inputs += n_bad_inputs;
    ft_report();
    ft_cleanup();
    return ret;
}
