/* ioh-budget.c - a host-wide memory budget for buffers: lease files under flock
 * (ioh-budget.h) */
#include "ioh-budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-number.h"
#include "ioh-untrusted.h"

struct _IohBudget {
    guint64 limit;
    guint64 held;
    char *dir;
    char *lease;             /* DIR/PID.lease */
    guint64 start_time;      /* ours, from /proc/self/stat */
    gboolean joined;         /* our lease exists (from the first take until the end) */
};

/* Field 22 of /proc/PID/stat (clock ticks since boot): with the pid, names one process.
 * 0 when the process does not exist. */
static guint64
proc_start_time(long pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%ld/stat", pid);
    g_autofree char *text = NULL;
    const char *p;
    guint64 v = 0;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return 0;
    }
    p = strrchr(text, ')');    /* the command name may hold spaces and parentheses */
    for (int field = 2; p && field < 22; field++) {
        p = strchr(p + 1, ' ');
    }
    if (p) {
        v = g_ascii_strtoull(p + 1, NULL, 10);
    }
    return v;
}

static const char *
rundir_or_default(const char *rundir)
{
    const char *env = g_getenv("IOHELPER_RUNDIR");

    return rundir ? rundir : env && *env ? env : IOH_BUDGET_RUNDIR;
}

IohBudget *
ioh_budget_new(guint64 limit, const char *rundir)
{
    IohBudget *b = g_new0(IohBudget, 1);

    b->limit = limit;
    b->dir = g_strdup(rundir_or_default(rundir));
    b->lease = g_strdup_printf("%s/%ld.lease", b->dir, (long)getpid());
    b->start_time = proc_start_time((long)getpid());
    return b;
}

/* How long a helper waits for the lock (ms): it is held for microseconds, but anyone who
 * can open the file can hold it (the directory is shared by every user, tmpfiles.d/
 * iohelper.conf), and a save must never hang on it: past this, it goes on without. After
 * such a miss, for BUDGET_LOCK_BACKOFF_S, it only tries (a --fadvise save looks every
 * 100 ms: it must not wait each time). */
#define BUDGET_LOCK_WAIT_MS 100
#define BUDGET_LOCK_BACKOFF_S 10

/* 1 + the monotonic second of the last miss; 0: none yet. */
static gint budget_missed;

/* flock(LOCK_EX) of @fd, waiting as said above: FALSE when not had. */
static gboolean
budget_flock(int fd, const char *path)
{
    gint now_s = (gint)(g_get_monotonic_time() / G_USEC_PER_SEC);
    gint missed = g_atomic_int_get(&budget_missed);
    int wait_ms = missed && now_s - (missed - 1) < BUDGET_LOCK_BACKOFF_S ? 0
                                                                         : BUDGET_LOCK_WAIT_MS;

    for (int waited = 0;; waited++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return TRUE;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            g_debug("budget: flock %s: %s", path, g_strerror(errno));
            return FALSE;
        }
        if (waited >= wait_ms) {
            g_debug("budget: %s held by another process (waited %d ms), going on without",
                    path, wait_ms);
            g_atomic_int_set(&budget_missed, now_s + 1);
            return FALSE;
        }
        g_usleep(1000);
    }
}

/* @dir opened for openat() as ioh_untrusted_dir_open() says (with @make, made first when
 * absent: sticky and world-writable, every user's helpers add leases); -1 when it cannot
 * be used. */
static int
budget_dir_open(const char *dir, gboolean make)
{
    g_autoptr(GError) err = NULL;
    gboolean made = make && mkdir(dir, 01777) == 0;
    int fd = ioh_untrusted_dir_open(dir, &err);

    if (fd < 0) {
        g_debug("budget: %s, nothing beyond the floor", err->message);
        return -1;
    }
    if (made) {
        fchmod(fd, 01777);    /* past the umask */
    }
    return fd;
}

/* DIR/lock (@dirfd), opened for flock: made here when absent (then 0666, past the umask:
 * every user's helper opens it), else opened as an untrusted file, a regular file of one
 * link, and never changed (fchmod of whatever stood there made a hard link to a 0600 file
 * of root's 0666). Read-only when it is not writable: flock needs no more. -1 when it
 * cannot be had: a FIFO or any other planted file leaves the budget unused, never hangs. */
static int
lock_open(int dirfd, const char *dir)
{
    g_autoptr(GError) err = NULL;
    int fd = openat(dirfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);

    if (fd >= 0) {
        fchmod(fd, 0666);
        return fd;
    }
    if (errno != EEXIST) {
        ioh_error_set_errno(&err, errno, "create", "lock");
    } else {
        fd = ioh_untrusted_open(dirfd, "lock", O_RDWR, IOH_UNTRUSTED_ONE_LINK, &err);
    }
    if (fd < 0 && g_error_matches(err, IOH_ERROR, EACCES)) {
        g_clear_error(&err);
        fd = ioh_untrusted_open(dirfd, "lock", O_RDONLY, IOH_UNTRUSTED_ONE_LINK, &err);
    }
    if (fd < 0) {
        g_debug("budget: %s: %s, nothing beyond the floor", dir, err->message);
    }
    return fd;
}

/* The lock of @dir, created (with @dir) if need be, and flock()ed; -1 when it cannot be
 * had. Nothing in @dir is trusted: it is shared (ioh-budget.h). */
static int
budget_lock(const char *dir)
{
    g_autofree char *path = g_strdup_printf("%s/lock", dir);
    int dirfd = budget_dir_open(dir, TRUE);
    int fd = dirfd < 0 ? -1 : lock_open(dirfd, dir);

    ioh_fd_clear(&dirfd);
    if (fd >= 0 && !budget_flock(fd, path)) {
        ioh_fd_clear(&fd);
    }
    return fd;
}

/* At most a lease's bytes, "PID START BYTES\n" (63 at most), and room to spare. */
#define LEASE_MAX 128

/* TRUE for a refusal of ioh_untrusted_read() that says the entry is no lease: a symbolic
 * link, not a regular file (ENXIO: a socket), several links, too large. */
static gboolean
not_a_lease(const GError *err)
{
    static const int codes[] = { ELOOP, EINVAL, ENXIO, EMLINK, EFBIG };

    for (gsize i = 0; i < G_N_ELEMENTS(codes); i++) {
        if (g_error_matches(err, IOH_ERROR, codes[i])) {
            return TRUE;
        }
    }
    return FALSE;
}

/* @text parsed as a lease, "PID START BYTES" and an optional newline, each a decimal
 * number and nothing else (sscanf's %lu took "-1" for 2^64 - 1, and a sum of such bytes
 * wrapped: two leases of 2^63 summed to 0 and made the budget look free): TRUE and the
 * fields into @ret_pid, @ret_start, @ret_bytes. */
static gboolean
lease_parse(const char *text, long *ret_pid, guint64 *ret_start, guint64 *ret_bytes)
{
    g_auto(GStrv) f = g_strsplit(text, " ", 4);
    gsize len = strlen(text);
    guint64 pid = 0;

    if (len > 0 && text[len - 1] == '\n') {
        g_strchomp(f[g_strv_length(f) - 1]);
    }
    if (g_strv_length(f) != 3 || !ioh_number_unsigned(f[0], 10, 1, G_MAXINT32, &pid) ||
        !ioh_number_unsigned(f[1], 10, 1, G_MAXUINT64, ret_start) ||
        !ioh_number_unsigned(f[2], 10, 0, G_MAXUINT64, ret_bytes)) {
        return FALSE;
    }
    *ret_pid = (long)pid;
    return TRUE;
}

/* Whether @text is the lease of a live process: its bytes into *@ret_bytes, its pid (when
 * it names one) into *@ret_pid. */
static gboolean
lease_parse_live(const char *text, guint64 *ret_bytes, long *ret_pid)
{
    guint64 start = 0;

    *ret_bytes = 0;
    if (!lease_parse(text, ret_pid, &start, ret_bytes)) {
        return FALSE;
    }
    return (kill((pid_t)*ret_pid, 0) == 0 || errno == EPERM) &&
           proc_start_time(*ret_pid) == start;
}

/* The bytes of the lease @name in @dirfd (@dir) when its process lives (and *@live, when
 * given, says which). Read as an untrusted file: anything else than a live lease (dead,
 * not a lease at all: a FIFO, a link, a huge file) counts for nothing and is removed,
 * which only its owner or root can do (sticky @dir). Removal takes the name alone
 * (unlinkat): never a file a link points to, nor a directory. An entry that cannot be read
 * for another reason (gone, unreadable) is left alone. */
static guint64
lease_bytes_live(int dirfd, const char *dir, const char *name, gboolean *ret_live)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *text = ioh_untrusted_read(dirfd, name, LEASE_MAX,
                                               IOH_UNTRUSTED_ONE_LINK, NULL, &err);
    guint64 bytes = 0;
    long pid = 0;
    gboolean live = text && lease_parse_live(text, &bytes, &pid);

    if (ret_live) {
        *ret_live = live;
    }
    if (live) {
        return bytes;
    }
    if (text) {
        g_debug("budget: lease %s/%s is dead (pid %ld): removed", dir, name, pid);
    } else if (not_a_lease(err)) {
        g_debug("budget: %s: %s: no lease, removed", dir, err->message);
    } else {
        return 0;
    }
    unlinkat(dirfd, name, 0);
    return 0;
}

/* The most entries a lease directory may hold to be used. Each entry costs an open under
 * the lock, and another user can fill the directory with entries no helper can remove
 * (directories named PID.fadvise: 50,000 of them made a 64 MiB --fadvise save of root's
 * take 16 s instead of 0.1 s, each look at the marks, every 100 ms, a scan of them all;
 * at this bound a look costs a few ms). It leaves room for 250 helpers at once, each with
 * a lease and a mark; past it the directory is not used (as when it cannot be read): each
 * helper keeps to its floor, a --fadvise save counts itself alone. */
#define BUDGET_DIR_ENTRIES_MAX 512

/* The sum of the live leases @dir holds under the names ending in @suffix, but @skip
 * (ours), and their number into *@ret_live when given; the lock is held. -1 when the
 * directory cannot be read or holds more than BUDGET_DIR_ENTRIES_MAX entries. */
static gint64
sum_live(const char *dir, const char *suffix, const char *skip, guint *ret_live)
{
    int dirfd = budget_dir_open(dir, FALSE);
    DIR *d = dirfd < 0 ? NULL : fdopendir(dirfd);
    struct dirent *e;
    guint64 sum = 0, bytes;
    guint n = 0, entries = 0;
    gboolean live;

    if (!d) {
        ioh_fd_clear(&dirfd);
        return -1;
    }
    while ((e = readdir(d)) && ++entries <= BUDGET_DIR_ENTRIES_MAX) {
        if (g_str_has_suffix(e->d_name, suffix) && (!skip || !g_str_equal(e->d_name, skip))) {
            bytes = lease_bytes_live(dirfd, dir, e->d_name, &live);
            /* Saturated: a sum that wrapped would make the budget look free. */
            if (!g_uint64_checked_add(&sum, sum, bytes)) {
                sum = G_MAXUINT64;
            }
            n += live;
        }
    }
    closedir(d);
    if (entries > BUDGET_DIR_ENTRIES_MAX) {
        g_debug("budget: %s holds more than %d entries, nothing beyond the floor", dir,
                BUDGET_DIR_ENTRIES_MAX);
        return -1;
    }
    if (ret_live) {
        *ret_live = n;
    }
    return (gint64)MIN(sum, (guint64)G_MAXINT64);
}

/* The sum of the live leases of @dir but @skip (our own), and their number into
 * *@ret_live when given; the lock is held. */
static gint64
sum_leases(const char *dir, const char *skip, guint *ret_live)
{
    return sum_live(dir, ".lease", skip, ret_live);
}

/* Replaces @path by @text, whole or not at all for every reader: a new file renamed over.
 * Not synced (g_file_set_contents_full(CONSISTENT) would fsync it): a lease means nothing
 * after a crash, and an fsync under the lock, on a rundir on a disk that the saves keep
 * busy, held the lock past the others' 100 ms (16 saves: 14 of them went on without
 * more buffers). */
static gboolean
replace_file(const char *path, const char *text)
{
    g_autofree char *tmp = g_strdup_printf("%s.XXXXXX", path);
    gsize len = strlen(text);
    int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
    gboolean ok;

    if (fd < 0) {
        return FALSE;
    }
    ok = write(fd, text, len) == (gssize)len;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        g_debug("budget: %s: %s", path, g_strerror(errno));
        unlink(tmp);
    }
    return ok;
}

/* Writes our lease, whole or not at all: a new file renamed over. A lease of 0 bytes
 * stays while we use the budget: it counts us in the fair share. */
static gboolean
write_lease(IohBudget *b, guint64 bytes)
{
    g_autofree char *text = NULL;

    text = g_strdup_printf("%ld %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n",
                           (long)getpid(), b->start_time, bytes);
    return replace_file(b->lease, text);
}

/* A helper's fair share of the budget when @live helpers use it: budget / live, rounded
 * up to whole @unit pieces (so that a budget smaller than one piece per helper still
 * serves some), at least one piece. */
static guint64
fair_share(const IohBudget *b, guint live, guint64 unit)
{
    guint64 share = b->limit / MAX(live, 1);

    return MAX((share + unit - 1) / unit, 1) * unit;
}

guint64
ioh_budget_take(IohBudget *b, guint64 want, guint64 unit)
{
    g_autofree char *self = g_path_get_basename(b->lease);
    int lock = budget_lock(b->dir);
    guint64 room = 0, got = 0, share = 0;
    guint live = 0;
    gint64 others;

    if (lock < 0) {
        return 0;
    }
    unit = MAX(unit, 1);
    others = b->start_time ? sum_leases(b->dir, self, &live) : -1;
    share = fair_share(b, live + 1, unit);
    if (others >= 0 && (guint64)others + b->held < b->limit && b->held < share) {
        room = MIN(b->limit - (guint64)others - b->held, share - b->held);
        got = MIN(want, room) / unit * unit;
    }
    if (others >= 0 && (got > 0 || !b->joined) && !write_lease(b, b->held + got)) {
        got = 0;
    } else if (others >= 0) {
        b->joined = TRUE;
    }
    b->held += got;
    g_debug("budget: took %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes asked (others "
            "hold %" G_GINT64_FORMAT ", %u helpers, fair share %" G_GUINT64_FORMAT ", budget %"
            G_GUINT64_FORMAT "), holding %" G_GUINT64_FORMAT, got, want, others, live + 1,
            share, b->limit, b->held);
    close(lock);
    return got;
}

void
ioh_budget_give(IohBudget *b, guint64 bytes)
{
    int lock;

    bytes = MIN(bytes, b->held);
    if (bytes == 0) {
        return;
    }
    lock = budget_lock(b->dir);
    /* Without the lock the lease is rewritten anyway: smaller is always safe. */
    if (write_lease(b, b->held - bytes)) {
        b->held -= bytes;
    }
    g_debug("budget: gave back %" G_GUINT64_FORMAT " bytes, holding %" G_GUINT64_FORMAT,
            bytes, b->held);
    if (lock >= 0) {
        close(lock);
    }
}

guint64
ioh_budget_held(const IohBudget *b)
{
    return b->held;
}

guint64
ioh_budget_limit(const IohBudget *b)
{
    return b->limit;
}

gint64
ioh_budget_sum(const char *rundir)
{
    const char *dir = rundir_or_default(rundir);
    int lock = budget_lock(dir);
    gint64 sum;

    if (lock < 0) {
        return -1;
    }
    sum = sum_leases(dir, NULL, NULL);
    close(lock);
    return sum;
}

/* The live marks (DIR/PID.fadvise) of @dir, dead ones removed; the lock is held. */
static guint
count_marks(const char *dir)
{
    guint n = 0;

    sum_live(dir, ".fadvise", NULL, &n);
    return n;
}

guint
ioh_budget_fadvise_saves(const char *rundir, gboolean join)
{
    const char *dir = rundir_or_default(rundir);
    g_autofree char *mark = g_strdup_printf("%s/%ld.fadvise", dir, (long)getpid());
    g_autofree char *text = NULL;
    guint64 start = proc_start_time((long)getpid());
    int lock = budget_lock(dir);
    guint n;

    if (lock < 0 || start == 0) {
        if (lock >= 0) {
            close(lock);
        }
        return 1;
    }
    if (join) {
        text = g_strdup_printf("%ld %" G_GUINT64_FORMAT " 0\n", (long)getpid(), start);
        replace_file(mark, text);
    }
    n = count_marks(dir);
    close(lock);
    return MAX(n, 1);
}

void
ioh_budget_fadvise_leave(const char *rundir)
{
    g_autofree char *mark = g_strdup_printf("%s/%ld.fadvise", rundir_or_default(rundir),
                                            (long)getpid());

    unlink(mark);
}

void
ioh_budget_free(IohBudget *b)
{
    if (!b) {
        return;
    }
    /* Removing the lease gives everything back at once: smaller is always safe. */
    if (b->joined && unlink(b->lease) < 0 && errno != ENOENT) {
        g_debug("budget: %s: %s", b->lease, g_strerror(errno));
    }
    g_free(b->dir);
    g_free(b->lease);
    g_free(b);
}
