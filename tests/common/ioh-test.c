/* ioh-test.c - shared test support */
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define TMPFS_MAGIC_ 0x01021994

/* The folders ioht_workdir() made (or adopted) that ioht_workdir_remove() has not removed
 * yet, with the process that made them: removed when that process exits, aborts (a
 * failed g_assert) or is killed by meson at a timeout (SIGTERM), so that a failing test
 * leaves nothing behind in $IOH_TEST_DIR or /var/tmp. $IOH_TEST_KEEP set keeps them, to
 * look inside after a failure. */
static GMutex made_lock;
static GPtrArray *made;
static pid_t made_by;

static void
remove_tree(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK)) {
            remove_tree(p);
        } else {
            g_unlink(p);
        }
    }
    g_rmdir(dir);
}

/* At exit, abort, SIGTERM or SIGINT of the process that made them (not of a forked
 * child). Best effort in a signal handler: the process is dying anyway. */
static void
remove_made(void)
{
    if (!made || getpid() != made_by || g_getenv("IOH_TEST_KEEP")) {
        return;
    }
    for (guint i = 0; i < made->len; i++) {
        remove_tree(made->pdata[i]);
    }
    g_ptr_array_set_size(made, 0);
}

static void
remove_made_and_die(int sig)
{
    remove_made();
    signal(sig, SIG_DFL);
    raise(sig);
}

void
ioht_workdir_adopt(const char *dir)
{
    g_mutex_lock(&made_lock);
    if (!made) {
        made = g_ptr_array_new_with_free_func(g_free);
        made_by = getpid();
        atexit(remove_made);
        signal(SIGABRT, remove_made_and_die);
        signal(SIGTERM, remove_made_and_die);    /* meson's kill at a timeout */
        signal(SIGINT, remove_made_and_die);
    }
    g_ptr_array_add(made, g_strdup(dir));
    g_mutex_unlock(&made_lock);
}

char *
ioht_workdir(void)
{
    const char *base = g_getenv("IOH_TEST_DIR");
    struct statfs sfs;
    g_autofree char *tmpl = NULL;
    char *dir;

    if (!base || !*base) {
        base = "/var/tmp";
    }
    if (statfs(base, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_) {
        base = ".";
    }
    g_mkdir_with_parents(base, 0755);
    tmpl = g_build_filename(base, "ioht-XXXXXX", NULL);
    dir = g_mkdtemp(g_steal_pointer(&tmpl));
    g_assert_nonnull(dir);
    ioht_workdir_adopt(dir);
    return dir;
}

void
ioht_workdir_remove(const char *dir)
{
    if (!dir) {
        return;
    }
    remove_tree(dir);
    g_mutex_lock(&made_lock);
    for (guint i = 0; made && i < made->len; i++) {
        if (g_str_equal(made->pdata[i], dir)) {
            g_ptr_array_remove_index_fast(made, i);
            break;
        }
    }
    g_mutex_unlock(&made_lock);
}

int
ioht_run_tests(char **workdir)
{
    int rc = g_test_run();

    ioht_workdir_remove(*workdir);
    g_clear_pointer(workdir, g_free);
    return rc;
}

guint
ioht_count_prefix(const char *dir, const char *prefix)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    guint n = 0;

    while (d && (name = g_dir_read_name(d))) {
        if (g_str_has_prefix(name, prefix)) {
            g_test_message("found: %s/%s", dir, name);
            n++;
        }
    }
    return n;
}

void
ioht_assert_contains(const char *text, const char *needle)
{
    if (!text || !strstr(text, needle)) {
        g_test_message("expected \"%s\" in: %s", needle, text ? text : "(null)");
        g_assert_not_reached();
    }
}

gboolean
ioht_dir_supports_direct(const char *dir)
{
    g_autofree char *p = g_build_filename(dir, ".direct-probe", NULL);
    void *buf = NULL;
    gboolean ok = FALSE;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);

    if (fd >= 0 && posix_memalign(&buf, 4096, 4096) == 0) {
        memset(buf, 0, 4096);
        ok = write(fd, buf, 4096) == 4096;
    }
    free(buf);
    if (fd >= 0) {
        close(fd);
    }
    g_unlink(p);
    return ok;
}

void
ioht_write_random_file(const char *path, guint64 size, guint32 seed)
{
    const gsize chunk = 1 << 20;
    g_autofree guint64 *buf = g_malloc(chunk);
    guint64 x = 0x9E3779B97F4A7C15ULL ^ seed;
    FILE *f = fopen(path, "wbe");

    g_assert_nonnull(f);
    while (size > 0) {
        gsize n = (gsize)MIN((guint64)chunk, size);
        for (gsize i = 0; i < chunk / 8; i++) {
            /* xorshift64: fast, and incompressible enough for a copy test */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = x;
        }
        g_assert_cmpuint(fwrite(buf, 1, n, f), ==, n);
        size -= n;
    }
    g_assert_cmpint(fclose(f), ==, 0);
}

gboolean
ioht_files_equal(const char *a, const char *b)
{
    const gsize chunk = 1 << 20;
    g_autofree char *ba = g_malloc(chunk);
    g_autofree char *bb = g_malloc(chunk);
    FILE *fa = fopen(a, "rbe");
    FILE *fb = fopen(b, "rbe");
    guint64 off = 0;
    gboolean same = fa && fb;

    while (same) {
        gsize na = fread(ba, 1, chunk, fa);
        gsize nb = fread(bb, 1, chunk, fb);
        if (na != nb || memcmp(ba, bb, na) != 0) {
            g_test_message("%s and %s differ near offset %" G_GUINT64_FORMAT
                           " (%zu vs %zu bytes read)", a, b, off, na, nb);
            same = FALSE;
        }
        if (na < chunk) {
            break;
        }
        off += na;
    }
    if (fa) {
        fclose(fa);
    }
    if (fb) {
        fclose(fb);
    }
    return same;
}

const char *
ioht_helper_path(void)
{
    const char *p = g_getenv("IOHELPER_PATH");

    g_assert_nonnull(p);
    return p;
}

void
ioht_dir_setup(IohtDir *fx, gconstpointer data)
{
    (void)data;
    fx->dir = ioht_workdir();
}

void
ioht_dir_teardown(IohtDir *fx, gconstpointer data)
{
    (void)data;
    ioht_workdir_remove(fx->dir);
    g_clear_pointer(&fx->dir, g_free);
}

void
ioht_dir_add(const char *path, gconstpointer data,
             void (*test)(IohtDir *fx, gconstpointer data))
{
    g_test_add(path, IohtDir, data, ioht_dir_setup, test, ioht_dir_teardown);
}

char *
ioht_dir_path(const IohtDir *fx, const char *name)
{
    return g_build_filename(fx->dir, name, NULL);
}

guint64
ioht_cached_bytes(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    guint64 size, n = 0;
    long page = sysconf(_SC_PAGESIZE);
    g_autofree unsigned char *vec = NULL;
    void *map;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    size = (guint64)st.st_size;
    if (size == 0) {
        close(fd);
        return 0;
    }
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    g_assert_true(map != MAP_FAILED);
    vec = g_malloc((size + page - 1) / page);
    g_assert_cmpint(mincore(map, size, vec), ==, 0);
    for (guint64 i = 0; i < (size + page - 1) / page; i++) {
        n += vec[i] & 1;
    }
    munmap(map, size);
    close(fd);
    return n * page;
}
