/* ioh-conf.c - the host's config file (/etc/iohelper.conf), read as untrusted input */
#include "ioh-conf.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ioh-args-value.h"
#include "ioh-conf-age.h"
#include "ioh-error.h"
#include "ioh-limits.h"
#include "ioh-untrusted.h"

/* The cause in @cause's message, without its "WHAT PATH: " when PATH is @path or its
 * last part (the untrusted read names the file within its directory). */
static const char *
conf_cause(const GError *cause, const char *path)
{
    const char *op = ioh_error_get_operation(cause);
    const char *where = ioh_error_get_path(cause);
    g_autofree char *prefix = NULL;

    if (op && where && *where && g_str_has_suffix(path, where)) {
        prefix = g_strdup_printf("%s %s: ", op, where);
        if (g_str_has_prefix(cause->message, prefix)) {
            return cause->message + strlen(prefix);
        }
    }
    return cause->message;
}

/* A config file the helper cannot use: IOH_ERROR with the file as its path and operation
 * "config" (the helper sends both on its status fd), "config file PATH: CAUSE". */
static gboolean
conf_error(GError **error, const char *path, const GError *cause)
{
    int errsv = ioh_error_get_errno(cause);
    g_autofree char *msg = g_strdup_printf("config file %s: %s", path,
                                           conf_cause(cause, path));

    g_propagate_error(error, ioh_error_new_literal(errsv ? errsv : EINVAL, "config", path,
                                                   msg));
    return FALSE;
}

/* The most a config file may hold: a few lines are expected. */
#define CONF_MAX (64 * 1024)

/* The line number of the first line of @text the key-file parser refuses (neither
 * blank, a comment, a [group] nor key=value), 0 if none: what a parse error names in
 * place of the line itself, which GKeyFile quotes (the file may be one of root's
 * reached by mistake: its first line a password hash). */
static guint
conf_bad_line(const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i] + strspn(lines[i], " \t");

        if (*l && *l != '#' && *l != '[' && !strchr(l, '=')) {
            return i + 1;
        }
    }
    return 0;
}

/* @text of @path into @kf: a usage error without the file's words. */
static gboolean
conf_parse(const char *path, const char *text, gsize len, GKeyFile *kf, GError **error)
{
    g_autoptr(GError) err = NULL;
    guint line;

    if (g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, NULL)) {
        return TRUE;
    }
    line = conf_bad_line(text);
    if (line > 0) {
        err = g_error_new(G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                          "line %u is neither [group], key=value nor a comment", line);
    } else {
        err = g_error_new_literal(G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                                  "not a key file of [group] and key=value lines");
    }
    return conf_error(error, path, err);
}

/* Loads the key file @path into @kf, read as an untrusted file (ioh-untrusted.h): a
 * regular file (a FIFO would hang the helper, /dev/zero never end), at most CONF_MAX
 * bytes, owned by root or the caller and writable by no one else, as sudo and sshd
 * check theirs, reached through directories and symbolic links of root's or the
 * caller's only (ioh_untrusted_path_parent(): a user's directory could hold a link to a
 * file of root's). The path may be a symbolic link (an admin's link in /etc, to a file
 * that passes the same checks). *@ret_found FALSE when there is no such file. */
static gboolean
load_conf(const char *path, GKeyFile *kf, gboolean *ret_found, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    int dirfd = ioh_untrusted_path_parent(path, &name, &err);

    if (dirfd >= 0) {
        text = ioh_untrusted_read(dirfd, name, CONF_MAX, IOH_UNTRUSTED_TRUSTED_OWNER, &len,
                                  &err);
        close(dirfd);
    }
    *ret_found = text || !g_error_matches(err, IOH_ERROR, ENOENT);
    if (!text) {
        return !*ret_found || conf_error(error, path, err);
    }
    return conf_parse(path, text, len, kf, error);
}

/* Without --memory-budget: memory-budget in [iohelper] of the config file, if any (libvirt
 * passes no options, so its form reads it too). A missing file or key: no budget. */
static gboolean
read_conf(IohArgs *a, GError **error)
{
    const char *env = g_getenv("IOHELPER_CONF");
    const char *path = env && *env ? env : IOH_CONF_PATH;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *val = NULL;
    gboolean found;
    guint64 v;

    if (a->has_memory_budget && !ioh_conf_age_wanted(a)) {
        return TRUE;
    }
    if (!load_conf(path, kf, &found, error)) {
        return FALSE;
    }
    if (!found) {
        return TRUE;
    }
    if (!ioh_conf_age_apply(kf, path, a, error)) {
        return FALSE;
    }
    if (a->has_memory_budget) {
        return TRUE;
    }
    val = g_key_file_get_string(kf, "iohelper", "memory-budget", NULL);
    if (!val) {
        return TRUE;
    }
    g_strstrip(val);
    if (!ioh_args_parse_bounded("memory-budget", val, 0, IOH_LENGTH_MAX, &v, &err)) {
        return conf_error(error, path, err);
    }
    a->has_memory_budget = TRUE;
    a->memory_budget = v;
    return TRUE;
}

gboolean
ioh_conf_read(IohArgs *args, GError **error)
{
    return read_conf(args, error);
}
