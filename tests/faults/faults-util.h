/* faults-util.h - what the fault tests share: spawning the real iohelper with the fault
 * shim, feeding and draining its pipe from threads, small file systems, and the counts
 * the suite reports (faults injected, bad inputs tried, data lost). */
#pragma once

#include <glib.h>
#include "ioh-test.h"
#include <sys/resource.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef struct {
    const char *const *args;   /* NULL-terminated, after argv[0] */
    int in_fd, out_fd;         /* the child's 0 and 1; -1: /dev/null */
    const int *extra_fds;      /* passed on ... */
    const int *extra_targets;  /* ... at these numbers (NULL: the same numbers) */
    int n_extra;
    const char *fault;         /* IOH_FAULT; LD_PRELOADs the shim when not NULL */
    const char *fault_path;    /* IOH_FAULT_PATH */
    const char *fault_fds;     /* IOH_FAULT_FD (NULL: none) */
    const char *fault_log;     /* IOH_FAULT_LOG (default: a file in the work dir) */
    const char *fault_trace;   /* IOH_FAULT_TRACE */
    guint64 fsize_limit;       /* RLIMIT_FSIZE; 0: unlimited */
} FtSpawn;

typedef IohtChild FtChild;
typedef IohtResult FtResult;

void ft_result_clear(FtResult *r);

/* $ASAN_OPTIONS plus verify_asan_link_order=0, for a process under LD_PRELOAD. */
const char *ft_asan_options(void);

/* Starts the real iohelper as @s says (every other fd closed). */
FtChild ft_spawn(const FtSpawn *s);
/* Waits for it and collects stderr. */
void ft_wait(FtChild *c, FtResult *r);

/* TRUE when @err is exactly one line starting "iohelper: " (and says so otherwise). */
gboolean ft_one_line(const char *err);

/* A pipe with both ends O_CLOEXEC, raised to 1 MiB. */
void ft_pipe(int fds[2]);

/* Writes @path's bytes (up to @max, G_MAXUINT64: all) into @fd from a thread, pausing
 * @stall_ms after @stall_at bytes when @stall_ms > 0, then closes @fd unless @keep_open.
 * Stops quietly at EPIPE. ft_feed_join() returns the bytes written. */
typedef IohtPump FtFeed;
FtFeed *ft_feed_start(int fd, const char *path, guint64 max, guint64 stall_at,
                      guint stall_ms, gboolean keep_open);
guint64 ft_feed_join(FtFeed *f);

/* Reads @fd into @path (NULL: discard) from a thread until EOF, or until @max bytes when
 * @max != G_MAXUINT64, then closes @fd. Pauses @stall_ms after @stall_at bytes. */
typedef IohtPump FtDrain;
FtDrain *ft_drain_start(int fd, const char *path, guint64 max, guint64 stall_at,
                        guint stall_ms);
guint64 ft_drain_join(FtDrain *d);

/* Runs a save (pipe -> @dst) or a restore (@src -> pipe): the common cases. @how (may be
 * NULL) gives the fault, trace and limits; its args and fds are ignored, and its
 * fault_path defaults to the image. *ret_moved gets the bytes fed or drained. */
void ft_save(const char *src, const char *dst, const char *const *opts, const FtSpawn *how,
             FtResult *r, guint64 *ret_moved);
void ft_restore(const char *src, const char *dst, const char *const *opts,
                const FtSpawn *how, FtResult *r, guint64 *ret_moved);

/* Bytes @a and @b have in common at the start: TRUE when the first @len are equal. */
gboolean ft_prefix_equal(const char *a, const char *b, guint64 len);

/* A field of /proc/PID/status in KiB (VmRSS, VmHWM), or -1. */
gint64 ft_proc_status_kib(GPid pid, const char *field);

/* The targets of /proc/PID/fd/N, as "N -> target" lines sorted by N. */
char *ft_proc_fds(GPid pid);

/* Waits until @path holds at least @size bytes (up to 20 s); FALSE on timeout. */
gboolean ft_wait_file_size(const char *path, guint64 size);

/* Lines in the shim's log of this process's runs (each an injected fault); resets it. */
guint ft_faults_logged(void);

/* Mounts a tmpfs (or ext4 on a loop device when @ext4) of @size bytes in a new folder of
 * the work dir. Returns NULL (after g_test_skip) when not root or mounting fails. */
char *ft_mount(const char *workdir, guint64 size, gboolean ext4);
void ft_umount(char *dir);

/* Fills @dir's file system with a file until ENOSPC; returns its path. */
char *ft_fill(const char *dir, const char *name);

guint64 ft_file_size(const char *path);

/* Makes $IOHELPER_PATH the iohelper-faulty wrapper, which runs @real_helper under the
 * shim with @fault on @path (the log in the work dir): for code that spawns the helper
 * itself (libwrap, qemu-glue). The caller puts $IOHELPER_PATH back. */
void ft_use_faulty_helper(const char *fault, const char *path, const char *real_helper);

/* A new file @name of @size random bytes (from @seed) in the work dir: its path. */
char *ft_make_source(const char *name, guint64 size, guint32 seed);

/* The same, mixed like a guest's RAM: every fourth MiB random, the rest text lines (zstd
 * level 1 stores about 0.35 of it): a compressed save writes zstd's own frames and raw
 * ones in turn. */
char *ft_make_mixed_source(const char *name, guint64 size, guint32 seed);

/* A new age identity in the work dir (age-keygen, mode 0600): its path, and
 * "--recipient=age1..." in *@ret_recipient; NULL (and nothing set) without age-keygen. */
char *ft_age_keygen(char **ret_recipient);

/* The suite's totals, printed at the end by ft_report(). */
extern guint ft_total_faults;
extern guint ft_total_bad_inputs;
extern guint ft_total_data_loss;
void ft_count_faults(guint n);
void ft_report(void);

/* The per-process work folder (created on first use, removed by ft_cleanup). */
const char *ft_workdir(void);
void ft_cleanup(void);

G_END_DECLS
