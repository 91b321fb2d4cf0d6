/* libwrap-util.c - what the test-libwrap-* programs share: files and fds, the progress
 * records of the async and progress tests, the checksum of a file. Every test drives the
 * real helper ($IOHELPER_PATH) through libwrap's public API only.
 */

#include "config.h"

#include "libwrap-util.h"

void
libwrap_test_init(int *argc, char ***argv)
{
    g_test_init(argc, argv, NULL);
    signal(SIGPIPE, SIG_IGN);
}

char *
tpath(const char *dir, const char *name)
{
    return g_build_filename(dir, name, NULL);
}

int
open_save(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

int
open_restore(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    g_assert_cmpint(fd, >=, 0);
    return fd;
}

gboolean
fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

gboolean
have_direct(const char *dir)
{
    if (!ioht_dir_supports_direct(dir)) {
        g_test_skip("the work folder's file system refuses O_DIRECT");
        return FALSE;
    }
    return TRUE;
}

void
on_progress(guint64 written, guint64 synced, gpointer data)
{
    Async *a = data;

    g_array_append_val(a->written, written);
    g_array_append_val(a->synced, synced);
}

void
check_progress(Async *a, guint64 size, gboolean synced_too)
{
    g_test_message("%u progress calls", a->written->len);
    g_assert_cmpuint(a->written->len, >=, 2);
    for (guint i = 1; i < a->written->len; i++) {
        guint64 pw = g_array_index(a->written, guint64, i - 1);
        guint64 w = g_array_index(a->written, guint64, i);
        guint64 ps = g_array_index(a->synced, guint64, i - 1);
        guint64 s = g_array_index(a->synced, guint64, i);
        g_assert_cmpuint(w, >=, pw);
        g_assert_cmpuint(s, >=, ps);
        g_assert_true(w > pw || s > ps);    /* each call brings news */
        g_assert_cmpuint(s, <=, w);
    }
    g_assert_cmpuint(g_array_index(a->written, guint64, a->written->len - 1), ==, size);
    if (synced_too) {
        g_assert_cmpuint(g_array_index(a->synced, guint64, a->synced->len - 1), ==, size);
    }
    /* Some report came before the end: progress is live, not only the final figure. */
    g_assert_cmpuint(g_array_index(a->written, guint64, 0), <, size);
}

char *
xxh3_of(const char *file)
{
    const char *argv[] = { "xxhsum", "-H3", file, NULL };
    g_autofree char *out = NULL;
    g_autoptr(GError) error = NULL;
    const char *value;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                               &out, NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    value = strrchr(g_strstrip(out), ' ');
    g_assert_nonnull(value);
    g_assert_cmpuint(strlen(value + 1), ==, 16);
    return g_strdup(value + 1);
}

char *
fake_helper(const char *dir, const char *name, const char *script)
{
    char *path = tpath(dir, name);

    g_assert_true(g_file_set_contents(path, script, -1, NULL));
    g_assert_cmpint(g_chmod(path, 0755), ==, 0);
    g_setenv("IOHELPER_PATH", path, TRUE);
    return path;
}
