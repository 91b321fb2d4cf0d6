/* ioh-test-nobody.c - running the helper as another user (nobody), from wherever the
 * tree is: a build under a folder only its owner enters (a clone in /root, a home of
 * mode 0700) is out of nobody's reach, so the helper is copied to a new folder of
 * mode 0755 outside the tree, and tried there before a test relies on it. */
#include "ioh-test.h"

#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

void
ioht_drop_to_nobody(gpointer data)
{
    (void)data;
    if (setgroups(0, NULL) < 0 || setgid(IOHT_NOBODY) < 0 || setuid(IOHT_NOBODY) < 0) {
        _exit(126);
    }
}

/* Copies @from to @to, mode 0755. */
static gboolean
copy_file(const char *from, const char *to, char **ret_why)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *bytes = NULL;
    gsize len = 0;

    if (!g_file_get_contents(from, &bytes, &len, &error) ||
        !g_file_set_contents(to, bytes, (gssize)len, &error)) {
        *ret_why = g_strdup_printf("cannot copy %s: %s", from, error->message);
        return FALSE;
    }
    if (chmod(to, 0755) < 0) {
        *ret_why = g_strdup_printf("chmod %s: %s", to, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

/* Copies the helper into @dir as "iohelper", with the private core beside it (the build
 * tree's helper finds libiohcore-*.so in its own folder: RUNPATH $ORIGIN; an installed
 * one has none beside it and finds its own). */
static gboolean
copy_helper(const char *dir, char **ret_path, char **ret_why)
{
    g_autofree char *path = g_build_filename(dir, "iohelper", NULL);
    g_autofree char *from_dir = g_path_get_dirname(ioht_helper_path());
    g_autoptr(GDir) d = g_dir_open(from_dir, 0, NULL);
    const char *name;

    if (!copy_file(ioht_helper_path(), path, ret_why)) {
        return FALSE;
    }
    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *from = g_build_filename(from_dir, name, NULL);
        g_autofree char *to = g_build_filename(dir, name, NULL);
        if (g_str_has_prefix(name, "libiohcore-") && g_str_has_suffix(name, ".so") &&
            !copy_file(from, to, ret_why)) {
            return FALSE;
        }
    }
    *ret_path = g_steal_pointer(&path);
    return TRUE;
}

/* The copy runs as nobody: `iohelper --version` exits 0 (it finds its shared libraries,
 * its folder can be entered, its file system allows exec). */
static gboolean
nobody_runs(const char *helper, char **ret_why)
{
    const char *argv[] = { helper, "--version", NULL };
    IohtSpawn s = { .argv = argv, .in_fd = -1, .out_fd = -1, .setup = ioht_drop_to_nobody };
    g_autoptr(GError) error = NULL;
    g_autofree char *err = NULL;
    int status;

    if (!ioht_try_spawn_wait(&s, &status, &err, &error)) {
        *ret_why = g_strdup_printf("cannot start %s as nobody: %s", helper, error->message);
        return FALSE;
    }
    if (ioht_exit_code(status) != 0) {
        *ret_why = g_strdup_printf("%s --version as nobody: exit %d: %s", helper,
                                   ioht_exit_code(status), g_strstrip(err));
        return FALSE;
    }
    return TRUE;
}

gboolean
ioht_nobody_setup(IohtNobody *nb)
{
    g_autofree char *why = NULL;
    g_autofree char *skip_why = NULL;

    memset(nb, 0, sizeof(*nb));
    if (geteuid() != 0) {
        g_test_skip("needs root (runs the helper as nobody)");
        return FALSE;
    }
    nb->dir = g_dir_make_tmp("ioht-nobody-XXXXXX", NULL);
    if (nb->dir) {
        ioht_workdir_adopt(nb->dir);
    }
    if (!nb->dir || chmod(nb->dir, 0755) < 0) {
        why = g_strdup_printf("cannot make a folder for nobody in %s", g_get_tmp_dir());
    } else if (copy_helper(nb->dir, &nb->helper, &why) && nobody_runs(nb->helper, &why)) {
        return TRUE;
    }
    skip_why = g_strdup_printf("nobody cannot run the helper: %s", why);
    g_test_skip(skip_why);
    ioht_nobody_clear(nb);
    return FALSE;
}

void
ioht_nobody_clear(IohtNobody *nb)
{
    if (nb->dir) {
        ioht_workdir_remove(nb->dir);
    }
    g_clear_pointer(&nb->dir, g_free);
    g_clear_pointer(&nb->helper, g_free);
}
