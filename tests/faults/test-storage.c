/* test-storage.c - storage faults: full file systems, file size limits, and EIO, short
 * writes, failing fdatasync/close/sync_file_range injected by the fault shim at the Nth
 * call on the image. Every run ends in a non-zero exit and one line on stderr, or in
 * byte-exact data after an fdatasync that succeeded. */
#include "faults-util.h"
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define MiB (1024 * 1024)

typedef struct {
    const char *name;
    const char *opt;    /* NULL: buffered */
} Mode;

static const Mode modes[] = {
    { "buffered", NULL },
    { "direct", "--direct" },
    { "fadvise", "--fadvise" },
};

static const char *const *
mode_opts(const Mode *m, const char *extra)
{
    static const char *opts[4];
    int i = 0;

    if (m->opt) {
        opts[i++] = m->opt;
    }
    if (extra) {
        opts[i++] = extra;
    }
    opts[i] = NULL;
    return opts;
}

/* A run that exits 0 must have delivered every byte. */
static void
assert_exact_if_ok(const FtResult *r, const char *a, const char *b)
{
    if (r->code == 0 && !ioht_files_equal(a, b)) {
        ft_total_data_loss++;
        g_test_fail_printf("exit 0 but %s differs from %s", b, a);
    }
}

static void
assert_failed_with(const FtResult *r, const char *needle)
{
    g_assert_cmpint(r->code, ==, 1);
    g_assert_true(WIFEXITED(r->status));
    g_assert_true(ft_one_line(r->err));
    if (!strstr(r->err, needle)) {
        g_test_fail_printf("stderr '%s' does not say '%s'", r->err, needle);
    }
}

/* ---- success is synced: the trace of the image fd ends in a good fdatasync ---- */

static void
test_success_synced(gconstpointer data)
{
    const Mode *m = data;
    g_autofree char *src = ft_make_source("src", 8 * MiB + 123, 1);
    g_autofree char *dst = g_build_filename(ft_workdir(), "img", NULL);
    g_autofree char *tr = g_build_filename(ft_workdir(), "trace", NULL);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    FtSpawn how = { .fault = "", .fault_trace = tr };
    FtResult r;
    guint64 written = 0;
    int last_write = -1, sync_line = -1, n = 0;

    ft_save(src, dst, mode_opts(m, NULL), &how, &r, NULL);
    g_assert_cmpint(r.code, ==, 0);
    assert_exact_if_ok(&r, src, dst);
    g_assert_true(g_file_get_contents(tr, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (; lines[n]; n++) {
        const char *ret = strstr(lines[n], " ret=");
        if (!ret) {
            continue;
        }
        if (g_str_has_prefix(lines[n], "write ") || g_str_has_prefix(lines[n], "pwrite ") ||
            g_str_has_prefix(lines[n], "writev ") || g_str_has_prefix(lines[n], "splice ")) {
            gint64 v = g_ascii_strtoll(ret + 5, NULL, 10);
            g_assert_cmpint(v, >=, 0);
            written += (guint64)v;
            last_write = n;
        }
        if (g_str_has_prefix(lines[n], "fdatasync ") || g_str_has_prefix(lines[n], "fsync ")) {
            g_assert_cmpstr(ret, ==, " ret=0");
            sync_line = n;
        }
    }
    g_test_message("%d calls on the image traced, %" G_GUINT64_FORMAT " bytes written",
                   n - 1, written);
    g_assert_cmpuint(written, ==, 8 * MiB + 123);
    g_assert_cmpint(sync_line, >, last_write);
    ft_result_clear(&r);
    g_unlink(tr);
    g_unlink(src);
    g_unlink(dst);
}

/* ---- errors injected at the Nth call ---- */

typedef struct {
    const Mode *mode;
    const char *fault;       /* IOH_FAULT */
    const char *needle;      /* in stderr; NULL: the copy must succeed, byte-exact */
    gboolean restore;
    gboolean libvirt;        /* save through "PATH FD" instead of "- PATH" */
    guint64 size;
    gboolean compressed;     /* the image holds zstd frames (--compress, --decompress) */
    gboolean mixed;          /* a mixed stream (zstd's frames and raw ones), not random */
} Inject;

/* A compressed image @img decodes (zstd -dc) to @src exactly. */
static void
assert_decodes_to(const char *img, const char *src)
{
    g_autofree char *out = g_strconcat(img, ".out", NULL);
    g_autofree char *cmd = g_strdup_printf("sh -c 'zstd -q -dc %s > %s'", img, out);
    int status;

    g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL));
    g_assert_cmpint(status, ==, 0);
    g_assert_cmpuint(ft_file_size(out), ==, ft_file_size(src));
    g_assert_true(ft_prefix_equal(src, out, ft_file_size(src)));
    g_unlink(out);
}

static void
test_inject(gconstpointer data)
{
    const Inject *t = data;
    g_autofree char *src = t->mixed ? ft_make_mixed_source("src", t->size, 2)
                                    : ft_make_source("src", t->size, 2);
    g_autofree char *dst = g_build_filename(ft_workdir(), "img", NULL);
    g_autofree char *out = g_build_filename(ft_workdir(), "out", NULL);
    g_autofree char *needle = NULL;
    FtSpawn how = { .fault = t->fault };
    FtResult r;
    guint n;

    if (t->restore) {
        /* The image to restore is made without faults first. */
        ft_save(src, dst, t->compressed ? mode_opts(&modes[0], "--compress=zstd") : NULL, NULL,
                &r, NULL);
        g_assert_cmpint(r.code, ==, 0);
        ft_result_clear(&r);
        ft_restore(dst, out, mode_opts(t->mode, t->compressed ? "--decompress" : NULL), &how,
                   &r, NULL);
    } else if (t->libvirt) {
        const char *args[] = { dst, "3", t->mode->opt, NULL };
        int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
        int fd = open(dst, flags | (t->mode->opt && strstr(t->mode->opt, "direct") ?
                                    O_DIRECT : 0), 0600);
        int target = 3;
        int p[2];
        FtChild c;
        FtFeed *f;

        g_assert_cmpint(fd, >=, 0);
        /* libvirt's form takes O_DIRECT from the fd; --fadvise is still an option. */
        if (t->mode->opt && strstr(t->mode->opt, "direct")) {
            args[2] = NULL;
        }
        how.args = args;
        how.fault_path = dst;
        how.extra_fds = &fd;
        how.extra_targets = &target;
        how.n_extra = 1;
        ft_pipe(p);
        how.in_fd = p[0];
        how.out_fd = -1;
        c = ft_spawn(&how);
        close(p[0]);
        close(fd);
        f = ft_feed_start(p[1], src, G_MAXUINT64, 0, 0, FALSE);
        ft_wait(&c, &r);
        ft_feed_join(f);
    } else {
        ft_save(src, dst, mode_opts(t->mode, t->compressed ? "--compress=zstd" : NULL), &how,
                &r, NULL);
    }
    n = ft_faults_logged();
    /* A rule that never fired would prove nothing. */
    g_assert_cmpuint(n, >, 0);
    ft_count_faults(n);
    if (t->needle) {
        needle = g_strdup_printf(t->needle, t->restore ? dst : dst);
        assert_failed_with(&r, needle);
    } else {
        g_assert_cmpint(r.code, ==, 0);
        g_assert_cmpstr(r.err, ==, "");
    }
    if (t->restore || !t->compressed) {
        assert_exact_if_ok(&r, src, t->restore ? out : dst);
    } else if (r.code == 0) {
        assert_decodes_to(dst, src);
    }
    ft_result_clear(&r);
    g_unlink(src);
    g_unlink(dst);
    g_unlink(out);
}

static void
add_inject(const char *name, const char *fault, const char *needle, gboolean restore,
           gboolean libvirt, guint64 size, gboolean fadvise_only)
{
    for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
        Inject *t;
        g_autofree char *path = NULL;

        if (fadvise_only && i != 2) {
            continue;
        }
        t = g_new0(Inject, 1);
        *t = (Inject){ &modes[i], fault, needle, restore, libvirt, size, FALSE, FALSE };
        path = g_strdup_printf("/faults/%s/%s/%s", restore ? "restore" : "save", name,
                               modes[i].name);
        g_test_add_data_func_full(path, t, test_inject, g_free);
    }
}

/* ---- real storage: full file systems ---- */

typedef struct {
    const Mode *mode;
    gboolean ext4;
    const char *where;   /* "start", "middle", "tail" */
    const char *extra;   /* one more option (--compress=zstd), or NULL */
    gboolean mixed;      /* a mixed stream (zstd's frames and raw ones), not random */
} Full;

static void
test_enospc(gconstpointer data)
{
    const Full *t = data;
    const guint64 fs_size = t->ext4 ? 32 * MiB : 8 * MiB;
    g_autofree char *mnt = ft_mount(ft_workdir(), fs_size, t->ext4);
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;
    g_autofree char *filler = NULL;
    guint64 size;
    FtResult r;

    if (!mnt) {
        return;
    }
    if (t->mode->opt && g_str_equal(t->mode->opt, "--direct") &&
        !ioht_dir_supports_direct(mnt)) {
        ft_umount(g_steal_pointer(&mnt));
        g_test_skip("this file system refuses O_DIRECT");
        return;
    }
    dst = g_build_filename(mnt, "img", NULL);
    if (g_str_equal(t->where, "start")) {
        filler = ft_fill(mnt, "filler");
        size = 4 * MiB;
    } else if (g_str_equal(t->where, "middle")) {
        size = 4 * fs_size;
    } else {
        /* tmpfs counts pages and nothing else: fill all but 2 MiB, then send 2 MiB and
         * 100 bytes. The aligned 2 MiB fit; the tail needs one more page. */
        int fd;
        filler = g_build_filename(mnt, "filler", NULL);
        fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(posix_fallocate(fd, 0, (off_t)(fs_size - 2 * MiB)), ==, 0);
        close(fd);
        size = 2 * MiB + 100;
    }
    src = t->mixed ? ft_make_mixed_source("src", size, 3) : ft_make_source("src", size, 3);
    ft_save(src, dst, mode_opts(t->mode, t->extra), NULL, &r, NULL);
    ft_count_faults(1);
    assert_failed_with(&r, "No space left on device");
    if (g_str_equal(t->where, "tail")) {
        /* The aligned part went down; only the tail failed. */
        g_test_message("image holds %" G_GUINT64_FORMAT " bytes", ft_file_size(dst));
        g_assert_cmpuint(ft_file_size(dst), ==, 2 * MiB);
    }
    ft_result_clear(&r);
    g_unlink(src);
    g_unlink(dst);
    if (filler) {
        g_unlink(filler);
    }
    ft_umount(g_steal_pointer(&mnt));
}

/* ---- EIO mid-frame: a compressed save, a compressed restore ---- */

/* The fault shim fails the write (save) or read (restore) that reaches 3 MiB of the image,
 * inside a zstd frame (random data: raw frames, so the image is as large as the stream):
 * the same guarantees as raw, exit 1 and one line naming the image. */
static void
add_eio_compressed(const Mode *m)
{
    g_autofree char *ps = g_strdup_printf("/faults/save/write-EIO-mid-frame-compressed/%s",
                                          m->name);
    g_autofree char *pr = g_strdup_printf("/faults/restore/read-EIO-mid-frame-compressed/%s",
                                          m->name);
    Inject *t = g_new0(Inject, 1);

    *t = (Inject){ m, "write:@3M:EIO", "write %s: Input/output error", FALSE, FALSE,
                   16 * MiB, TRUE, FALSE };
    g_test_add_data_func_full(ps, t, test_inject, g_free);
    t = g_new0(Inject, 1);
    *t = (Inject){ m, "read:@3M:EIO", "read %s: Input/output error", TRUE, FALSE,
                   16 * MiB, TRUE, FALSE };
    g_test_add_data_func_full(pr, t, test_inject, g_free);
    /* and a mixed stream: the fault lands in libzstd's frames too (16 MiB: ~6 MiB stored) */
    g_free(ps), g_free(pr);
    ps = g_strdup_printf("/faults/save/write-EIO-mid-frame-compressed-mixed/%s", m->name);
    pr = g_strdup_printf("/faults/restore/read-EIO-mid-frame-compressed-mixed/%s", m->name);
    t = g_new0(Inject, 1);
    *t = (Inject){ m, "write:@3M:EIO", "write %s: Input/output error", FALSE, FALSE,
                   16 * MiB, TRUE, TRUE };
    g_test_add_data_func_full(ps, t, test_inject, g_free);
    t = g_new0(Inject, 1);
    *t = (Inject){ m, "read:@3M:EIO", "read %s: Input/output error", TRUE, FALSE,
                   16 * MiB, TRUE, TRUE };
    g_test_add_data_func_full(pr, t, test_inject, g_free);
    /* short writes: raw frames go to a buffered sink as pieces of one writev, which the
     * shim shortens (and then to O_DIRECT from the aligned output): the rest must follow */
    g_free(ps);
    ps = g_strdup_printf("/faults/save/write-short-every-compressed/%s", m->name);
    t = g_new0(Inject, 1);
    *t = (Inject){ m, "write:every:short", NULL, FALSE, FALSE, 8 * MiB + 4097, TRUE, FALSE };
    g_test_add_data_func_full(ps, t, test_inject, g_free);
    g_free(ps);
    ps = g_strdup_printf("/faults/save/write-short-every-compressed-mixed/%s", m->name);
    t = g_new0(Inject, 1);
    *t = (Inject){ m, "write:every:short", NULL, FALSE, FALSE, 8 * MiB + 4097, TRUE, TRUE };
    g_test_add_data_func_full(ps, t, test_inject, g_free);
}

/* ---- EFBIG: the process's file size limit (SIGXFSZ must not kill it silently) ---- */

static void
test_efbig(gconstpointer data)
{
    const Mode *m = data;
    g_autofree char *src = ft_make_source("src", 8 * MiB, 4);
    g_autofree char *dst = g_build_filename(ft_workdir(), "img", NULL);
    FtSpawn how = { .fsize_limit = 3 * MiB + 5 };
    FtResult r;

    ft_save(src, dst, mode_opts(m, NULL), &how, &r, NULL);
    ft_count_faults(1);
    if (WIFSIGNALED(r.status)) {
        g_test_fail_printf("iohelper died of signal %d (%s) instead of reporting EFBIG",
                           WTERMSIG(r.status), g_strsignal(WTERMSIG(r.status)));
    } else {
        assert_failed_with(&r, "File too large");
    }
    ft_result_clear(&r);
    g_unlink(src);
    g_unlink(dst);
}

/* ---- the shim must see every I/O call the helper makes ---- */

/* The helper and the core library it loads (helper/meson.build: libiohcore-*.so), whose
 * I/O calls are the helper's too, as paths for nm. */
static char *
helper_objects(void)
{
    g_autofree char *cmd = g_strdup_printf("ldd %s", ioht_helper_path());
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;
    GString *objs = g_string_new(ioht_helper_path());

    if (g_spawn_command_line_sync(cmd, &out, NULL, NULL, NULL)) {
        lines = g_strsplit(out, "\n", -1);
        for (char **l = lines; *l; l++) {
            g_auto(GStrv) f = g_strsplit_set(g_strstrip(*l), " ", -1);
            if (g_strv_length(f) >= 3 && strstr(f[0], "libiohcore-") && f[2][0] == '/') {
                g_string_append_printf(objs, " %s", f[2]);
            }
        }
    }
    return g_string_free(objs, FALSE);
}

static void
test_shim_covers_helper(void)
{
    /* Calls that move or sync data on an fd, or submit I/O some other way. */
    static const char *const io[] = {
        "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev",
        "preadv", "preadv64", "pwritev", "pwritev64", "preadv2", "preadv64v2", "pwritev2",
        "pwritev64v2", "splice", "vmsplice", "tee", "copy_file_range", "sendfile",
        "sendfile64", "fdatasync", "fsync", "sync_file_range", "fallocate", "fallocate64",
        "ftruncate", "ftruncate64", "close", "syncfs", "io_submit", "io_uring_submit",
        "io_uring_submit_and_wait", "io_uring_submit_and_wait_timeout",
        "io_uring_queue_init_params", "io_uring_enter", "syscall", "aio_write", "aio_read",
        "fwrite", "fflush", "fclose", "mmap", "mmap64", "msync",
    };
    /* stdio on stderr/stdout only (messages), never on the image. */
    static const char *const not_image[] = { "fwrite", "fflush", "fclose" };
    g_autofree char *objs = helper_objects();
    g_autofree char *cmd = g_strdup_printf("nm -D --undefined-only %s", objs);
    g_autofree char *shim_cmd = g_strdup_printf("nm -D --defined-only %s", FAULT_SHIM_PATH);
    g_autofree char *out = NULL;
    g_autofree char *shim = NULL;
    g_auto(GStrv) lines = NULL;
    int status = 0;
    guint used = 0;

    if (!g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL) || status != 0 ||
        !g_spawn_command_line_sync(shim_cmd, &shim, NULL, &status, NULL) || status != 0) {
        g_test_skip("nm (binutils) is not installed");
        return;
    }
    lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l; l++) {
        g_auto(GStrv) f = g_strsplit_set(g_strstrip(*l), " @", -1);
        const char *sym = f[0] && f[1] ? f[1] : NULL;
        gboolean is_io = FALSE, wrapped, exempt = FALSE;
        g_autofree char *needle = NULL;
        if (!sym) {
            continue;
        }
        for (gsize i = 0; i < G_N_ELEMENTS(io); i++) {
            is_io |= g_str_equal(sym, io[i]);
        }
        if (!is_io) {
            continue;
        }
        for (gsize i = 0; i < G_N_ELEMENTS(not_image); i++) {
            exempt |= g_str_equal(sym, not_image[i]);
        }
        needle = g_strdup_printf(" T %s\n", sym);
        wrapped = strstr(shim, needle) != NULL;
        g_test_message("helper calls %s: %s", sym,
                       wrapped ? "wrapped by the shim" : exempt ? "stdio, not the image"
                                                           : "NOT WRAPPED");
        used++;
        if (!wrapped && !exempt) {
            g_test_fail_printf("the helper calls %s, which fault-shim.c does not wrap: "
                               "faults there would go untested", sym);
        }
    }
    g_assert_cmpuint(used, >, 3);
}

/* Full file systems (ENOSPC at the start, in the middle, at the tail) and RLIMIT_FSIZE,
 * in each mode. */
static void
add_full_cases(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
        static const char *const wheres[] = { "start", "middle", "tail" };
        for (int fs = 0; fs < 2; fs++) {
            for (gsize w = 0; w < G_N_ELEMENTS(wheres); w++) {
                Full *t;
                g_autofree char *p = NULL;
                /* The tail case is O_DIRECT's and needs tmpfs's exact accounting. */
                if (g_str_equal(wheres[w], "tail") && (fs == 1 || i != 1)) {
                    continue;
                }
                t = g_new0(Full, 1);
                *t = (Full){ &modes[i], fs == 1, wheres[w], NULL, FALSE };
                p = g_strdup_printf("/faults/save/enospc-%s/%s/%s", wheres[w],
                                    fs ? "ext4" : "tmpfs", modes[i].name);
                g_test_add_data_func_full(p, t, test_enospc, g_free);
                if (fs == 0 && !g_str_equal(wheres[w], "tail")) {
                    /* compressed: the disk fills mid-frame (random data: raw frames) */
                    g_autofree char *pc = g_strdup_printf(
                        "/faults/save/enospc-%s-compressed/tmpfs/%s", wheres[w],
                        modes[i].name);
                    t = g_new0(Full, 1);
                    *t = (Full){ &modes[i], FALSE, wheres[w], "--compress=zstd", FALSE };
                    g_test_add_data_func_full(pc, t, test_enospc, g_free);
                }
                if (fs == 0 && g_str_equal(wheres[w], "middle")) {
                    /* mixed: the disk fills in libzstd's frames or raw ones (32 MiB of
                     * stream, ~11 MiB stored, on 8 MiB) */
                    g_autofree char *pm = g_strdup_printf(
                        "/faults/save/enospc-middle-compressed-mixed/tmpfs/%s",
                        modes[i].name);
                    t = g_new0(Full, 1);
                    *t = (Full){ &modes[i], FALSE, wheres[w], "--compress=zstd", TRUE };
                    g_test_add_data_func_full(pm, t, test_enospc, g_free);
                }
            }
        }
        {
            g_autofree char *p = g_strdup_printf("/faults/save/efbig-rlimit/%s",
                                                 modes[i].name);
            g_test_add_data_func(p, &modes[i], test_efbig);
        }
        add_eio_compressed(&modes[i]);
    }
}

/* ---- splice (ioh-strategy-splice.c): a buffered or --fadvise save or restore with no
 * filter moves the pipe's pages with splice(2); the shim's rules on splice reach it.
 * A rule that never fires fails the test (test_inject), so each case also proves the
 * splice path was taken. ---- */
static void
add_splice_inject(const char *name, const char *fault, const char *needle, gboolean restore,
                  guint64 size)
{
    /* buffered, fadvise; and a --direct restore into a pipe (ioh-strategy-parallel-splice.c) */
    static const gsize splice_modes[] = { 0, 2, 1 };

    for (gsize i = 0; i < G_N_ELEMENTS(splice_modes) - (restore ? 0 : 1); i++) {
        const Mode *m = &modes[splice_modes[i]];
        Inject *t = g_new0(Inject, 1);
        g_autofree char *path = g_strdup_printf("/faults/%s/splice-%s/%s",
                                                restore ? "restore" : "save", name, m->name);

        *t = (Inject){ m, fault, needle, restore, FALSE, size, FALSE, FALSE };
        g_test_add_data_func_full(path, t, test_inject, g_free);
    }
}

static void
add_splice_cases(void)
{
    add_splice_inject("EIO-first", "splice:1:EIO", "write %s: Input/output error", FALSE,
                      4 * MiB);
    add_splice_inject("EIO-at-5M", "splice:@5M:EIO", "write %s: Input/output error", FALSE,
                      16 * MiB);
    add_splice_inject("ENOSPC-at-3M", "splice:@3M:ENOSPC", "write %s: No space left on device",
                      FALSE, 16 * MiB);
    add_splice_inject("EDQUOT-3rd", "splice:3:EDQUOT", "write %s: Disk quota exceeded", FALSE,
                      8 * MiB);
    add_splice_inject("short-every", "splice:every:short", NULL, FALSE, 8 * MiB + 4097);
    add_splice_inject("EINTR-storm", "splice:%2:EINTR", NULL, FALSE, 8 * MiB + 1);
    add_splice_inject("EAGAIN-storm", "splice:%3:EAGAIN", NULL, FALSE, 8 * MiB + 5);
    add_splice_inject("short-EINTR-EAGAIN", "splice:%2:short,splice:%3:EINTR,splice:%5:EAGAIN",
                      NULL, FALSE, 12 * MiB + 4095);
    add_splice_inject("EIO-first", "splice:1:EIO", "read %s: Input/output error", TRUE,
                      4 * MiB);
    add_splice_inject("EIO-at-3M", "splice:@3M:EIO", "read %s: Input/output error", TRUE,
                      16 * MiB);
    add_splice_inject("ENOMEM-2nd", "splice:2:ENOMEM", "read %s: Cannot allocate memory", TRUE,
                      8 * MiB);
    add_splice_inject("short-every", "splice:every:short", NULL, TRUE, 8 * MiB + 4097);
    add_splice_inject("EINTR-storm", "splice:%2:EINTR", NULL, TRUE, 8 * MiB + 3);
    add_splice_inject("EAGAIN-storm", "splice:%3:EAGAIN", NULL, TRUE, 8 * MiB + 5);
    /* a kernel that refuses to splice (EINVAL) mid-stream: read/write take over */
    add_splice_inject("EINVAL-falls-back", "splice:3:EINVAL", NULL, FALSE, 8 * MiB + 11);
    add_splice_inject("EINVAL-falls-back", "splice:3:EINVAL", NULL, TRUE, 8 * MiB + 11);
    /* posix_fadvise is advice: its failure (drop-behind) costs no byte */
    add_inject("splice-fadvise-EIO-every", "fadvise:every:EIO", NULL, TRUE, FALSE,
               24 * MiB + 9, TRUE);
    /* a buffered spliced restore asks for sequential read-ahead (advice: its failure costs
     * no byte; the rule must fire, so the call is made) */
    {
        Inject *t = g_new0(Inject, 1);

        *t = (Inject){ &modes[0], "fadvise:1:EIO", NULL, TRUE, FALSE, 8 * MiB + 7, FALSE,
                       FALSE };
        g_test_add_data_func_full("/faults/restore/splice-fadvise-EIO-first/buffered", t,
                                  test_inject, g_free);
    }
}

int
main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);

    g_test_add_func("/faults/shim/covers-every-io-call-of-the-helper", test_shim_covers_helper);
    for (gsize i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree char *p = g_strdup_printf("/faults/save/success-is-synced/%s",
                                             modes[i].name);
        g_test_add_data_func(p, &modes[i], test_success_synced);
    }
    /* save: errors at the first, a middle and a late write */
    /* The engine splits and coalesces its I/O as its ring and timing say, so the faults
     * are placed by file offset ("@5M": the write that reaches 5 MiB), and by call
     * number only where any engine makes that call (the first write). */
    add_inject("write-EIO-first", "write:1:EIO", "write %s: Input/output error", FALSE,
               FALSE, 16 * MiB, FALSE);
    add_inject("write-EIO-at-5M", "write:@5M:EIO", "write %s: Input/output error", FALSE,
               FALSE, 16 * MiB, FALSE);
    add_inject("write-ENOSPC-at-3M", "write:@3M:ENOSPC", "write %s: No space left on device",
               FALSE, FALSE, 16 * MiB, FALSE);
    add_inject("write-EDQUOT-at-15M", "write:@15M:EDQUOT", "write %s: Disk quota exceeded",
               FALSE, FALSE, 16 * MiB, FALSE);
    add_inject("write-EIO-tail", "write:unaligned:EIO", "write %s: Input/output error", FALSE,
               FALSE, 8 * MiB + 777, FALSE);
    add_inject("write-short-every", "write:every:short", NULL, FALSE, FALSE, 8 * MiB + 4097,
               FALSE);
    add_inject("write-short-then-EIO", "write:@6M:EIO,write:%2:short",
               "write %s: Input/output error", FALSE, FALSE, 16 * MiB, FALSE);
    add_inject("write-EINTR-storm", "write:%2:EINTR", NULL, FALSE, FALSE, 8 * MiB + 1, FALSE);
    add_inject("fdatasync-EIO", "fdatasync:1:EIO", "fdatasync %s: Input/output error", FALSE,
               FALSE, 4 * MiB + 5, FALSE);
    add_inject("fdatasync-ENOSPC", "fdatasync:1:ENOSPC",
               "fdatasync %s: No space left on device", FALSE, FALSE, 4 * MiB, FALSE);
    add_inject("close-EIO", "close:1:EIO", "close %s: Input/output error", FALSE, FALSE,
               4 * MiB + 5, FALSE);
    add_inject("libvirt-close-EIO", "close:1:EIO", "close %s: Input/output error", FALSE,
               TRUE, 4 * MiB + 5, FALSE);
    add_inject("libvirt-write-EIO-at-3M", "write:@3M:EIO", "write %s: Input/output error", FALSE,
               TRUE, 16 * MiB, FALSE);
    add_inject("libvirt-fdatasync-EIO", "fdatasync:1:EIO", "fdatasync %s: Input/output error",
               FALSE, TRUE, 4 * MiB, FALSE);
    add_inject("sync_file_range-EIO", "sync_file_range:2:EIO",
               "sync_file_range %s: Input/output error", FALSE, FALSE, 40 * MiB, TRUE);
    /* restore: the image is read back with faults */
    add_inject("read-EIO-first", "read:1:EIO", "read %s: Input/output error", TRUE, FALSE,
               4 * MiB, FALSE);
    add_inject("read-EIO-at-3M", "read:@3M:EIO", "read %s: Input/output error", TRUE, FALSE,
               16 * MiB, FALSE);
    add_inject("read-short-every", "read:every:short", NULL, TRUE, FALSE, 8 * MiB + 4097,
               FALSE);
    add_inject("read-EINTR-storm", "read:%2:EINTR", NULL, TRUE, FALSE, 8 * MiB + 3, FALSE);

    add_full_cases();
    add_splice_cases();
    ret = g_test_run();
    ft_report();
    ft_cleanup();
    return ret;
}
