/* ioh-untrusted.c - opening and reading files another local user may have planted
 * (ioh-untrusted.h) */
#include "ioh-untrusted.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"

/* Owned by root or by us: anyone else could change it under us. */
static gboolean
owner_trusted(const struct stat *st)
{
    return st->st_uid == 0 || st->st_uid == geteuid();
}

static gboolean
check_owner(const struct stat *st, const char *name, GError **error)
{
    if (!owner_trusted(st)) {
        return ioh_error_set(error, EPERM, "open", name, "owned by uid %u, neither root nor "
                             "the caller", (unsigned)st->st_uid);
    }
    return TRUE;
}

/* What fstat says of the file opened as @name, checked as @flags say. */
static gboolean
check_file(const struct stat *st, const char *name, IohUntrustedFlags flags, GError **error)
{
    if (!S_ISREG(st->st_mode)) {
        return ioh_error_set(error, EINVAL, "open", name, "%s, not a regular file",
                             ioh_fd_kind_name(st->st_mode));
    }
    if ((flags & IOH_UNTRUSTED_ONE_LINK) && st->st_nlink != 1) {
        return ioh_error_set(error, EMLINK, "open", name, "%lu hard links, not one",
                             (unsigned long)st->st_nlink);
    }
    if (!(flags & IOH_UNTRUSTED_TRUSTED_OWNER)) {
        return TRUE;
    }
    if (!check_owner(st, name, error)) {
        return FALSE;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        return ioh_error_set(error, EPERM, "open", name, "writable by group or others "
                             "(mode %04o)", (unsigned)(st->st_mode & 07777));
    }
    return TRUE;
}

/* open(2)'s failure as an error: a symbolic link refused by O_NOFOLLOW said as such (open
 * gives ELOOP, or ENOTDIR with O_DIRECTORY). */
static int
open_error(int errsv, int dirfd, const char *name, IohUntrustedFlags flags, GError **error)
{
    struct stat st;

    if ((errsv == ELOOP || errsv == ENOTDIR) && !(flags & IOH_UNTRUSTED_FOLLOW) &&
        fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        ioh_error_set(error, ELOOP, "open", name, "a symbolic link, not followed");
    } else {
        ioh_error_set_errno(error, errsv, "open", name);
    }
    return -1;
}

/* The checked fd of @name and its stat into *@ret_st. */
static int
open_checked(int dirfd, const char *name, int access, IohUntrustedFlags flags,
             struct stat *ret_st, GError **error)
{
    int oflags = (access & O_ACCMODE) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                 (flags & IOH_UNTRUSTED_FOLLOW ? 0 : O_NOFOLLOW);
    int fd = openat(dirfd, name, oflags);

    if (fd < 0) {
        return open_error(errno, dirfd, name, flags, error);
    }
    if (fstat(fd, ret_st) < 0) {
        ioh_error_set_errno(error, errno, "fstat", name);
        ioh_fd_clear(&fd);
        return -1;
    }
    if (!check_file(ret_st, name, flags, error)) {
        ioh_fd_clear(&fd);
        return -1;
    }
    return fd;
}

int
ioh_untrusted_open(int dirfd, const char *name, int access, IohUntrustedFlags flags,
                   GError **error)
{
    struct stat st;

    return open_checked(dirfd, name, access, flags, &st, error);
}

static void
too_large(const char *name, gsize max, GError **error)
{
    ioh_error_set(error, EFBIG, "read", name, "larger than %" G_GSIZE_FORMAT " bytes", max);
}

/* Reads @fd to its end, at most @max bytes (one more is tried, to tell a larger file),
 * into a buffer sized for @size (what fstat said) that grows only as bytes come. */
static char *
read_bounded(int fd, gsize size, gsize max, const char *name, gsize *ret_len, GError **error)
{
    gsize cap = MIN(size, max) + 2, len = 0;
    g_autofree char *buf = g_malloc(cap);
    gssize n;

    for (;;) {
        if (len + 1 == cap && cap < max + 2) {
            cap = MIN(MAX(cap * 2, 256), max + 2);
            buf = g_realloc(buf, cap);
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            ioh_error_set_errno(error, errno, "read", name);
            return NULL;
        }
        if (n == 0) {
            break;
        }
        len += (gsize)n;
        if (len > max) {
            too_large(name, max, error);
            return NULL;
        }
    }
    buf[len] = '\0';
    if (ret_len) {
        *ret_len = len;
    }
    return g_steal_pointer(&buf);
}

char *
ioh_untrusted_read(int dirfd, const char *name, gsize max, IohUntrustedFlags flags,
                   gsize *ret_len, GError **error)
{
    struct stat st;
    int fd = open_checked(dirfd, name, O_RDONLY, flags, &st, error);
    char *text;

    if (fd < 0) {
        return NULL;
    }
    if (st.st_size < 0 || (guint64)st.st_size > max) {
        too_large(name, max, error);
        close(fd);
        return NULL;
    }
    text = read_bounded(fd, (gsize)st.st_size, max, name, ret_len, error);
    close(fd);
    return text;
}

/* A directory where others' entries cannot be swapped under us: see the header. */
static gboolean
check_dir(const struct stat *st, const char *path, GError **error)
{
    if (!check_owner(st, path, error)) {
        return FALSE;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
        return ioh_error_set(error, EPERM, "open", path, "writable by group or others and "
                             "not sticky (mode %04o)", (unsigned)(st->st_mode & 07777));
    }
    return TRUE;
}

int
ioh_untrusted_dir_open(const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;

    if (fd < 0) {
        return open_error(errno, AT_FDCWD, path, 0, error);
    }
    if (fstat(fd, &st) < 0) {
        ioh_error_set_errno(error, errno, "fstat", path);
        ioh_fd_clear(&fd);
    } else if (!check_dir(&st, path, error)) {
        ioh_fd_clear(&fd);
    }
    return fd;
}

/* At most this many symbolic links followed on one path (the kernel's own bound). */
#define PATH_LINKS_MAX 40

/* A walk down a path, one component at a time, from a checked directory. */
typedef struct {
    const char *path;    /* as given: for messages */
    int dirfd;           /* the directory reached so far (O_PATH), checked */
    char *at;            /* its path, for messages */
    char *rest;          /* what is left to walk */
    guint links;         /* symbolic links followed */
} PathWalk;

/* Moves the walk into the directory @fd (O_PATH, now the walk's), at @at (taken), after
 * check_dir(): owned by root or us, sticky if others can write it. */
static gboolean
walk_enter(PathWalk *w, int fd, char *at, GError **error)
{
    struct stat st;

    if (fd < 0) {
        ioh_error_set_errno(error, errno, "open", at);
    } else if (fstat(fd, &st) < 0) {
        ioh_error_set_errno(error, errno, "fstat", at);
    } else if (check_dir(&st, at, error)) {
        ioh_fd_clear(&w->dirfd);
        w->dirfd = fd;
        g_free(w->at);
        w->at = at;
        return TRUE;
    }
    g_prefix_error(error, "%s: ", w->path);
    if (fd >= 0) {
        close(fd);
    }
    g_free(at);
    return FALSE;
}

static gboolean
walk_enter_root(PathWalk *w, GError **error)
{
    return walk_enter(w, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), g_strdup("/"), error);
}

/* Replaces the component just taken, the symbolic link @fd (@st, named @name), by its
 * target: the link must be owned by root or us (in a sticky directory another user's
 * link could point anywhere). */
static gboolean
walk_link(PathWalk *w, int fd, const struct stat *st, const char *name, GError **error)
{
    char target[PATH_MAX];
    ssize_t n;
    char *rest;

    if (++w->links > PATH_LINKS_MAX) {
        return ioh_error_set(error, ELOOP, "open", w->path, "too many symbolic links");
    }
    if (!owner_trusted(st)) {
        return ioh_error_set(error, EPERM, "open", w->path, "the symbolic link %s in %s is "
                             "owned by uid %u, neither root nor the caller", name, w->at,
                             (unsigned)st->st_uid);
    }
    n = readlinkat(fd, "", target, sizeof(target) - 1);
    if (n <= 0) {
        return ioh_error_set_errno(error, n < 0 ? errno : ENOENT, "readlink", w->path);
    }
    target[n] = '\0';
    if (target[0] == '/' && !walk_enter_root(w, error)) {
        return FALSE;
    }
    rest = g_strconcat(target, "/", w->rest, NULL);
    g_free(w->rest);
    w->rest = rest;
    return TRUE;
}

/* Takes the next component of the walk into @ret_name (free it): FALSE at the end. */
static gboolean
walk_next(PathWalk *w, char **ret_name)
{
    char *p = w->rest + strspn(w->rest, "/");
    gsize len = strcspn(p, "/");

    if (len == 0) {
        return FALSE;
    }
    *ret_name = g_strndup(p, len);
    memmove(w->rest, p + len, strlen(p + len) + 1);
    return TRUE;
}

/* Whether the component just taken, @name, is the file: the last one and not a
 * symbolic link (nor "." or ".."). */
static gboolean
walk_at_file(const PathWalk *w, const char *name)
{
    struct stat st;

    return w->rest[strspn(w->rest, "/")] == '\0' && !g_str_equal(name, ".") &&
           !g_str_equal(name, "..") &&
           (fstatat(w->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode));
}

/* One step: the directory @name entered, or the link @name followed. */
static gboolean
walk_step(PathWalk *w, const char *name, GError **error)
{
    int fd = openat(w->dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    gboolean ok;

    if (fd < 0) {
        return ioh_error_set_errno(error, errno, "open", w->path);
    }
    if (fstat(fd, &st) < 0) {
        ok = ioh_error_set_errno(error, errno, "fstat", w->path);
    } else if (S_ISLNK(st.st_mode)) {
        ok = walk_link(w, fd, &st, name, error);
    } else if (S_ISDIR(st.st_mode)) {
        return walk_enter(w, fd, g_build_filename(w->at, name, NULL), error);
    } else {
        ok = ioh_error_set_errno(error, ENOTDIR, "open", w->path);
    }
    close(fd);
    return ok;
}

int
ioh_untrusted_path_parent(const char *path, char **ret_name, GError **error)
{
    g_autofree char *cwd = g_path_is_absolute(path) ? NULL : g_get_current_dir();
    PathWalk w = { .path = path, .dirfd = -1,
                   .rest = cwd ? g_strconcat(cwd, "/", path, NULL) : g_strdup(path) };
    char *name = NULL;
    gboolean ok = walk_enter_root(&w, error), file = FALSE;

    while (ok && !file && walk_next(&w, &name)) {
        file = walk_at_file(&w, name);
        if (!file) {
            ok = walk_step(&w, name, error);
            g_clear_pointer(&name, g_free);
        }
    }
    g_free(w.rest);
    g_free(w.at);
    if (ok && !file) {
        ok = ioh_error_set(error, EISDIR, "open", path, "a directory, not a file");
    }
    if (!ok) {
        ioh_fd_clear(&w.dirfd);
        return -1;
    }
    *ret_name = name;
    return w.dirfd;
}
