/* test-iohelper-stale-tail.c - the iohelper binary, end to end (real pipes, real files on
 * ext4, O_DIRECT): a shorter image over a longer file leaves no stale tail (/helper/stale-
 * tail/...)
 */
#include "iohelper-util.h"

/* ---- issue 10, case 3: a save into a regular file ends where the stream ends, in every
 * form and mode: no old bytes after the stream (the old image was longer) ---- */

typedef struct {
    const char *mode;     /* "", "--direct", "--fadvise" */
    const char *form;     /* "stdout", "fd", "libvirt", "libvirt-header", "fd-offset" */
} StaleCase;

static void
test_stale_tail(gconstpointer data)
{
    const StaleCase *sc = data;
    g_autofree char *src = wpath("stale-src");
    g_autofree char *img = wpath("stale-img");
    gboolean lv = g_str_has_prefix(sc->form, "libvirt");
    gboolean direct = g_str_equal(sc->mode, "--direct");
    guint64 start = g_str_has_suffix(sc->form, "header") || g_str_has_suffix(sc->form,
                                                                            "offset")
                        ? 4096 : 0;
    const guint64 size = 2 * MiB + 4097;
    const char *opts[] = { lv ? "" : sc->mode,
                           g_str_equal(sc->form, "fd-offset") ? "--offset=4096" : "", NULL };
    g_auto(GStrv) argv = NULL;
    g_autofree char *got = NULL;
    g_autofree char *want = NULL;
    g_autofree char *err = NULL;
    gsize got_len, want_len;
    int fd, rc;

    if (direct && skip_unless_direct()) {
        return;
    }
    ioht_write_random_file(img, 5 * MiB + 904, 41);    /* the old, longer image */
    ioht_write_random_file(src, size, 42);
    fd = open(img, O_WRONLY | O_CLOEXEC | (lv && direct ? O_DIRECT : 0));
    g_assert_cmpint(fd, >=, 0);
    if (g_str_equal(sc->form, "libvirt-header")) {
        g_assert_cmpint(lseek(fd, 4096, SEEK_SET), ==, 4096);
    }
    if (lv) {
        /* libvirt hands the image on a numbered fd: here fd 1, as libvirt_save() does */
        argv = helper_argv(ioht_helper_path(), opts, img, "1");
        rc = run_fed(argv, src, fd, &err);
    } else if (g_str_equal(sc->form, "stdout")) {
        argv = helper_argv(ioht_helper_path(), opts, "-", "-");
        rc = run_fed(argv, src, fd, &err);
    } else {
        argv = helper_argv(ioht_helper_path(), opts, "-", "fd:1");
        rc = run_fed(argv, src, fd, &err);
    }
    close(fd);
    g_assert_cmpint(rc, ==, 0);
    g_assert_cmpuint(file_size(img), ==, start + size);
    g_assert_true(g_file_get_contents(img, &got, &got_len, NULL));
    g_assert_true(g_file_get_contents(src, &want, &want_len, NULL));
    g_assert_cmpmem(got + start, got_len - start, want, want_len);
    g_unlink(src);
    g_unlink(img);
}

static void
add_stale_cases(void)
{
    static const char *const modes[] = { "", "--direct", "--fadvise" };
    static const char *const forms[] = { "stdout", "fd", "fd-offset", "libvirt",
                                         "libvirt-header" };

    for (gsize m = 0; m < G_N_ELEMENTS(modes); m++) {
        for (gsize f = 0; f < G_N_ELEMENTS(forms); f++) {
            StaleCase *sc;
            g_autofree char *path = NULL;
            if (g_str_has_prefix(forms[f], "libvirt") && g_str_equal(modes[m], "--fadvise")) {
                continue;    /* libvirt's form has no --fadvise: the fd's O_DIRECT decides */
            }
            sc = g_new0(StaleCase, 1);
            sc->mode = modes[m];
            sc->form = forms[f];
            path = g_strdup_printf("/helper/stale-tail/%s/%s", *modes[m] ? modes[m] + 2
                                                                          : "buffered",
                                   forms[f]);
            g_test_add_data_func_full(path, sc, test_stale_tail, g_free);
        }
    }
}

int
main(int argc, char **argv)
{
    iohelper_test_init(&argc, &argv);
    add_stale_cases();
    return iohelper_test_run();
}
