/* ioh-test.h - what every C test of the project needs: a work folder on a real file
 * system, random data, file comparison, and running the real iohelper binary. */
#pragma once

#include <glib.h>
#include <sys/resource.h>
#include <sys/types.h>

G_BEGIN_DECLS

/* A new empty folder for this test process, on a file system that supports O_DIRECT
 * (below $IOH_TEST_DIR, which meson sets to the build tree, else /var/tmp; never tmpfs).
 * Removed with everything in it by ioht_workdir_remove(), or else when the process exits,
 * aborts (a failed assertion) or gets SIGTERM/SIGINT; $IOH_TEST_KEEP keeps it then. */
char *ioht_workdir(void);
void ioht_workdir_remove(const char *dir);
/* A folder made otherwise, removed as one of ioht_workdir() is (at exit or abort). */
void ioht_workdir_adopt(const char *dir);
/* main()'s end in a test with one work folder: g_test_run()'s result, after @workdir
 * (ioht_workdir()'s) is removed and freed. */
int ioht_run_tests(char **workdir);

/* TRUE when @dir's file system accepts O_DIRECT (an aligned write is tried). */
gboolean ioht_dir_supports_direct(const char *dir);

/* Writes @size bytes of fast pseudo-random data (from @seed) to @path. */
void ioht_write_random_file(const char *path, guint64 size, guint32 seed);

/* How many entries of @dir have a name starting with @prefix (each named in the log):
 * the temp files a failed run must not leave behind. */
guint ioht_count_prefix(const char *dir, const char *prefix);

/* Fails the test unless @text (NULL allowed) contains @needle; shows both. */
void ioht_assert_contains(const char *text, const char *needle);

/* TRUE when both files have the same bytes; on a difference says where in the log. */
gboolean ioht_files_equal(const char *a, const char *b);

/* Bytes of @path now in the page cache (mincore). */
guint64 ioht_cached_bytes(const char *path);

/* The iohelper binary under test: $IOHELPER_PATH (meson sets it). */
const char *ioht_helper_path(void);

/* Runs @argv (argv[0] is a path) with @stdin_fd/@stdout_fd as its fd 0/1 (-1: /dev/null)
 * and waits. Returns the wait status; *ret_stderr (if not NULL) gets what it printed. */
int ioht_run(char **argv, int stdin_fd, int stdout_fd, char **ret_stderr);

/* Exit code of a wait status, or 128 + signal, like a shell. */
int ioht_exit_code(int status);

/* A GTest fixture for the tests that want a fresh work folder each:
 * g_test_add(path, IohtDir, data, ioht_dir_setup, test, ioht_dir_teardown). */
typedef struct {
    char *dir;
} IohtDir;
void ioht_dir_setup(IohtDir *fx, gconstpointer data);
void ioht_dir_teardown(IohtDir *fx, gconstpointer data);
/* g_test_add() of @test with that fixture. */
void ioht_dir_add(const char *path, gconstpointer data,
                  void (*test)(IohtDir *fx, gconstpointer data));
/* @name inside the fixture's folder (free it). */
char *ioht_dir_path(const IohtDir *fx, const char *name);

/* ---- spawning (ioh-test-spawn.c): the one way tests start a program ---- */

typedef struct {
    const char *const *argv;   /* the whole argv (argv[0] a path) ... */
    const char *const *args;   /* ... or the helper's arguments after argv[0] */
    const char *const *env;    /* NULL: this process's */
    int in_fd, out_fd;         /* the child's 0 and 1; -1: /dev/null */
    int err_fd;                /* the child's 2; 0 or -1: a pipe, IohtChild.err_fd */
    const int *extra_fds;      /* passed on ... */
    const int *extra_targets;  /* ... at these numbers (NULL: the same numbers) */
    int n_extra;
    guint64 fsize_limit;       /* RLIMIT_FSIZE; 0: unlimited */
    gboolean leave_fds_open;   /* else every other fd is closed */
    GSpawnChildSetupFunc setup;  /* run in the child last (e.g. drop privileges) */
    gpointer setup_data;
    const char *helper;        /* with @args: this binary instead of ioht_helper_path() */
} IohtSpawn;

typedef struct {
    GPid pid;
    int err_fd;                /* read end of the child's stderr, or -1 */
    void (*before_reap)(gpointer data);  /* run once stderr is at EOF, before waiting */
    gpointer before_reap_data;
} IohtChild;

typedef struct {
    int status;                /* wait status */
    int code;                  /* exit code, or 128 + signal */
    char *err;                 /* all the child wrote on stderr ("" when not collected) */
    struct rusage ru;
} IohtResult;

IohtChild ioht_spawn(const IohtSpawn *s);
/* The same without aborting: FALSE with @error when the program cannot be started. */
gboolean ioht_try_spawn(const IohtSpawn *s, IohtChild *ret_child, GError **error);
/* ioht_try_spawn(), then waits: *ret_status and *ret_stderr (free it) on TRUE. */
gboolean ioht_try_spawn_wait(const IohtSpawn *s, int *ret_status, char **ret_stderr,
                             GError **error);
/* Reads the child's stderr to EOF, then reaps it. */
void ioht_child_wait(IohtChild *c, IohtResult *r);
void ioht_result_clear(IohtResult *r);
/* Spawns @s, waits, returns the wait status; *ret_stderr (if not NULL) gets stderr. */
int ioht_spawn_wait(const IohtSpawn *s, char **ret_stderr);
/* Runs @argv (stdin /dev/null) and returns its exit code; *ret_stdout gets its stdout. */
int ioht_run_output(char **argv, char **ret_stdout);

/* Waits up to @timeout_ms for @pid; on timeout kills it (SIGKILL), reaps it and returns
 * FALSE. *ret_status gets the wait status either way. */
gboolean ioht_wait_timeout(GPid pid, guint timeout_ms, int *ret_status);
/* Exit code of @pid, waited for up to IOHT_WAIT_MS (a hang fails the test). */
#define IOHT_WAIT_MS 60000
int ioht_wait_exit_code(GPid pid);

/* ---- pumps (ioh-test-pump.c): a producer or consumer on a pipe, like QEMU ---- */

#define IOHT_STALL_HELD G_MAXUINT    /* stall_ms: until ioht_pump_release() */

typedef struct {
    const char *path;          /* feed: this file's bytes; drain: write them here */
    const void *data;          /* feed: these @len bytes when @path is NULL */
    gsize len;
    GByteArray *keep;          /* drain: append what was read here too */
    guint64 max;               /* at most this many bytes; 0: to the end */
    guint delay_ms;            /* sleep before the first byte */
    guint64 stall_at;          /* with @stall_ms: pause once this many bytes moved */
    guint stall_ms;            /* how long, or IOHT_STALL_HELD */
    gboolean vary_pieces;      /* feed: writes of 1, 2, ... 4093 bytes, not 1 MiB */
    gboolean strict;           /* feed: a failing write fails the test (else EPIPE stops) */
    gboolean keep_open;        /* threads: leave the fd open at the end (else closed) */
} IohtPumpOpts;

typedef struct IohtPump IohtPump;
/* Feeds or drains @fd from a new thread as @o says (NULL: the whole file or bytes), then
 * closes @fd unless o->keep_open. */
IohtPump *ioht_feed_start(int fd, const IohtPumpOpts *o);
IohtPump *ioht_drain_start(int fd, const IohtPumpOpts *o);
/* Ends an IOHT_STALL_HELD stall. */
void ioht_pump_release(IohtPump *p);
/* Joins the thread: the bytes moved; *ret_ok FALSE when a feed met EPIPE. */
guint64 ioht_pump_join(IohtPump *p, gboolean *ret_ok);

/* The same in this thread, leaving @fd open: FALSE when a write met EPIPE; bytes read. */
gboolean ioht_feed(int fd, const IohtPumpOpts *o);
guint64 ioht_drain(int fd, const IohtPumpOpts *o);
/* The common cases: the whole of @src into @fd; @fd to EOF into a new file @dst. */
gboolean ioht_feed_file(const char *src, int fd);
guint64 ioht_drain_to_file(int fd, const char *dst);

/* ---- shell command lines (ioh-test-sh.c) ---- */

/* Runs `bash -c` with pipefail, $H the helper and $W @dir (the working directory), on the
 * command made from @fmt; returns the exit code, the stderr in *@ret_err (may be NULL). */
int ioht_sh(const char *dir, char **ret_err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* ioht_sh() with the command inside @slow's throttle (ioht_throttle_new()). */
typedef struct IohtThrottle IohtThrottle;
int ioht_sh_throttled(const char *dir, IohtThrottle *slow, char **ret_err, const char *fmt,
                      ...) G_GNUC_PRINTF(4, 5);

/* The size of @name in @dir (asserted to exist). */
gsize ioht_sh_file_size(const char *dir, const char *name);

/* The JSON object on the last line of @err (--stats=json), parsed by @parser. */
typedef struct _JsonObject JsonObject;
typedef struct _JsonParser JsonParser;
JsonObject *ioht_sh_last_json(const char *err, JsonParser *parser);

/* ---- placement (ioh-test-cpus.c) ---- */

/* Every task of process @pid as "TID:CPUS" (its Cpus_allowed_list in /proc), once it has
 * @want tasks or @timeout_ms passed (threads and io_uring workers start with the data). */
GPtrArray *ioht_tasks_cpus(GPid pid, guint want, guint timeout_ms);
/* Fails unless every task of @pid (waiting up to 10 s for @want of them) may run on
 * exactly @cpus ("0", "0-1"). */
void ioht_assert_tasks_on(GPid pid, guint want, const char *cpus);
/* The last CPU this thread may use and the list of all (as /proc writes it); FALSE, the
 * test skipped saying why, when it may use one only. */
gboolean ioht_two_cpus(char **ret_last, char **ret_all);

/* ---- age key pairs (ioh-test-age.c) ---- */

/* TRUE when age and age-keygen are installed; else marks the test skipped, saying why. */
gboolean ioht_skip_unless_age(void);

typedef struct {
    char *file;        /* the identity file (mode 0600) */
    char *recipient;   /* its public key, age1... */
    char *secret;      /* its AGE-SECRET-KEY-1... line: what must never be shown */
} IohtAgeKey;

/* A new key pair made by age-keygen at @path. */
IohtAgeKey ioht_age_key_new(const char *path);
void ioht_age_key_clear(IohtAgeKey *k);

/* ---- a real NBD server (ioh-test-nbdkit.c) ---- */

/* Starts `nbdkit --unix SOCK -P DIR/nbdkit.pid PLUGIN ARGS...` (@plugin_args, NULL-
 * terminated) and waits until it serves (it goes to the background then). The daemon's
 * pid (not our child: end it with kill(SIGKILL), no waitpid), or 0 with the test skipped
 * when nbdkit is not installed. */
GPid ioht_nbdkit_start(const char *dir, const char *sock, const char *const *plugin_args);

/* ---- another user (ioh-test-nobody.c) ---- */

#define IOHT_NOBODY 65534

/* The child setup that drops to nobody (no supplementary groups), or exits 126. */
void ioht_drop_to_nobody(gpointer unused);

typedef struct {
    char *dir;       /* a new folder of mode 0755 outside the tree (in $TMPDIR or /tmp) */
    char *helper;    /* a copy of the helper in it, which nobody was seen to run */
} IohtNobody;

/* For a test that runs the helper as nobody: the tree may be out of nobody's reach (a
 * build under /root, or a home of mode 0700), so the helper (with the private core beside
 * it in the build tree) is copied to @nb->dir and
 * `--version` run there as nobody. FALSE after g_test_skip() with the reason (not root;
 * nobody cannot run the copy, e.g. a shared library of its own not from the system):
 * the test then returns. Files nobody must reach go in @nb->dir too. */
gboolean ioht_nobody_setup(IohtNobody *nb);
/* Removes the folder and the copy (and what the test put there). */
void ioht_nobody_clear(IohtNobody *nb);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(IohtNobody, ioht_nobody_clear)

/* ---- a slow disk (ioh-test-throttle.c) ---- */

typedef struct IohtThrottle IohtThrottle;
/* A cgroup-v1 blkio cgroup limiting writes to the disk holding @dir to @mbps MB/s for the
 * programs started in it (IohtSpawn.setup = ioht_throttle_enter, .setup_data = it). NULL,
 * with the reason in *ret_why (free it), where there is none: not root, no cgroup v1
 * blkio, @dir not on a block device. */
IohtThrottle *ioht_throttle_new(const char *dir, guint mbps, char **ret_why);
/* The child setup: the child enters the cgroup (or exits with 125). */
void ioht_throttle_enter(gpointer throttle);
/* Removes the cgroup, once the programs started in it are gone. NULL is fine. */
void ioht_throttle_free(IohtThrottle *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohtThrottle, ioht_throttle_free)

G_END_DECLS
