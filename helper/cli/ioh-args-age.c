/* ioh-args-age.c - the age options of the command line (ioh-args-age.h) */
#include "ioh-args-age.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-error.h"

/* What every age image starts with (age-encryption.org/v1, the header's first line). */
#define AGE_MAGIC "age-encryption.org/"

static IohAgeKeys *
keys_of(IohArgs *a)
{
    if (!a->age) {
        a->age = ioh_age_keys_new();
    }
    return a->age;
}

gboolean
ioh_args_age_option(IohArgs *a, const char *name, const char *val, GError **error)
{
    g_autoptr(GError) err = NULL;

    if (!*val) {
        return ioh_args_usage_error(error, "--%s: empty value", name);
    }
    if (g_str_equal(name, "identity")) {
        g_free(a->identity_file);
        a->identity_file = g_strdup(val);
        a->decrypt = TRUE;
        return TRUE;
    }
    a->encrypt = TRUE;
    if (g_str_equal(name, "recipients-file")) {
        if (!a->recipients_files) {
            a->recipients_files = g_ptr_array_new_with_free_func(g_free);
        }
        g_ptr_array_add(a->recipients_files, g_strdup(val));
        return TRUE;
    }
    if (!ioh_age_keys_add_recipient(keys_of(a), val, "--recipient", &err)) {
        return ioh_args_usage_error(error, "%s", err->message);
    }
    return TRUE;
}

/* The keys the options named, read. */
static gboolean
load_keys(IohArgs *a, GError **error)
{
    if (a->identity_file && a->identity_fd >= 0) {
        return ioh_args_usage_error(error, "--identity and --identity-fd cannot be "
                                    "combined");
    }
    for (guint i = 0; a->recipients_files && i < a->recipients_files->len; i++) {
        if (!ioh_age_keys_read_recipients(keys_of(a), a->recipients_files->pdata[i],
                                          error)) {
            return FALSE;
        }
    }
    if (a->identity_file) {
        return ioh_age_keys_read_identity_file(keys_of(a), a->identity_file, error);
    }
    if (a->identity_fd >= 0) {
        gboolean ok = ioh_age_keys_read_identity_fd(keys_of(a), a->identity_fd, error);

        a->identity_fd = -1;    /* read and closed */
        return ok;
    }
    return TRUE;
}

/* The first bytes of @fd at @offset, read aligned (the fd may have O_DIRECT): their
 * number (0 when unreadable: the copy itself reports that). */
static gsize
peek(int fd, guint64 offset, char *ret, gsize len)
{
    const gsize block = 4096;
    guint64 start = offset / block * block;
    gsize skip = (gsize)(offset - start);
    gssize n;
    void *buf = NULL;

    if (posix_memalign(&buf, block, 2 * block) != 0) {
        return 0;
    }
    n = pread(fd, buf, 2 * block, (off_t)start);
    n = n > (gssize)skip ? MIN(n - (gssize)skip, (gssize)len) : 0;
    memcpy(ret, (char *)buf + skip, (gsize)n);
    free(buf);
    return (gsize)n;
}

static gboolean
is_storage(int fd)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

gboolean
ioh_args_age_check_plain(const IohArgs *a, int fd, const char *name, guint64 offset,
                         int dst_fd, GError **error)
{
    char head[sizeof(AGE_MAGIC) - 1];

    if (a->decrypt || !is_storage(fd) || dst_fd < 0 || is_storage(dst_fd)) {
        return TRUE;
    }
    if (peek(fd, offset, head, sizeof(head)) == sizeof(head) &&
        memcmp(head, AGE_MAGIC, sizeof(head)) == 0) {
        return ioh_error_set(error, EINVAL, "read", name, "an age-encrypted image: restore "
                             "it with --identity=FILE");
    }
    return TRUE;
}

/* A helper that encrypts or decrypts: no core dump, and no other process of its uid may
 * ptrace it or read its memory (/proc/PID/mem), as ssh-agent does. The identity's pages
 * are out of core dumps already (ioh-secmem.h), but the payload key lives in libcrypto's
 * cipher contexts on its heap, and a process of the helper's uid (QEMU, often) could
 * otherwise read the identity itself. Before any key is read. */
static void
keys_undumpable(const IohArgs *a)
{
    if (a->encrypt || a->decrypt || a->identity_fd >= 0) {
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

gboolean
ioh_args_age_load(IohArgs *a, GError **error)
{
    keys_undumpable(a);
    if (!load_keys(a, error)) {
        return FALSE;
    }
    a->copy.age = a->age;
    return TRUE;
}

void
ioh_args_age_clear(IohArgs *a)
{
    g_clear_pointer(&a->age, ioh_age_keys_free);
    g_clear_pointer(&a->recipients_files, g_ptr_array_unref);
    g_clear_pointer(&a->identity_file, g_free);
    a->copy.age = NULL;
}
