/* iohelper-util.h - what the test-iohelper-* programs share: the work directory, a producer
 * and a consumer on real pipes around the helper as QEMU would be, scratch file systems,
 * the skips. Each program is the iohelper binary end to end, the libvirt form side by side
 * with the stock libvirt_iohelper, and every error a user can hit.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pty.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include "ioh-protocol.h"
#include "ioh-test.h"

#define MiB (1024 * 1024)

/* The work directory (removed at the end) and whether it takes O_DIRECT: set by
 * iohelper_test_init(). */
extern char *workdir;
extern gboolean have_direct;

/* g_test_init(), SIGPIPE ignored (a helper that dies gives EPIPE), the work directory. */
void iohelper_test_init(int *argc, char ***argv);
/* g_test_run(), then the work directory removed; returns g_test_run()'s value. */
int iohelper_test_run(void);

/* ---- plumbing: a producer and a consumer on real pipes, like QEMU (tests/common) ---- */

char **helper_argv(const char *prog, const char *const *opts, const char *a, const char *b);

/* Runs @argv with a producer feeding @src into its stdin through a pipe (write() of
 * 1 MiB, as QEMU does), and its stdout on @out_fd. Returns the exit code. */
int run_fed(char **argv, const char *src, int out_fd, char **ret_err);

/* Runs @argv with its stdout on a pipe drained into @dst, stdin on @in_fd. */
int run_drained(char **argv, int in_fd, const char *dst, char **ret_err);

/* Starts @argv with @fd0 as its stdin and @fd2 (if >= 0; else this process's) as its
 * stderr, for tests that talk to the helper while it runs. */
GPid spawn_helper(char **argv, int fd0, int fd2);

char *wpath(const char *name);

guint64 file_size(const char *path);

gboolean skip_unless_direct(void);

gboolean skip_unless_root(void);

/* ---- errors: one line naming the file and the cause, non-zero exit ---- */

void assert_one_line(const char *err, const char *needle);

/* Mounts a file system of @type on a new folder; returns it, or NULL after skipping. */
char *mount_scratch(const char *type, const char *opts);

void unmount_scratch(const char *dir);
