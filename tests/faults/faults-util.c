/* faults-util.c - shared support of the fault tests */
#include "faults-util.h"
#include "ioh-test.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

guint ft_total_faults;
guint ft_total_bad_inputs;
guint ft_total_data_loss;

static char *workdir;
static char *fault_log;

const char *
ft_workdir(void)
{
    if (!workdir) {
        workdir = ioht_workdir();
        fault_log = g_build_filename(workdir, "fault.log", NULL);
    }
    return workdir;
}

void
ft_cleanup(void)
{
    ioht_workdir_remove(workdir);
    g_clear_pointer(&workdir, g_free);
    g_clear_pointer(&fault_log, g_free);
}

void
ft_count_faults(guint n)
{
    ft_total_faults += n;
    g_test_message("faults injected by this test: %u", n);
}

void
ft_report(void)
{
    g_test_message("TOTAL faults injected: %u; bad inputs tried: %u; runs that lost data: %u",
                   ft_total_faults, ft_total_bad_inputs, ft_total_data_loss);
}

void
ft_result_clear(FtResult *r)
{
    ioht_result_clear(r);
}

const char *
ft_asan_options(void)
{
    static char *opts;
    const char *cur = g_getenv("ASAN_OPTIONS");

    /* A sanitized helper must accept a preloaded library before its runtime. */
    if (!opts) {
        opts = cur && *cur ? g_strdup_printf("%s:verify_asan_link_order=0", cur)
                           : g_strdup("verify_asan_link_order=0");
    }
    return opts;
}

/* This process's environment without the shim's variables, plus the shim and its
 * variables when @s asks for a fault. */
static char **
spawn_env(const FtSpawn *s)
{
    char **env = g_get_environ();

    env = g_environ_unsetenv(env, "IOH_FAULT");
    env = g_environ_unsetenv(env, "IOH_FAULT_PATH");
    env = g_environ_unsetenv(env, "IOH_FAULT_FD");
    env = g_environ_unsetenv(env, "IOH_FAULT_TRACE");
    env = g_environ_unsetenv(env, "LD_PRELOAD");
    if (!s->fault) {
        return env;
    }
    ft_workdir();
    env = g_environ_setenv(env, "LD_PRELOAD", FAULT_SHIM_PATH, TRUE);
    env = g_environ_setenv(env, "IOH_FAULT", s->fault, TRUE);
    env = g_environ_setenv(env, "IOH_FAULT_PATH", s->fault_path ? s->fault_path : "", TRUE);
    env = g_environ_setenv(env, "IOH_FAULT_LOG", s->fault_log ? s->fault_log : fault_log,
                           TRUE);
    env = g_environ_setenv(env, "ASAN_OPTIONS", ft_asan_options(), TRUE);
    if (s->fault_trace) {
        env = g_environ_setenv(env, "IOH_FAULT_TRACE", s->fault_trace, TRUE);
    }
    if (s->fault_fds) {
        env = g_environ_setenv(env, "IOH_FAULT_FD", s->fault_fds, TRUE);
    }
    return env;
}

FtChild
ft_spawn(const FtSpawn *s)
{
    g_auto(GStrv) env = spawn_env(s);
    IohtSpawn is = {
        .args = s->args, .env = (const char *const *)env, .in_fd = s->in_fd,
        .out_fd = s->out_fd, .err_fd = -1, .extra_fds = s->extra_fds,
        .extra_targets = s->extra_targets, .n_extra = s->n_extra,
        .fsize_limit = s->fsize_limit,
    };

    return ioht_spawn(&is);
}

void
ft_wait(FtChild *c, FtResult *r)
{
    /* TAP output must stay UTF-8: the bad-input tests feed the helper raw bytes */
    g_autofree char *shown = NULL;

    ioht_child_wait(c, r);
    shown = g_utf8_make_valid(*r->err ? r->err : "(none)\n", -1);
    g_test_message("iohelper exit %d, stderr: %s", r->code, shown);
}

gboolean
ft_one_line(const char *err)
{
    const char *nl = strchr(err, '\n');

    if (!g_str_has_prefix(err, "iohelper: ") || !nl || nl[1] != '\0') {
        g_test_message("not one 'iohelper: ' line: '%s'", err);
        return FALSE;
    }
    return TRUE;
}

void
ft_pipe(int fds[2])
{
    g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
    fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
}

FtFeed *
ft_feed_start(int fd, const char *path, guint64 max, guint64 stall_at, guint stall_ms,
              gboolean keep_open)
{
    IohtPumpOpts o = { .path = path, .max = max, .stall_at = stall_at,
                       .stall_ms = stall_ms, .keep_open = keep_open };

    return ioht_feed_start(fd, &o);
}

guint64
ft_feed_join(FtFeed *f)
{
    return ioht_pump_join(f, NULL);
}

FtDrain *
ft_drain_start(int fd, const char *path, guint64 max, guint64 stall_at, guint stall_ms)
{
    IohtPumpOpts o = { .path = path, .max = max, .stall_at = stall_at,
                       .stall_ms = stall_ms };

    return ioht_drain_start(fd, &o);
}

guint64
ft_drain_join(FtDrain *d)
{
    return ioht_pump_join(d, NULL);
}

static const char **
join_args(const char *const *opts, const char *in, const char *out)
{
    GPtrArray *a = g_ptr_array_new();

    for (const char *const *o = opts; o && *o; o++) {
        g_ptr_array_add(a, (gpointer)*o);
    }
    g_ptr_array_add(a, (gpointer)in);
    g_ptr_array_add(a, (gpointer)out);
    g_ptr_array_add(a, NULL);
    return (const char **)g_ptr_array_free(a, FALSE);
}

/* A save (@save: pipe -> @dst, fed from @src) or a restore (@src -> pipe, drained into
 * @dst) of the helper as @how says. */
static void
run_pumped(gboolean save, const char *src, const char *dst, const char *const *opts,
           const FtSpawn *how, FtResult *r, guint64 *ret_moved)
{
    g_autofree const char **args = join_args(opts, save ? "-" : src, save ? dst : "-");
    FtSpawn s = { 0 };
    int p[2];
    FtChild c;
    IohtPump *pump;
    guint64 moved;

    if (how) {
        s = *how;
    }
    s.args = args;
    s.in_fd = -1;
    s.out_fd = -1;
    s.fault_path = s.fault_path ? s.fault_path : save ? dst : src;
    ft_pipe(p);
    *(save ? &s.in_fd : &s.out_fd) = p[save ? 0 : 1];
    c = ft_spawn(&s);
    close(p[save ? 0 : 1]);
    pump = save ? ft_feed_start(p[1], src, G_MAXUINT64, 0, 0, FALSE)
                : ft_drain_start(p[0], dst, G_MAXUINT64, 0, 0);
    ft_wait(&c, r);
    moved = ioht_pump_join(pump, NULL);
    if (ret_moved) {
        *ret_moved = moved;
    }
}

void
ft_save(const char *src, const char *dst, const char *const *opts, const FtSpawn *how,
        FtResult *r, guint64 *ret_moved)
{
    run_pumped(TRUE, src, dst, opts, how, r, ret_moved);
}

void
ft_restore(const char *src, const char *dst, const char *const *opts, const FtSpawn *how,
           FtResult *r, guint64 *ret_moved)
{
    run_pumped(FALSE, src, dst, opts, how, r, ret_moved);
}

guint
ft_faults_logged(void)
{
    g_autofree char *text = NULL;
    guint n = 0;

    ft_workdir();
    if (!g_file_get_contents(fault_log, &text, NULL, NULL)) {
        return 0;
    }
    for (const char *p = text; *p; p++) {
        n += *p == '\n';
    }
    g_unlink(fault_log);
    return n;
}

char *
ft_mount(const char *dir, guint64 size, gboolean ext4)
{
    g_autofree char *mnt = g_build_filename(dir, ext4 ? "ext4" : "tmpfs", NULL);
    g_autofree char *opts = NULL;

    static gboolean private_ns;

    if (geteuid() != 0) {
        g_test_skip("mounting a small file system needs root");
        return NULL;
    }
    /* Our own mount namespace: whatever happens to this test, its mounts (and the loop
     * device under the ext4 one) go away with the process. */
    if (!private_ns) {
        if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
            private_ns = TRUE;
        } else {
            g_test_message("no private mount namespace (%s): mounts are global",
                           g_strerror(errno));
        }
    }
    g_mkdir_with_parents(mnt, 0700);
    if (!ext4) {
        opts = g_strdup_printf("size=%" G_GUINT64_FORMAT ",mode=0700", size);
        if (mount("ioh-faults", mnt, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
            g_test_skip_printf("mount tmpfs: %s", g_strerror(errno));
            return NULL;
        }
    } else {
        g_autofree char *img = g_build_filename(dir, "ext4.img", NULL);
        g_autofree char *cmd = NULL;
        g_autofree char *out = NULL;
        int status = 0;
        int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(ftruncate(fd, (off_t)size), ==, 0);
        close(fd);
        /* -m 0: no blocks reserved for root (the tests run as root); no journal: the
         * free space then depends on nothing but our writes. */
        cmd = g_strdup_printf("sh -c 'mkfs.ext4 -q -F -m 0 -b 4096 -O ^has_journal %s && "
                              "mount -o loop %s %s' 2>&1", img, img, mnt);
        if (!g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL) || status != 0) {
            g_test_skip_printf("mkfs.ext4 + mount -o loop failed: %s", out ? out : "");
            g_unlink(img);
            return NULL;
        }
        /* The loop device holds the image open; lazy-delete it now. */
        g_unlink(img);
    }
    return g_steal_pointer(&mnt);
}

void
ft_umount(char *dir)
{
    if (!dir) {
        return;
    }
    /* The loop device of an ext4 mount goes with it (autoclear, set by mount -o loop). */
    if (umount2(dir, 0) < 0) {
        g_test_message("umount %s: %s; detaching lazily", dir, g_strerror(errno));
        umount2(dir, MNT_DETACH);
    }
    g_rmdir(dir);
    g_free(dir);
}

char *
ft_fill(const char *dir, const char *name)
{
    char *path = g_build_filename(dir, name, NULL);
    g_autofree char *buf = g_malloc0(1 << 16);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    for (;;) {
        ssize_t n = write(fd, buf, 1 << 16);
        if (n < 0) {
            g_assert_cmpint(errno, ==, ENOSPC);
            break;
        }
    }
    /* Whatever is left (less than a block) goes too, byte by byte. */
    while (write(fd, buf, 1) == 1) {
    }
    fsync(fd);
    close(fd);
    return path;
}

void
ft_use_faulty_helper(const char *fault, const char *path, const char *real_helper)
{
    g_autofree char *log = g_build_filename(ft_workdir(), "fault.log", NULL);

    g_setenv("IOH_FAULT_SHIM", FAULT_SHIM_PATH, TRUE);
    g_setenv("ASAN_OPTIONS", ft_asan_options(), TRUE);
    g_setenv("IOH_FAULT_HELPER", real_helper, TRUE);
    g_setenv("IOH_FAULT", fault, TRUE);
    g_setenv("IOH_FAULT_PATH", path, TRUE);
    g_setenv("IOH_FAULT_LOG", log, TRUE);
    g_setenv("IOHELPER_PATH", FAULTY_HELPER_PATH, TRUE);
}

char *
ft_age_keygen(char **ret_recipient)
{
    g_autofree char *keygen = g_find_program_in_path("age-keygen");
    g_autofree char *cmd = NULL;
    g_autofree char *text = NULL;
    char *key, *pub;
    int status;

    if (!keygen) {
        return NULL;
    }
    key = g_build_filename(ft_workdir(), "key.txt", NULL);
    cmd = g_strdup_printf("sh -c 'umask 077; age-keygen -o %s 2>/dev/null'", key);
    g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    g_assert_true(g_file_get_contents(key, &text, NULL, NULL));
    pub = strstr(text, "age1");
    g_assert_nonnull(pub);
    *ret_recipient = g_strdup_printf("--recipient=%.*s", (int)strcspn(pub, "\n"), pub);
    return key;
}

char *
ft_make_source(const char *name, guint64 size, guint32 seed)
{
    char *p = g_build_filename(ft_workdir(), name, NULL);

    ioht_write_random_file(p, size, seed);
    return p;
}

char *
ft_make_mixed_source(const char *name, guint64 size, guint32 seed)
{
    char *p = g_build_filename(ft_workdir(), name, NULL);
    g_autofree char *rnd = g_strconcat(p, ".random", NULL);
    g_autofree char *random = NULL;
    g_autoptr(GString) s = g_string_sized_new(size + 128);
    const gsize mib = 1 << 20;
    gsize rlen;

    ioht_write_random_file(rnd, (size + 3) / 4 + mib, seed);
    g_assert_true(g_file_get_contents(rnd, &random, &rlen, NULL));
    g_unlink(rnd);
    for (guint64 i = 0, r = 0; s->len < size; i++) {
        if (s->len / mib % 4 == 3) {
            gsize n = (gsize)MIN((guint64)(mib - s->len % mib), (guint64)(rlen - r));

            g_string_append_len(s, random + r, (gssize)n);
            r += n;
            continue;
        }
        g_string_append_printf(s, "line %" G_GUINT64_FORMAT " of a page-cache-like text, "
                               "value %u\n", i, (guint)((i * 2654435761u + seed) % 1000));
    }
    g_assert_true(g_file_set_contents(p, s->str, (gssize)size, NULL));
    return p;
}

guint64
ft_file_size(const char *path)
{
    struct stat st;

    if (stat(path, &st) < 0) {
        return 0;
    }
    return (guint64)st.st_size;
}

gboolean
ft_prefix_equal(const char *a, const char *b, guint64 len)
{
    const gsize chunk = 1 << 20;
    g_autofree char *ba = g_malloc(chunk);
    g_autofree char *bb = g_malloc(chunk);
    int fa = open(a, O_RDONLY | O_CLOEXEC);
    int fb = open(b, O_RDONLY | O_CLOEXEC);
    guint64 off = 0;
    gboolean same = fa >= 0 && fb >= 0;

    while (same && off < len) {
        gsize want = (gsize)MIN((guint64)chunk, len - off);
        ssize_t na = read(fa, ba, want);
        ssize_t nb = read(fb, bb, want);
        if (na != (ssize_t)want || nb != (ssize_t)want || memcmp(ba, bb, want) != 0) {
            g_test_message("%s and %s differ in [%" G_GUINT64_FORMAT ", +%zu)", a, b, off,
                           want);
            same = FALSE;
        }
        off += want;
    }
    if (fa >= 0) {
        close(fa);
    }
    if (fb >= 0) {
        close(fb);
    }
    return same;
}

gint64
ft_proc_status_kib(GPid pid, const char *field)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
    g_autofree char *text = NULL;
    g_autofree char *key = g_strdup_printf("\n%s:", field);
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strstr(text, key))) {
        return -1;
    }
    return g_ascii_strtoll(p + strlen(key), NULL, 10);
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

char *
ft_proc_fds(GPid pid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", (int)pid);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    GString *out = g_string_new(NULL);

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_autofree char *t = g_file_read_link(p, NULL);
        g_ptr_array_add(lines, g_strdup_printf("%6s -> %s", name, t ? t : "?"));
    }
    g_ptr_array_sort(lines, compare_strings);
    for (guint i = 0; i < lines->len; i++) {
        g_string_append_printf(out, "%s\n", g_strchug((char *)lines->pdata[i]));
    }
    return g_string_free(out, FALSE);
}

gboolean
ft_wait_file_size(const char *path, guint64 size)
{
    for (int i = 0; i < 2000; i++) {
        if (ft_file_size(path) >= size) {
            return TRUE;
        }
        g_usleep(10000);
    }
    return FALSE;
}
