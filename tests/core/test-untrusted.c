/* test-untrusted.c - files another user may have planted (helper/core/ioh-untrusted) on a
 * real file system: FIFOs opened without waiting and refused, symbolic links not followed
 * (or followed when asked, to a file that passes the checks), hard links, owners and modes
 * a config must not have, reads bounded at the byte, directories that are links or open
 * to all without the sticky bit. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "core-util.h"
#include "ioh-error.h"
#include "ioh-untrusted.h"
#include "ioh-test.h"

#define MiB (1024 * 1024)
#define NOBODY 65534

static char *workdir;

static char *
wpath(const char *name)
{
    return g_build_filename(workdir, name, NULL);
}

static void
write_file(const char *name, const char *text, mode_t mode)
{
    g_autofree char *p = wpath(name);

    g_assert_true(g_file_set_contents(p, text, -1, NULL));
    g_assert_no_errno(chmod(p, mode));
}

/* ioh_untrusted_read() of @name in the work folder fails with @code and @cause. */
static void
assert_read_fails(const char *name, gsize max, IohUntrustedFlags flags, int code,
                  const char *cause)
{
    g_autoptr(GError) e = NULL;
    int dirfd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *text = ioh_untrusted_read(dirfd, name, max, flags, NULL, &e);

    g_assert_null(text);
    g_assert_error(e, IOH_ERROR, code);
    ioht_assert_contains(e->message, name);
    ioht_assert_contains(e->message, cause);
    close(dirfd);
}

/* Exactly @max bytes are read; one more is refused. */
static void
test_read_bound(void)
{
    g_autoptr(GError) e = NULL;
    int dirfd = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    g_autofree char *text = NULL, *empty = NULL;
    gsize len = 1;

    write_file("b128", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 0644);
    text = ioh_untrusted_read(dirfd, "b128", 128, 0, &len, &e);
    g_assert_no_error(e);
    g_assert_cmpuint(len, ==, 128);
    g_assert_cmpuint(strlen(text), ==, 128);
    assert_read_fails("b128", 127, 0, EFBIG, "larger than 127 bytes");
    write_file("empty", "", 0644);
    empty = ioh_untrusted_read(dirfd, "empty", 128, 0, &len, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(empty, ==, "");
    g_assert_cmpuint(len, ==, 0);
    close(dirfd);
}

/* A file whose size fstat does not tell (procfs says 0): read as it comes, still bounded. */
static void
test_read_unsized(void)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *text = ioh_untrusted_read(AT_FDCWD, "/proc/self/status", 64 * 1024, 0,
                                               NULL, &e);

    g_assert_no_error(e);
    ioht_assert_contains(text, "VmRSS:");
    g_assert_null(ioh_untrusted_read(AT_FDCWD, "/proc/self/status", 64, 0, NULL, &e));
    g_assert_error(e, IOH_ERROR, EFBIG);
}

/* A FIFO with no writer: refused at once, not waited on (for either access). */
static void
test_fifo(void)
{
    g_autofree char *p = wpath("fifo");
    g_autoptr(GError) e = NULL;

    g_assert_no_errno(mkfifo(p, 0644));
    assert_read_fails("fifo", 128, 0, EINVAL, "a pipe, not a regular file");
    g_assert_cmpint(ioh_untrusted_open(AT_FDCWD, p, O_RDWR, 0, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EINVAL);
}

/* A symbolic link is refused, unless asked for; then what it points to is checked. */
static void
test_symlink(void)
{
    g_autofree char *zero = wpath("zero"), *link = wpath("link"), *target = wpath("target");
    g_autofree char *text = NULL;

    write_file("target", "text", 0644);
    g_assert_no_errno(symlink(target, link));
    g_assert_no_errno(symlink("/dev/zero", zero));
    assert_read_fails("link", 128, 0, ELOOP, "a symbolic link, not followed");
    assert_read_fails("zero", 128, 0, ELOOP, "a symbolic link, not followed");
    assert_read_fails("zero", 128, IOH_UNTRUSTED_FOLLOW, EINVAL,
                      "a character device, not a regular file");
    text = ioh_untrusted_read(AT_FDCWD, link, 128, IOH_UNTRUSTED_FOLLOW, NULL, NULL);
    g_assert_cmpstr(text, ==, "text");
}

/* A sparse 256 MiB file is refused without being read: memory does not grow. */
static void
test_huge(void)
{
    g_autofree char *p = wpath("huge");
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    guint64 before;

    g_assert_cmpint(fd, >=, 0);
    g_assert_no_errno(ftruncate(fd, 256 * MiB));
    close(fd);
    before = coret_rss();
    assert_read_fails("huge", 64 * 1024, 0, EFBIG, "larger than 65536 bytes");
    g_assert_cmpuint(coret_rss(), <, before + 16 * MiB);
}

/* IOH_UNTRUSTED_ONE_LINK refuses a hard link (a 0600 file elsewhere), which is not
 * changed by the attempt. */
static void
test_hard_link(void)
{
    g_autofree char *secret = wpath("secret"), *hard = wpath("hard");
    g_autoptr(GError) e = NULL;
    struct stat st;
    int fd;

    write_file("secret", "s", 0600);
    g_assert_no_errno(link(secret, hard));
    g_assert_cmpint(ioh_untrusted_open(AT_FDCWD, hard, O_RDWR, IOH_UNTRUSTED_ONE_LINK, &e),
                    ==, -1);
    g_assert_error(e, IOH_ERROR, EMLINK);
    ioht_assert_contains(e->message, "2 hard links, not one");
    g_assert_no_errno(stat(secret, &st));
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    fd = ioh_untrusted_open(AT_FDCWD, hard, O_RDONLY, 0, NULL);
    g_assert_cmpint(fd, >=, 0);
    g_assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

/* IOH_UNTRUSTED_TRUSTED_OWNER: ours and 0644 is read; group-writable, or another user's
 * (root only: chown), is refused. */
static void
test_owner(void)
{
    g_autofree char *other = wpath("other"), *mine = wpath("mine"), *text = NULL;
    g_autoptr(GError) e = NULL;

    g_assert_null(ioh_untrusted_read(AT_FDCWD, workdir, 128, 0, NULL, &e));
    g_assert_error(e, IOH_ERROR, EINVAL);
    ioht_assert_contains(e->message, "a directory, not a regular file");
    write_file("mine", "[iohelper]\n", 0644);
    text = ioh_untrusted_read(AT_FDCWD, mine, 128, IOH_UNTRUSTED_TRUSTED_OWNER, NULL, NULL);
    g_assert_cmpstr(text, ==, "[iohelper]\n");
    write_file("gw", "[iohelper]\n", 0664);
    assert_read_fails("gw", 128, IOH_UNTRUSTED_TRUSTED_OWNER, EPERM,
                      "writable by group or others (mode 0664)");
    if (geteuid() != 0) {
        return;
    }
    write_file("other", "[iohelper]\n", 0644);
    g_assert_no_errno(chown(other, NOBODY, (gid_t)-1));
    assert_read_fails("other", 128, IOH_UNTRUSTED_TRUSTED_OWNER, EPERM,
                      "owned by uid 65534, neither root nor the caller");
}

/* The directory: a symbolic link refused; open to all: only when sticky; ours 0755 fine;
 * another user's refused (root only). */
static void
test_dir(void)
{
    g_autofree char *d = wpath("d"), *l = wpath("l"), *f = wpath("f");
    g_autoptr(GError) e = NULL;
    int fd;

    g_assert_no_errno(mkdir(d, 0755));
    g_assert_no_errno(symlink(d, l));
    fd = ioh_untrusted_dir_open(d, &e);
    g_assert_no_error(e);
    close(fd);
    g_assert_cmpint(ioh_untrusted_dir_open(l, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, ELOOP);
    g_clear_error(&e);
    g_assert_no_errno(chmod(d, 0777));
    g_assert_cmpint(ioh_untrusted_dir_open(d, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPERM);
    ioht_assert_contains(e->message, "not sticky (mode 0777)");
    g_clear_error(&e);
    g_assert_no_errno(chmod(d, 01777));
    fd = ioh_untrusted_dir_open(d, &e);
    g_assert_no_error(e);
    close(fd);
    write_file("f", "", 0644);
    g_assert_cmpint(ioh_untrusted_dir_open(f, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, ENOTDIR);
    g_clear_error(&e);
    if (geteuid() == 0) {
        g_assert_no_errno(chown(d, NOBODY, (gid_t)-1));
        g_assert_cmpint(ioh_untrusted_dir_open(d, &e), ==, -1);
        g_assert_error(e, IOH_ERROR, EPERM);
    }
}

/* ioh_untrusted_path_parent() of @path: the file's name there, read back as @text. */
static void
assert_path_reads(const char *path, const char *name, const char *text)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *got_name = NULL, *got = NULL;
    int dirfd = ioh_untrusted_path_parent(path, &got_name, &e);

    g_assert_no_error(e);
    g_assert_cmpstr(got_name, ==, name);
    got = ioh_untrusted_read(dirfd, got_name, 64, 0, NULL, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(got, ==, text);
    close(dirfd);
}

/* A path walked from /: links (relative, absolute, chained, the last component's too)
 * followed, "." and ".." taken, a missing directory ENOENT, a missing file left to the
 * read, a loop of links ELOOP, a directory of the path open to all without the sticky
 * bit refused (EPERM) naming it. */
static void
test_path(void)
{
    g_autofree char *p = wpath("p"), *sub = wpath("p/sub"), *f = wpath("p/sub/f");
    g_autofree char *abs_link = wpath("p/abs"), *loop = wpath("p/loop"), *rel = wpath("p/rel");
    g_autofree char *via = NULL, *e_path = NULL;
    g_autoptr(GError) e = NULL;
    g_autofree char *name = NULL;
    int fd;

    g_assert_no_errno(g_mkdir_with_parents(sub, 0755));
    g_assert_true(g_file_set_contents(f, "x", -1, NULL));
    g_assert_no_errno(symlink("sub/f", rel));
    g_assert_no_errno(symlink(f, abs_link));
    g_assert_no_errno(symlink("loop", loop));
    via = g_strdup_printf("%s/./sub/../rel", p);
    assert_path_reads(via, "f", "x");
    assert_path_reads(abs_link, "f", "x");
    e_path = g_strdup_printf("%s/none/f", p);
    g_assert_cmpint(ioh_untrusted_path_parent(e_path, &name, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, ENOENT);
    g_clear_error(&e);
    g_clear_pointer(&e_path, g_free);
    e_path = g_strdup_printf("%s/none", p);
    fd = ioh_untrusted_path_parent(e_path, &name, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(name, ==, "none");
    close(fd);
    g_assert_cmpint(ioh_untrusted_path_parent(loop, &name, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, ELOOP);
    g_clear_error(&e);
    g_assert_no_errno(chmod(sub, 0777));
    g_assert_cmpint(ioh_untrusted_path_parent(f, &name, &e), ==, -1);
    g_assert_error(e, IOH_ERROR, EPERM);
    ioht_assert_contains(e->message, sub);
    ioht_assert_contains(e->message, "not sticky (mode 0777)");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    workdir = ioht_workdir();
    g_test_add_func("/untrusted/read/bound", test_read_bound);
    g_test_add_func("/untrusted/read/unsized", test_read_unsized);
    g_test_add_func("/untrusted/fifo", test_fifo);
    g_test_add_func("/untrusted/symlink", test_symlink);
    g_test_add_func("/untrusted/huge", test_huge);
    g_test_add_func("/untrusted/hard-link", test_hard_link);
    g_test_add_func("/untrusted/owner", test_owner);
    g_test_add_func("/untrusted/dir", test_dir);
    g_test_add_func("/untrusted/path", test_path);
    return ioht_run_tests(&workdir);
}
