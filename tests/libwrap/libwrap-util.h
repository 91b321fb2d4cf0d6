/* libwrap-util.h - what the test-libwrap-* programs share: files and fds, the progress
 * records of the async and progress tests, the checksum of a file. Every test drives the
 * real helper ($IOHELPER_PATH) through libwrap's public API only.
 */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "iohwrap.h"
#include "ioh-error.h"
#include "ioh-test.h"

#define MIB (1024 * 1024)

/* g_test_init(), and SIGPIPE ignored: a helper that dies gives EPIPE, as in every daemon
 * that uses libwrap. */
void libwrap_test_init(int *argc, char ***argv);

/* ---- helpers ------------------------------------------------------------------- */

char *tpath(const char *dir, const char *name);

int open_save(const char *path);

int open_restore(const char *path);

gboolean fd_is_open(int fd);

gboolean have_direct(const char *dir);

/* Writes @script as the executable @name in @dir and points IOHELPER_PATH at it (the
 * caller restores it); the script's path. */
char *fake_helper(const char *dir, const char *name, const char *script);

/* ---- many at once ----------------------------------------------------------------- */

typedef struct {
    char *src, *dst;
    int fd;
    gboolean restore;
    guint64 got;
    gboolean ok;
} Stream;

/* ---- main loop: async finish and progress ------------------------------------------ */

typedef struct {
    GMainLoop *loop;
    IohWrap *wrap;
    GArray *written;
    GArray *synced;
    gboolean done;
    gboolean ok;
    GError *error;
    Stream stream;
} Async;

void on_progress(guint64 written, guint64 synced, gpointer data);

void check_progress(Async *a, guint64 size, gboolean synced_too);

/* ---- the checksum (ioh_wrap_new_full, ioh_wrap_get_checksum) --------------------- */

/* The value `xxhsum -H3` prints for @file ("XXH3 (FILE) = HEX"). */
char *xxh3_of(const char *file);
