/* ioh-test-sh.c - a shell command line in a test's work directory, as a user types it */
#include "ioh-test.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

/* ioht_sh() inside @slow's throttle when not NULL. */
static int
sh_v(const char *dir, IohtThrottle *slow, char **ret_err, const char *fmt, va_list ap)
{
    g_autofree char *cmd = g_strdup_vprintf(fmt, ap);
    g_autofree char *h = g_shell_quote(ioht_helper_path());
    g_autofree char *w = g_shell_quote(dir);
    g_autofree char *script = NULL;
    g_autofree char *err = NULL;
    g_autoptr(GError) error = NULL;
    const char *argv[] = { "/bin/bash", "-c", NULL, NULL };
    int status;

    script = g_strdup_printf("set -o pipefail; H=%s; W=%s; cd \"$W\"; %s", h, w, cmd);
    argv[2] = script;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT,
                               slow ? ioht_throttle_enter : NULL, slow, NULL, &err, &status,
                               &error));
    g_assert_no_error(error);
    if (ret_err) {
        *ret_err = g_steal_pointer(&err);
    }
    return ioht_exit_code(status);
}

int
ioht_sh(const char *dir, char **ret_err, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = sh_v(dir, NULL, ret_err, fmt, ap);
    va_end(ap);
    return rc;
}

int
ioht_sh_throttled(const char *dir, IohtThrottle *slow, char **ret_err, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = sh_v(dir, slow, ret_err, fmt, ap);
    va_end(ap);
    return rc;
}

gsize
ioht_sh_file_size(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    GStatBuf st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    return (gsize)st.st_size;
}

JsonObject *
ioht_sh_last_json(const char *err, JsonParser *parser)
{
    const char *last = g_strrstr(g_strchomp((char *)err), "\n");

    g_assert_true(json_parser_load_from_data(parser, last ? last + 1 : err, -1, NULL));
    return json_node_get_object(json_parser_get_root(parser));
}
