/* test-libwrap-progress.c - libwrap against the real iohelper binary, through the public
 * API only: the progress callback (/libwrap/progress/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* ---- the progress callback's data ------------------------------------------------ */

typedef struct {
    guint notified;
    gboolean inside;          /* the callback is running */
    gboolean notified_inside; /* the notify ran while it did */
    IohWrap *wrap;
    gpointer other;
} Held;

static void
held_notify(gpointer data)
{
    Held *h = data;

    h->notified++;
    h->notified_inside |= h->inside;
}

static void
held_progress(guint64 written, guint64 synced, gpointer data)
{
    Held *h = data;

    (void)written;
    (void)synced;
    h->inside = TRUE;
    /* Replace this very callback from inside it: the old data must outlive the call. */
    if (h->other) {
        ioh_wrap_set_progress_func(h->wrap, NULL, h->other, held_notify);
        h->other = NULL;
    }
    h->inside = FALSE;
}

/* NULL wrap: a programmer error, reported as GLib does; the data is still given back. */
static void
test_progress_null_wrap(void)
{
    Held h = { 0 };

    g_test_expect_message("iohwrap", G_LOG_LEVEL_CRITICAL, "*wrap != NULL*");
    ioh_wrap_set_progress_func(NULL, held_progress, &h, held_notify);
    g_test_assert_expected_messages();
    g_assert_cmpuint(h.notified, ==, 1);
}

/* Every path that drops the data calls its notify once: replacing, clearing, freeing. */
static void
test_progress_notify(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "n.save");
    Held a = { 0 }, b = { 0 }, c = { 0 };

    for (guint spawn = 0; spawn < 2; spawn++) {
        int fd = open_save(path);
        g_autoptr(GError) error = NULL;
        IohWrap *wrap = ioh_wrap_new(&fd, path, spawn ? IOH_WRAP_POLLABLE : IOH_WRAP_NONE,
                                     NULL, &error);

        g_assert_no_error(error);
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        memset(&c, 0, sizeof(c));
        ioh_wrap_set_progress_func(wrap, held_progress, &a, held_notify);
        ioh_wrap_set_progress_func(wrap, held_progress, &b, held_notify);
        g_assert_cmpuint(a.notified, ==, 1);
        g_assert_cmpuint(b.notified, ==, 0);
        /* No callback, but data to give back: held until replaced or freed. */
        ioh_wrap_set_progress_func(wrap, NULL, &c, held_notify);
        g_assert_cmpuint(b.notified, ==, 1);
        g_assert_cmpuint(c.notified, ==, 0);
        if (spawn) {
            close(fd);
            g_assert_true(ioh_wrap_finish(wrap, &error));
            g_assert_no_error(error);
        } else {
            close(fd);
        }
        ioh_wrap_free(wrap);
        g_assert_cmpuint(a.notified, ==, 1);
        g_assert_cmpuint(b.notified, ==, 1);
        g_assert_cmpuint(c.notified, ==, 1);
    }
}

/* Replacing the callback from inside it: the old data is given back only once the call
 * has returned (as GLib's sources do), never under the running callback. */
static void
test_progress_replace_inside(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *path = tpath(dir, "r.save");
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Held h = { 0 }, other = { 0 };
    int fd = open_save(path);

    ioht_write_random_file(src, MIB, 21);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, NULL, &error);
    g_assert_no_error(error);
    h.wrap = wrap;
    h.other = &other;
    ioh_wrap_set_progress_func(wrap, held_progress, &h, held_notify);
    g_assert_true(ioht_feed_file(src, fd));
    /* This thread owns the default context: the final figures are delivered here. */
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_null(h.other);                 /* the callback ran and replaced itself */
    g_assert_cmpuint(h.notified, ==, 1);
    g_assert_false(h.notified_inside);
    g_clear_pointer(&wrap, ioh_wrap_free);
    g_assert_cmpuint(other.notified, ==, 1);
}

/* A helper whose status lines never arrive (here: sent to /dev/null by a wrapper, as
 * when a caller never drained a full status pipe): the final figures still equal the
 * stream, taken from the file position the helper left. */
static void
test_progress_without_status(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *wrapper = NULL;
    g_autofree char *script = NULL;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "q.save");
    g_autofree char *back = tpath(dir, "back");
    g_autofree char *saved_env = g_strdup(g_getenv("IOHELPER_PATH"));
    const guint64 size = 3 * MIB + 1;
    IohWrapParams params = { .offset = 8192 };
    guint64 w, s;
    int fd;

    script = g_strdup_printf("#!/bin/sh\nexec '%s' \"$@\" 3>/dev/null\n", saved_env);
    wrapper = fake_helper(dir, "quiet-iohelper", script);
    ioht_write_random_file(src, size, 13);

    fd = open_save(saved);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, IOH_WRAP_FADVISE, &params, &error);
        g_assert_no_error(error);
        g_assert_true(ioht_feed_file(src, fd));
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, ==, size);
        g_assert_cmpuint(s, ==, size);
    }
    params.length = size - 100;
    fd = open_restore(saved);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, IOH_WRAP_POLLABLE, &params, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(ioht_drain_to_file(fd, back), ==, size - 100);
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, ==, size - 100);
        g_assert_cmpuint(s, ==, size - 100);
    }
    g_setenv("IOHELPER_PATH", saved_env, TRUE);
}

/* Progress on a restore: synced equals written; sync finish delivers the last figure. */
static void
test_progress_restore_sync(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "r.save");
    g_autofree char *back = tpath(dir, "back");
    const guint64 size = 32 * MIB + 1;
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    Async a = { 0 };
    int fd;

    ioht_write_random_file(path, size, 11);
    fd = open_restore(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_POLLABLE, &params, &error);
    g_assert_no_error(error);
    a.written = g_array_new(FALSE, FALSE, sizeof(guint64));
    a.synced = g_array_new(FALSE, FALSE, sizeof(guint64));
    ioh_wrap_set_progress_func(wrap, on_progress, &a, NULL);
    {
        /* Read slowly enough that the helper reports midway; iterate the context. */
        g_autofree char *buf = g_malloc(MIB);
        guint64 total = 0;
        for (;;) {
            gssize n = read(fd, buf, MIB);
            g_assert_cmpint(n, >=, 0);
            if (n == 0) {
                break;
            }
            total += (guint64)n;
            g_usleep(2000);
            while (g_main_context_iteration(NULL, FALSE)) {
            }
        }
        g_assert_cmpuint(total, ==, size);
    }
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    /* This thread owns the default context: finish delivered the final figure itself. */
    g_assert_cmpuint(g_array_index(a.written, guint64, a.written->len - 1), ==, size);
    for (guint i = 0; i < a.written->len; i++) {
        g_assert_cmpuint(g_array_index(a.written, guint64, i), ==,
                         g_array_index(a.synced, guint64, i));
    }
    check_progress(&a, size, TRUE);
    g_array_unref(a.written);
    g_array_unref(a.synced);
}

/* ioh_wrap_get_progress() without any main loop sees the copy advance. */
static void
test_progress_poll(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "poll.save");
    g_autofree char *chunk = g_malloc0(MIB);
    IohWrapParams params = { .progress_interval_ms = 10 };
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    guint64 w = 0, s = 0, last = 0;
    guint rises = 0;
    int fd;

    if (!have_direct(dir)) {
        return;
    }
    fd = open_save(path);
    wrap = ioh_wrap_new(&fd, path, IOH_WRAP_DIRECT, &params, &error);
    g_assert_no_error(error);
    for (int i = 0; i < 32; i++) {
        g_assert_cmpint(write(fd, chunk, MIB), ==, MIB);
        g_usleep(15000);
        ioh_wrap_get_progress(wrap, &w, &s);
        g_assert_cmpuint(w, >=, last);
        rises += w > last;
        last = w;
    }
    g_assert_cmpuint(rises, >=, 2);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    ioh_wrap_get_progress(wrap, &w, &s);
    g_assert_cmpuint(w, ==, 32 * MIB);
    g_assert_cmpuint(s, ==, 32 * MIB);
}

int
main(int argc, char **argv)
{
    libwrap_test_init(&argc, &argv);
    g_test_add_func("/libwrap/progress/notify/null-wrap", test_progress_null_wrap);
    ioht_dir_add("/libwrap/progress/notify/every-drop", NULL, test_progress_notify);
    ioht_dir_add("/libwrap/progress/notify/replace-inside", NULL, test_progress_replace_inside);
    ioht_dir_add("/libwrap/progress/restore-sync", NULL, test_progress_restore_sync);
    ioht_dir_add("/libwrap/progress/poll", NULL, test_progress_poll);
    ioht_dir_add("/libwrap/progress/without-status", NULL, test_progress_without_status);
    return g_test_run();
}
