/* ioh-untrusted.h - opening and reading files that another local user may have planted
 *
 * A directory others can write (the budget's /run/iohelper, mode 1777) or a path named in
 * the environment may hold, under the very name the helper looks for, a FIFO (a blocking
 * open or read never returns), a symbolic link (to /dev/zero: a read without end; to a
 * file of root's), a huge file (read whole, it costs its size in memory), a hard link to
 * another user's file (fchmod or write would change that file), or a file with a lease
 * (fcntl F_SETLEASE: a blocking open waits for the lease break, 45 s by default). Every
 * such file the helper opens goes through here, so each of those is one error:
 *  - opened with O_NOFOLLOW (IOH_UNTRUSTED_FOLLOW lifts it for the last component only),
 *    O_NONBLOCK (the open of a FIFO or of a leased file never waits), O_NOCTTY and
 *    O_CLOEXEC, relative to a directory fd when given (the directory checked once, then
 *    never looked up by name again);
 *  - refused unless fstat says a regular file;
 *  - with IOH_UNTRUSTED_ONE_LINK, refused unless it has one link (a hard link to a file
 *    elsewhere on the file system has two or more);
 *  - with IOH_UNTRUSTED_TRUSTED_OWNER, refused unless owned by root or by the caller
 *    (the effective uid) and writable by neither group nor others (as sudo checks
 *    sudoers and sshd its users' files): a config file;
 *  - read (ioh_untrusted_read) up to a bound: a larger file is refused without being read
 *    (the whole bound is never allocated for a small file).
 * Errors are IOH_ERROR "<what> <path>: <cause>" (ioh-error.h), <path> being @name as
 * given, errno as the code: ENOENT when absent, ELOOP for a symbolic link not followed,
 * EINVAL for a file that is not regular (its kind named: "a pipe"), EMLINK for several
 * links, EPERM for an owner or mode not trusted, EFBIG past the bound.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef enum {
    IOH_UNTRUSTED_FOLLOW = 1 << 0,          /* the last component may be a symbolic link */
    IOH_UNTRUSTED_ONE_LINK = 1 << 1,        /* st_nlink must be 1 */
    IOH_UNTRUSTED_TRUSTED_OWNER = 1 << 2,   /* root's or ours, not group/other writable */
} IohUntrustedFlags;

/* Opens @name (relative to @dirfd; AT_FDCWD: to the working directory, or absolute) with
 * @access (O_RDONLY or O_RDWR; never O_CREAT) and checks it as above. Returns the fd
 * (O_NONBLOCK stays set: it changes nothing for a regular file) or -1 with @error set. */
int ioh_untrusted_open(int dirfd, const char *name, int access, IohUntrustedFlags flags,
                       GError **error);

/* Opens, checks and reads @name as above: its bytes, NUL-terminated (free them), their
 * number in *@ret_len when given; NULL with @error set when refused, unreadable or longer
 * than @max bytes. */
char *ioh_untrusted_read(int dirfd, const char *name, gsize max, IohUntrustedFlags flags,
                         gsize *ret_len, GError **error);

/* Opens the directory @path for openat() and its kind, never through a symbolic link as
 * its last component: refused (EPERM) unless owned by root or by the caller and, when
 * group or others can write it, sticky (mode 1777, as /tmp: nobody else can remove,
 * rename or replace an entry the caller made there). Returns the fd or -1 with @error. */
int ioh_untrusted_dir_open(const char *path, GError **error);

/* A file named by a path (a config file) where every directory on the way may matter: a
 * directory another user can write could hold, under the file's name, a link to a file
 * of root's (whose first line the key-file parser would quote) or its own file. Walks
 * @path (relative: from the working directory) from / one component at a time, never
 * by name again: every directory passed must be owned by root or the caller and, if
 * others can write it, sticky (as ioh_untrusted_dir_open() and sshd's StrictModes);
 * every symbolic link followed (the last component's too, at most 40) must be owned by
 * root or the caller. Returns the fd (O_PATH) of the directory holding the file and its
 * name there in *@ret_name (free it), for ioh_untrusted_read() without
 * IOH_UNTRUSTED_FOLLOW; -1 with @error set (ENOENT when a directory is missing, EPERM
 * for one not trusted). */
int ioh_untrusted_path_parent(const char *path, char **ret_name, GError **error);

G_END_DECLS
