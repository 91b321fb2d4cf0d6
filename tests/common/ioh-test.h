/* ioh-test.h - what every C test of the project needs: a work folder on a real file
 * system, random data, file comparison, and running the real iohelper binary. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A new empty folder for this test process, on a file system that supports O_DIRECT
 * (below $IOH_TEST_DIR, which meson sets to the build tree; never tmpfs). Removed with
 * everything in it by ioht_workdir_remove(). */
char *ioht_workdir(void);
void ioht_workdir_remove(const char *dir);

/* TRUE when @dir's file system accepts O_DIRECT (an aligned write is tried). */
gboolean ioht_dir_supports_direct(const char *dir);

/* Writes @size bytes of fast pseudo-random data (from @seed) to @path. */
void ioht_write_random_file(const char *path, guint64 size, guint32 seed);

/* TRUE when both files have the same bytes; on a difference says where in the log. */
gboolean ioht_files_equal(const char *a, const char *b);

/* The iohelper binary under test: $IOHELPER_PATH (meson sets it). */
const char *ioht_helper_path(void);

/* Runs @argv (argv[0] is a path) with @stdin_fd/@stdout_fd as its fd 0/1 (-1: /dev/null)
 * and waits. Returns the wait status; *ret_stderr (if not NULL) gets what it printed. */
int ioht_run(char **argv, int stdin_fd, int stdout_fd, char **ret_stderr);

/* Exit code of a wait status, or 128 + signal, like a shell. */
int ioht_exit_code(int status);

G_END_DECLS
