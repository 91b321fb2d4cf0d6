/* test-libwrap-roundtrip.c - libwrap against the real iohelper binary, through the public
 * API only: round trips, the pipe (/libwrap/roundtrip/..., /libwrap/pipe/...)
 */
#include "config.h"

#include "libwrap-util.h"

/* Saves @src into @dst through a wrap with @flags, then checks the result. */
static void
save_through(const char *src, const char *dst, IohWrapFlags flags,
             const IohWrapParams *params)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_save(dst);

    wrap = ioh_wrap_new(&fd, dst, flags, params, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    g_assert_true(ioht_feed_file(src, fd));
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    g_assert_false(fd_is_open(fd));    /* finish closed our end */
}

static guint64
restore_through(const char *saved, const char *out, IohWrapFlags flags,
                const IohWrapParams *params)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd = open_restore(saved);
    guint64 n;

    wrap = ioh_wrap_new(&fd, saved, flags, params, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_wrap_is_spawned(wrap));
    n = ioht_drain_to_file(fd, out);
    g_assert_true(ioh_wrap_finish(wrap, &error));
    g_assert_no_error(error);
    return n;
}

static gint
cmp_int(gconstpointer a, gconstpointer b)
{
    return GPOINTER_TO_INT(a) - GPOINTER_TO_INT(b);
}

/* The fd numbers open in process @pid, sorted. */
static GList *
list_fds(GPid pid)
{
    g_autofree char *dirname = g_strdup_printf("/proc/%d/fd", (int)pid);
    g_autoptr(GDir) dir = g_dir_open(dirname, 0, NULL);
    GList *fds = NULL;
    const char *name;

    g_assert_nonnull(dir);
    while ((name = g_dir_read_name(dir))) {
        fds = g_list_prepend(fds, GINT_TO_POINTER(atoi(name)));
    }
    return g_list_sort(fds, cmp_int);
}

/* ---- round trips ---------------------------------------------------------------- */

typedef struct {
    IohWrapFlags flags;
    guint64 size;
} RoundTrip;

static void
test_roundtrip(IohtDir *fx, gconstpointer data)
{
    const RoundTrip *rt = data;
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "vm.save");
    g_autofree char *back = tpath(dir, "restored");
    struct stat st;

    if ((rt->flags & IOH_WRAP_DIRECT) && !have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, rt->size, (guint32)rt->size);
    save_through(src, saved, rt->flags, NULL);
    g_assert_cmpint(g_stat(saved, &st), ==, 0);
    g_assert_cmpuint((guint64)st.st_size, ==, rt->size);
    g_assert_true(ioht_files_equal(src, saved));
    g_assert_cmpuint(restore_through(saved, back, rt->flags, NULL), ==, rt->size);
    g_assert_true(ioht_files_equal(src, back));
}

/* A stream after a 4096-byte header, restored with an exact length from a longer file. */
static void
test_offset_length(IohtDir *fx, gconstpointer data)
{
    IohWrapFlags flags = GPOINTER_TO_UINT(data);
    const char *dir = fx->dir;
    g_autofree char *src = tpath(dir, "src");
    g_autofree char *saved = tpath(dir, "vm.save");
    g_autofree char *back = tpath(dir, "restored");
    g_autofree char *contents = NULL;
    const guint64 size = 2 * MIB + 5;
    IohWrapParams params = { .offset = 4096 };
    gsize len;
    int fd;

    if ((flags & IOH_WRAP_DIRECT) && !have_direct(dir)) {
        return;
    }
    ioht_write_random_file(src, size, 7);
    fd = open_save(saved);
    g_assert_cmpint(pwrite(fd, "HEADER", 6, 0), ==, 6);
    close(fd);
    /* The save keeps the header and writes the stream at 4096. */
    fd = open(saved, O_WRONLY | O_CLOEXEC);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = ioh_wrap_new(&fd, saved, flags, &params, &error);
        g_assert_no_error(error);
        g_assert_true(ioht_feed_file(src, fd));
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
    }
    /* Trailing garbage after the stream: --length must stop before it. */
    fd = open(saved, O_WRONLY | O_APPEND | O_CLOEXEC);
    g_assert_cmpint(write(fd, "TRAILER", 7), ==, 7);
    close(fd);
    g_assert_true(g_file_get_contents(saved, &contents, &len, NULL));
    g_assert_cmpuint(len, ==, 4096 + size + 7);
    g_assert_cmpint(memcmp(contents, "HEADER", 6), ==, 0);

    params.length = size;
    g_assert_cmpuint(restore_through(saved, back, flags, &params), ==, size);
    g_assert_true(ioht_files_equal(src, back));
}

/* ---- the pipe and the child's fds ------------------------------------------------ */

static guint
expected_pipe_size(void)
{
    g_autofree char *text = NULL;
    guint64 max = MIB;

    if (g_file_get_contents("/proc/sys/fs/pipe-max-size", &text, NULL, NULL)) {
        max = g_ascii_strtoull(text, NULL, 10);
    }
    return (guint)MIN(max, (guint64)MIB);
}

static void
test_pipe_size(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "p.save");
    IohWrapFlags modes[] = { IOH_WRAP_POLLABLE, IOH_WRAP_FADVISE };

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        for (int restore = 0; restore <= 1; restore++) {
            g_autoptr(GError) error = NULL;
            g_autoptr(IohWrap) wrap = NULL;
            int fd = restore ? open_restore(path) : open_save(path);
            int fl;

            wrap = ioh_wrap_new(&fd, path, modes[i], NULL, &error);
            g_assert_no_error(error);
            g_assert_cmpint(fcntl(fd, F_GETPIPE_SZ), ==, (int)expected_pipe_size());
            fl = fcntl(fd, F_GETFL);
            g_assert_cmpint(fl & O_ACCMODE, ==, restore ? O_RDONLY : O_WRONLY);
            g_assert_cmpint(fl & O_NONBLOCK, ==, 0);
            g_assert_cmpint(fcntl(fd, F_GETFD) & FD_CLOEXEC, ==, FD_CLOEXEC);
            if (restore) {
                char c;
                g_assert_cmpint(read(fd, &c, 1), ==, 0);    /* empty file: EOF */
            }
            g_assert_true(ioh_wrap_finish(wrap, &error));
            g_assert_no_error(error);
        }
    }
}

static char *
fd_target(GPid pid, int fd)
{
    g_autofree char *link = g_strdup_printf("/proc/%d/fd/%d", (int)pid, fd);

    return g_file_read_link(link, NULL);
}

/* TRUE when fd @n of process @pid has O_CLOEXEC (from /proc/PID/fdinfo/N). */
static gboolean
fd_has_cloexec(GPid pid, int n)
{
    g_autofree char *p = g_strdup_printf("/proc/%d/fdinfo/%d", (int)pid, n);
    g_autofree char *text = NULL;
    const char *f;

    g_assert_true(g_file_get_contents(p, &text, NULL, NULL));
    f = strstr(text, "flags:");
    g_assert_nonnull(f);
    return (g_ascii_strtoull(f + strlen("flags:"), NULL, 8) & O_CLOEXEC) != 0;
}

/* Waits until the helper of @wrap has started copying, so that what it opened while
 * starting (its runtime, a sanitizer's) is settled: a restore has put bytes into @fd;
 * a save has sent its first progress line for the first MiB written into @fd. */
static void
wait_helper_copying(IohWrap *wrap, int fd, gboolean restore)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    g_autofree char *zeros = g_malloc0(MIB);
    IohtPumpOpts first = { .data = zeros, .len = MIB };
    guint64 written = 0;

    if (restore) {
        g_assert_cmpint(poll(&pfd, 1, 30000), ==, 1);
        return;
    }
    /* a whole buffer: the helper reports once it has stored one */
    g_assert_true(ioht_feed(fd, &first));
    while (written == 0 && g_get_monotonic_time() < end) {
        g_usleep(5000);
        ioh_wrap_get_progress(wrap, &written, NULL);
    }
    g_assert_cmpuint(written, >, 0);
}

/* The helper @pid inherited exactly fds 0 to 3: the fds without O_CLOEXEC. */
static void
assert_inherited_0_to_3(GPid pid)
{
    g_autoptr(GList) fds = list_fds(pid);
    GList *inherited = NULL;

    for (GList *l = fds; l; l = l->next) {
        int n = GPOINTER_TO_INT(l->data);
        g_autofree char *t = fd_target(pid, n);
        gboolean cloexec = fd_has_cloexec(pid, n);
        g_test_message("helper %d fd %d -> %s%s", (int)pid, n, t,
                       cloexec ? " (its own, O_CLOEXEC)" : " (inherited)");
        if (!cloexec) {
            inherited = g_list_append(inherited, l->data);
        }
    }
    g_assert_cmpuint(g_list_length(inherited), ==, 4);
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(GPOINTER_TO_INT(g_list_nth_data(inherited, (guint)i)), ==, i);
    }
    g_list_free(inherited);
}

static void
test_no_fd_leak(IohtDir *fx, G_GNUC_UNUSED gconstpointer data)
{
    const char *dir = fx->dir;
    g_autofree char *path = tpath(dir, "leak.save");
    g_autofree char *real = NULL;
    int decoys[3];

    real = realpath(dir, NULL);
    /* Inheritable fds (no O_CLOEXEC), as a careless daemon has: none may reach the child. */
    decoys[0] = open("/dev/null", O_RDONLY);
    decoys[1] = open(path, O_WRONLY | O_CREAT, 0600);
    decoys[2] = dup(2);
    for (int restore = 0; restore <= 1; restore++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohWrap) wrap = NULL;
        g_autofree char *file_link = NULL;
        g_autofree char *pipe_link = NULL;
        g_autofree char *want = g_build_filename(real, "leak.save", NULL);
        int file_no = restore ? 0 : 1;
        GPid pid;
        int fd;

        if (restore) {
            /* More than the pipe holds: the helper blocks writing while we look. */
            ioht_write_random_file(path, 4 * MIB, 5);
        }
        fd = restore ? open_restore(path) : open_save(path);

        wrap = ioh_wrap_new(&fd, path, IOH_WRAP_FADVISE, NULL, &error);
        g_assert_no_error(error);
        pid = ioh_wrap_get_pid(wrap);
        g_assert_cmpint(pid, >, 0);
        wait_helper_copying(wrap, fd, restore);
        /* The helper waits on its pipe: it is alive while we look (and past its exec and
         * its start: it copies already). What it opened itself (its reader thread's
         * eventfd, ...) carries O_CLOEXEC, as every fd of ours does; an fd that crossed
         * the exec cannot. So the fds without O_CLOEXEC are exactly what it inherited. */
        assert_inherited_0_to_3(pid);
        file_link = fd_target(pid, file_no);
        pipe_link = fd_target(pid, 1 - file_no);
        g_test_message("helper %d: fd %d -> %s, fd %d -> %s", (int)pid, file_no, file_link,
                       1 - file_no, pipe_link);
        g_assert_cmpstr(file_link, ==, want);
        g_assert_true(g_str_has_prefix(pipe_link, "pipe:"));
        {
            g_autofree char *l2 = fd_target(pid, 2);
            g_autofree char *l3 = fd_target(pid, 3);
            g_assert_true(g_str_has_prefix(l2, "pipe:"));
            g_assert_true(g_str_has_prefix(l3, "pipe:"));
        }
        /* The caller's end is the other end of the helper's pipe. */
        {
            g_autofree char *mine = g_strdup_printf("/proc/self/fd/%d", fd);
            g_autofree char *mine_link = g_file_read_link(mine, NULL);
            g_assert_cmpstr(mine_link, ==, pipe_link);
        }
        if (restore) {
            g_autofree char *sink = tpath(dir, "sink");
            g_assert_cmpuint(ioht_drain_to_file(fd, sink), ==, 4 * MIB);
        }
        g_assert_true(ioh_wrap_finish(wrap, &error));
        g_assert_no_error(error);
    }
    for (guint i = 0; i < G_N_ELEMENTS(decoys); i++) {
        close(decoys[i]);
    }
}

int
main(int argc, char **argv)
{
    static const IohWrapFlags modes[] = { IOH_WRAP_DIRECT, IOH_WRAP_FADVISE,
                                          IOH_WRAP_POLLABLE };
    static const char *mode_names[] = { "direct", "fadvise", "pollable" };
    static const guint64 sizes[] = { 0, 4097, 3 * MIB + 1, 64 * MIB };
    static const char *size_names[] = { "0", "4097", "3M+1", "64M" };
    static RoundTrip rts[G_N_ELEMENTS(modes) * G_N_ELEMENTS(sizes)];

    libwrap_test_init(&argc, &argv);
    for (guint m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
            RoundTrip *rt = &rts[m * G_N_ELEMENTS(sizes) + s];
            g_autofree char *name = g_strdup_printf("/libwrap/roundtrip/%s/%s",
                                                    mode_names[m], size_names[s]);
            rt->flags = modes[m];
            rt->size = sizes[s];
            ioht_dir_add(name, rt, test_roundtrip);
        }
        {
            g_autofree char *name = g_strdup_printf("/libwrap/roundtrip/%s/offset-length",
                                                    mode_names[m]);
            ioht_dir_add(name, GUINT_TO_POINTER(modes[m]), test_offset_length);
        }
    }
    ioht_dir_add("/libwrap/pipe/size-1M", NULL, test_pipe_size);
    ioht_dir_add("/libwrap/pipe/no-fd-leak", NULL, test_no_fd_leak);
    return g_test_run();
}
