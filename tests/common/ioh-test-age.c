/* ioh-test-age.c - age key pairs made by Debian's age-keygen, for the encryption tests */
#include "ioh-test.h"

#include <string.h>
#include <glib/gstdio.h>

gboolean
ioht_skip_unless_age(void)
{
    g_autofree char *age = g_find_program_in_path("age");
    g_autofree char *keygen = g_find_program_in_path("age-keygen");

    if (!age || !keygen) {
        g_test_skip("age or age-keygen is missing (Debian package age)");
        return FALSE;
    }
    return TRUE;
}

IohtAgeKey
ioht_age_key_new(const char *path)
{
    IohtAgeKey k = { .file = g_strdup(path) };
    g_autofree char *q = g_shell_quote(path);
    g_autofree char *cmd = g_strdup_printf("age-keygen -o %s 2>/dev/null && age-keygen -y %s",
                                           q, q);
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    g_autofree char *text = NULL;
    int status;
    char *line;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &k.recipient, NULL, &status, NULL));
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_strstrip(k.recipient);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    line = strstr(text, "AGE-SECRET-KEY-1");
    g_assert_nonnull(line);
    k.secret = g_strndup(line, strcspn(line, "\n"));
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
    return k;
}

void
ioht_age_key_clear(IohtAgeKey *k)
{
    g_clear_pointer(&k->file, g_free);
    g_clear_pointer(&k->recipient, g_free);
    g_clear_pointer(&k->secret, g_free);
}
