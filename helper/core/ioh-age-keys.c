/* ioh-age-keys.c - age recipients and identities: parsed, checked, the secrets locked
 * (ioh-age-keys.h) */
#include "ioh-age-keys.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-bech32.h"
#include "ioh-error.h"
#include "ioh-secmem.h"
#include "ioh-untrusted.h"

#define IDENTITIES_BYTES (IOH_AGE_IDENTITIES_MAX * IOH_AGE_KEY_LEN)

IohAgeKeys *
ioh_age_keys_new(void)
{
    IohAgeKeys *k = g_new0(IohAgeKeys, 1);

    k->identities = ioh_secmem_alloc(IDENTITIES_BYTES);
    if (!k->identities) {
        g_error("cannot map %d bytes for keys", IDENTITIES_BYTES);
    }
    return k;
}

void
ioh_age_keys_free(IohAgeKeys *k)
{
    if (!k) {
        return;
    }
    ioh_secmem_free(k->identities, IDENTITIES_BYTES);
    g_free(k);
}

/* The 32 bytes of the Bech32 key @text of human-readable part @hrp into @ret. */
static gboolean
decode_key(const char *text, const char *hrp, guint8 *ret)
{
    char got[32];
    guint8 data[IOH_AGE_KEY_LEN + 1];
    gsize len = 0;
    gboolean ok = ioh_bech32_decode(text, got, sizeof(got), data, sizeof(data), &len) &&
                  g_str_equal(got, hrp) && len == IOH_AGE_KEY_LEN;

    if (ok) {
        memcpy(ret, data, IOH_AGE_KEY_LEN);
    }
    ioh_secmem_wipe(data, sizeof(data));
    return ok;
}

gboolean
ioh_age_keys_add_recipient(IohAgeKeys *k, const char *text, const char *where,
                           GError **error)
{
    if (k->n_recipients == IOH_AGE_RECIPIENTS_MAX) {
        return ioh_error_set(error, E2BIG, NULL, NULL, "%s: more than %d recipients", where,
                             IOH_AGE_RECIPIENTS_MAX);
    }
    /* age's own form: lower case (decode_key would take upper case too) */
    for (const char *p = text; *p; p++) {
        if (g_ascii_isupper(*p)) {
            text = "";
        }
    }
    if (!decode_key(text, "age", k->recipients[k->n_recipients])) {
        return ioh_error_set(error, EINVAL, NULL, NULL, "%s: not an age X25519 recipient "
                             "(age1...)%s", where, g_str_has_prefix(text, "ssh-") ?
                             ": ssh keys are not supported" : "");
    }
    k->n_recipients++;
    return TRUE;
}

/* The lines of @text (@len bytes) that are neither blank nor '#' comments, one by one:
 * @fn(@line, @number, @data) with the line's surrounding white space cut (in place). */
typedef gboolean (*LineFunc)(char *line, guint number, gpointer data, GError **error);

static gboolean
each_line(char *text, gsize len, LineFunc fn, gpointer data, GError **error)
{
    guint number = 0;
    char *p = text, *end = text + len;

    while (p < end) {
        char *nl = memchr(p, '\n', (gsize)(end - p));
        char *line_end = nl ? nl : end;

        number++;
        *line_end = '\0';
        g_strstrip(p);
        if (*p && *p != '#' && !fn(p, number, data, error)) {
            return FALSE;
        }
        p = line_end + 1;
    }
    return TRUE;
}

typedef struct {
    IohAgeKeys *keys;
    const char *name;
    guint added;
} FileCtx;

static gboolean
recipient_line(char *line, guint number, gpointer data, GError **error)
{
    FileCtx *c = data;
    g_autofree char *where = g_strdup_printf("%s line %u", c->name, number);

    c->added++;
    return ioh_age_keys_add_recipient(c->keys, line, where, error);
}

/* Adds the recipients of @text (@len bytes, NULL: unread, @error set) of @file. */
static gboolean
add_recipients_text(IohAgeKeys *k, char *text, gsize len, const char *file, GError **error)
{
    FileCtx c = { k, file, 0 };

    if (!text || !each_line(text, len, recipient_line, &c, error)) {
        return FALSE;
    }
    if (c.added == 0) {
        return ioh_error_set(error, EINVAL, "read", file, "no recipient in the file");
    }
    return TRUE;
}

/* Whether @file, given as a file name, is a secret key pasted in its place: it must not
 * be quoted by a message (open FILE: No such file), a status line or a record. */
static gboolean
refuse_key_as_file(const char *file, const char *option, GError **error)
{
    g_autofree char *lower = g_ascii_strdown(file, -1);

    if (!strstr(lower, "age-secret-key-1")) {
        return FALSE;
    }
    ioh_secmem_wipe(lower, strlen(lower));
    ioh_error_set(error, EINVAL, NULL, NULL, "%s takes a file name, not an age secret key "
                  "(not quoted; it was on the command line, where every local user could "
                  "read it: replace that key)", option);
    return TRUE;
}

gboolean
ioh_age_keys_read_recipients(IohAgeKeys *k, const char *file, GError **error)
{
    gsize len = 0;
    g_autofree char *text = NULL;

    if (refuse_key_as_file(file, "--recipients-file", error)) {
        return FALSE;
    }
    text = ioh_untrusted_read(AT_FDCWD, file, IOH_AGE_KEY_FILE_MAX, 0, &len, error);
    return add_recipients_text(k, text, len, file, error);
}

gboolean
ioh_age_keys_read_host_recipients(IohAgeKeys *k, const char *file, GError **error)
{
    g_autofree char *name = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    int dirfd;

    if (!g_path_is_absolute(file)) {
        return ioh_error_set(error, EINVAL, "read", file, "not an absolute path");
    }
    dirfd = ioh_untrusted_path_parent(file, &name, error);
    if (dirfd < 0) {
        return FALSE;
    }
    text = ioh_untrusted_read(dirfd, name, IOH_AGE_KEY_FILE_MAX,
                              IOH_UNTRUSTED_TRUSTED_OWNER, &len, error);
    close(dirfd);
    return add_recipients_text(k, text, len, file, error);
}

static gboolean
identity_line(char *line, guint number, gpointer data, GError **error)
{
    FileCtx *c = data;
    IohAgeKeys *k = c->keys;

    if (k->n_identities == IOH_AGE_IDENTITIES_MAX) {
        return ioh_error_set(error, E2BIG, NULL, NULL, "%s: more than %d identities",
                             c->name, IOH_AGE_IDENTITIES_MAX);
    }
    if (!g_str_has_prefix(line, "AGE-SECRET-KEY-1") ||
        !decode_key(line, "age-secret-key-", k->identities[k->n_identities])) {
        return ioh_error_set(error, EINVAL, NULL, NULL, "%s line %u: not an age X25519 "
                             "identity (AGE-SECRET-KEY-1...)", c->name, number);
    }
    k->n_identities++;
    c->added++;
    return TRUE;
}

gboolean
ioh_age_keys_parse_identities(IohAgeKeys *k, const char *text, gsize len, const char *name,
                              GError **error)
{
    /* a copy to cut lines in, in locked memory like the text */
    char *copy = ioh_secmem_alloc(len + 1);
    FileCtx c = { k, name, 0 };
    gboolean ok;

    if (!copy) {
        return ioh_error_set_errno(error, errno, "read", name);
    }
    memcpy(copy, text, len);
    ok = each_line(copy, len, identity_line, &c, error);
    ioh_secmem_free(copy, len + 1);
    if (ok && c.added == 0) {
        return ioh_error_set(error, EINVAL, "read", name, "no identity in the file");
    }
    return ok;
}

/* How long an identity fd may stay silent before its end: a key is written at once, and
 * a pipe or socket whose writer never closes it (a stuck vault, a write end leaked into
 * the helper) would otherwise hang the restore before it starts, QEMU waiting. */
#define IDENTITY_STALL_S 10

/* Waits until @fd (a pipe, a socket: blocking or not) has bytes or its end. */
static gboolean
wait_readable(int fd, const char *name, GError **error)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int r;

    while ((r = poll(&p, 1, IDENTITY_STALL_S * 1000)) < 0 && errno == EINTR) {
    }
    if (r == 0) {
        return ioh_error_set(error, ETIMEDOUT, "read", name, "no end of the identity after "
                             "%d s without a byte (a pipe or socket still open for "
                             "writing?)", IDENTITY_STALL_S);
    }
    return TRUE;
}

/* Reads @fd to its end (or IOH_AGE_IDENTITY_FILE_MAX) into @buf, waiting on a pipe at
 * most IDENTITY_STALL_S between bytes: the bytes read, or -1 with @error set. */
static gssize
read_all(int fd, char *buf, const char *name, GError **error)
{
    gsize have = 0;

    for (;;) {
        gssize n;

        if (!wait_readable(fd, name, error)) {
            return -1;
        }
        n = read(fd, buf + have, IOH_AGE_IDENTITY_FILE_MAX + 1 - have);
        if (n < 0 && errno == EAGAIN) {
            continue;
        }
        if (n < 0 && errno != EINTR) {
            ioh_error_set_errno(error, errno, "read", name);
            return -1;
        }
        if (n == 0) {
            return (gssize)have;
        }
        have += n > 0 ? (gsize)n : 0;
        if (have > IOH_AGE_IDENTITY_FILE_MAX) {
            ioh_error_set(error, EFBIG, "read", name, "larger than %d bytes",
                          IOH_AGE_IDENTITY_FILE_MAX);
            return -1;
        }
    }
}

/* Reads the identities of @fd (its bytes in locked memory only), and closes it. */
static gboolean
read_identity_fd(IohAgeKeys *k, int fd, const char *name, GError **error)
{
    char *buf = ioh_secmem_alloc(IOH_AGE_IDENTITY_FILE_MAX + 1);
    gssize n;
    gboolean ok;

    if (!buf) {
        ok = ioh_error_set_errno(error, errno, "read", name);
    } else {
        n = read_all(fd, buf, name, error);
        ok = n >= 0 && ioh_age_keys_parse_identities(k, buf, (gsize)n, name, error);
    }
    ioh_secmem_free(buf, IOH_AGE_IDENTITY_FILE_MAX + 1);
    close(fd);
    return ok;
}

int
ioh_age_keys_open_identity_file(const char *file, GError **error)
{
    int fd = refuse_key_as_file(file, "--identity", error)
                 ? -1 : ioh_untrusted_open(AT_FDCWD, file, O_RDONLY, 0, error);
    struct stat st;

    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        ioh_error_set_errno(error, errno, "stat", file);
        close(fd);
        return -1;
    }
    /* as ssh refuses a private key others could have read: it is no secret any more */
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        ioh_error_set(error, EPERM, "identity", file, "accessible by group or "
                      "others (mode %04o): a secret key must be mode 0600 or "
                      "stricter", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return fd;
}

gboolean
ioh_age_keys_read_identity_file(IohAgeKeys *k, const char *file, GError **error)
{
    int fd = ioh_age_keys_open_identity_file(file, error);

    return fd >= 0 && read_identity_fd(k, fd, file, error);
}

gboolean
ioh_age_keys_read_identity_fd(IohAgeKeys *k, int fd, GError **error)
{
    g_autofree char *name = g_strdup_printf("--identity-fd %d", fd);

    if (fcntl(fd, F_GETFD) < 0) {
        return ioh_error_set(error, EBADF, NULL, NULL, "%s: not an open file descriptor",
                             name);
    }
    return read_identity_fd(k, fd, name, error);
}
