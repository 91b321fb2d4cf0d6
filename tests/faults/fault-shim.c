/* fault-shim.c - LD_PRELOAD fault injection for the iohelper tests (never installed)
 *
 * Configured by the environment of the process it is preloaded into:
 *
 *   IOH_FAULT_PATH   which fds are faulted: '|'-separated substrings matched against
 *                    readlink(/proc/self/fd/N), e.g. "/work/x/image|pipe:". Without it
 *                    (and without IOH_FAULT_FD) the shim does nothing.
 *   IOH_FAULT_FD     or: a ','-separated list of fd numbers.
 *   IOH_FAULT        ','-separated rules OP:WHEN:WHAT
 *                      OP    read write pread pwrite readv writev splice copy_file_range
 *                            sendfile fdatasync fsync close sync_file_range fallocate
 *                            ftruncate io_uring_submit io_uring_setup fadvise
 *                            (posix_fadvise) readahead
 *                            mmap (a mapping of a matching file; anonymous memory never),
 *                            or "any" for every I/O call; splice also matches rules on
 *                            write (into a matching fd) and read (out of one): see splice();
 *                            writev (pwritev...) also matches rules on write;
 *                            the engine's io_uring reads and writes match rules on
 *                            read and write (ioh_fault_uring() below)
 *                    (the first rule that matches a call wins)
 *                      WHEN  N     the Nth matching call of OP (counted from 1)
 *                            N+    the Nth and every later one
 *                            %K    every Kth (K, 2K, 3K, ...); "every" is %1
 *                            @OFF  the first call whose bytes cover file offset OFF
 *                                  (K, M, G suffixes): "write:@5M:EIO" fails the write that
 *                                  reaches 5 MiB into the file, however the engine
 *                                  splits or coalesces its I/O (the position is the fd's
 *                                  offset, or for a pipe the bytes moved so far)
 *                            unaligned  every call moving a length that is not a
 *                                  multiple of 4096 (the tail of an O_DIRECT stream)
 *                      WHAT  an errno name (EIO ENOSPC EDQUOT EFBIG EINTR EAGAIN EPIPE
 *                            EBADF EINVAL EROFS ENOMEM) or number: the call fails with it
 *                            and does nothing; except close, which closes and then fails
 *                            (as NFS does); "short": read/write move half the bytes (a
 *                            multiple of 4096 when that is >= 4096), at least one byte;
 *                            on an O_DIRECT fd whole O_DIRECT blocks only, else the
 *                            call is left alone (what a real kernel can do: short_len());
 *                            "stallMS": sleep MS milliseconds, then make the call.
 *   IOH_FAULT_LOG    a file: one line appended per injected fault ("fault write#5 EIO").
 *   IOH_FAULT_TRACE  a file: one line appended per matching call with its result
 *                    ("write fd=4 len=1048576 ret=1048576"), faulted or not.
 *
 * Only calls on matching fds count, so a test that names the image file gets the same
 * faults whatever else the helper does. Counters are atomic (the engine may use threads).
 * The log files are opened per line and closed again, so the shim holds no fd of its own.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* We define both pread and pread64 (etc.): keep the headers from renaming one to the other.
 * off_t is 64 bits on every 64-bit target anyway. */
#undef _FILE_OFFSET_BITS
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULES 16
#define MIN_LEN(a, b) ((size_t)(a) < (size_t)(b) ? (size_t)(a) : (size_t)(b))
#define MAX_PATTERNS 8
#define MAX_FDS 16

enum {
    OP_READ, OP_WRITE, OP_PREAD, OP_PWRITE, OP_READV, OP_WRITEV, OP_SPLICE,
    OP_COPY_FILE_RANGE, OP_SENDFILE, OP_FDATASYNC, OP_FSYNC, OP_CLOSE, OP_SYNC_FILE_RANGE,
    OP_FALLOCATE, OP_FTRUNCATE, OP_IO_URING_SUBMIT, OP_FADVISE, OP_READAHEAD, OP_MMAP, OP_IO_URING_SETUP,
    OP_COUNT,
    OP_ANY = OP_COUNT,
};

static const char *const op_names[OP_COUNT] = {
    "read", "write", "pread", "pwrite", "readv", "writev", "splice",
    "copy_file_range", "sendfile", "fdatasync", "fsync", "close", "sync_file_range",
    "fallocate", "ftruncate", "io_uring_submit", "fadvise", "readahead", "mmap", "io_uring_setup",
};

typedef enum { WHEN_NTH, WHEN_FROM, WHEN_EVERY, WHEN_UNALIGNED, WHEN_AT } When;

typedef struct {
    int op;
    When when;
    unsigned long n;
    int err;        /* errno to fail with; 0 with is_short or stall_ms */
    int is_short;
    unsigned stall_ms;
    unsigned long long at;   /* WHEN_AT: the file offset */
    int fired;               /* WHEN_AT fires once */
} Rule;

static Rule rules[MAX_RULES];
static int n_rules;
static char *patterns[MAX_PATTERNS];
static int n_patterns;
static int fds[MAX_FDS];
static int n_fds;
static unsigned long counters[OP_COUNT];
static unsigned long long moved[OP_COUNT];   /* bytes moved by matching calls (pipes) */
static const char *log_path;
static const char *trace_path;
static int active;

static const struct {
    const char *name;
    int err;
} errnames[] = {
    { "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EFBIG", EFBIG },
    { "EINTR", EINTR }, { "EAGAIN", EAGAIN }, { "EPIPE", EPIPE }, { "EBADF", EBADF },
    { "EINVAL", EINVAL }, { "EROFS", EROFS }, { "ENOMEM", ENOMEM },
};

static const char *
errname(int err)
{
    for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++) {
        if (errnames[i].err == err) {
            return errnames[i].name;
        }
    }
    return "E?";
}

static void
shim_die(const char *what, const char *spec)
{
    char msg[256];
    int len = snprintf(msg, sizeof(msg), "fault-shim: bad %s '%s'\n", what, spec);

    if (len > 0 && syscall(SYS_write, 2, msg, (size_t)len) < 0) {
        /* nothing more to say */
    }
    _exit(99);
}

static void
parse_rule(char *spec)
{
    char *op = spec, *when, *what, *end;
    Rule *r;

    when = strchr(op, ':');
    if (!when) {
        shim_die("rule", spec);
    }
    *when++ = '\0';
    what = strchr(when, ':');
    if (!what) {
        shim_die("rule", spec);
    }
    *what++ = '\0';
    if (n_rules == MAX_RULES) {
        shim_die("rule (too many)", spec);
    }
    r = &rules[n_rules];
    r->op = -1;
    if (strcmp(op, "any") == 0) {
        r->op = OP_ANY;
    }
    for (int i = 0; i < OP_COUNT; i++) {
        if (strcmp(op, op_names[i]) == 0) {
            r->op = i;
        }
    }
    if (r->op < 0) {
        shim_die("operation", op);
    }
    if (strcmp(when, "unaligned") == 0) {
        r->when = WHEN_UNALIGNED;
    } else if (when[0] == '@') {
        r->when = WHEN_AT;
        r->at = strtoull(when + 1, &end, 10);
        switch (*end) {
        case 'K': r->at <<= 10; end++; break;
        case 'M': r->at <<= 20; end++; break;
        case 'G': r->at <<= 30; end++; break;
        default: break;
        }
        if (*end || !isdigit((unsigned char)when[1])) {
            shim_die("WHEN", when);
        }
    } else if (strcmp(when, "every") == 0) {
        r->when = WHEN_EVERY;
        r->n = 1;
    } else if (when[0] == '%') {
        r->when = WHEN_EVERY;
        r->n = strtoul(when + 1, &end, 10);
        if (*end || r->n == 0) {
            shim_die("WHEN", when);
        }
    } else {
        r->n = strtoul(when, &end, 10);
        r->when = WHEN_NTH;
        if (*end == '+') {
            r->when = WHEN_FROM;
            end++;
        }
        if (*end || r->n == 0) {
            shim_die("WHEN", when);
        }
    }
    if (strcmp(what, "short") == 0) {
        r->is_short = 1;
    } else if (strncmp(what, "stall", 5) == 0) {
        r->stall_ms = (unsigned)strtoul(what + 5, &end, 10);
        if (*end || r->stall_ms == 0) {
            shim_die("WHAT", what);
        }
    } else {
        for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++) {
            if (strcmp(what, errnames[i].name) == 0) {
                r->err = errnames[i].err;
            }
        }
        if (!r->err) {
            r->err = (int)strtol(what, &end, 10);
            if (*end || r->err <= 0) {
                shim_die("WHAT", what);
            }
        }
    }
    n_rules++;
}

static char *
keep(char *buf, size_t size, const char *text)
{
    if (strlen(text) >= size) {
        shim_die("setting (too long)", text);
    }
    strcpy(buf, text);
    return buf;
}

__attribute__((constructor)) static void
shim_init(void)
{
    const char *spec = getenv("IOH_FAULT");
    const char *paths = getenv("IOH_FAULT_PATH");
    const char *fdlist = getenv("IOH_FAULT_FD");
    /* Static copies for strtok_r: no allocation for LeakSanitizer to report. */
    static char bufs[3][4096];
    char *copy, *save = NULL, *tok;

    log_path = getenv("IOH_FAULT_LOG");
    trace_path = getenv("IOH_FAULT_TRACE");
    if (paths && *paths) {
        copy = keep(bufs[0], sizeof(bufs[0]), paths);
        for (tok = strtok_r(copy, "|", &save); tok && n_patterns < MAX_PATTERNS;
             tok = strtok_r(NULL, "|", &save)) {
            patterns[n_patterns++] = tok;
        }
    }
    if (fdlist && *fdlist) {
        copy = keep(bufs[1], sizeof(bufs[1]), fdlist);
        save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok && n_fds < MAX_FDS;
             tok = strtok_r(NULL, ",", &save)) {
            fds[n_fds++] = atoi(tok);
        }
    }
    if (spec && *spec) {
        copy = keep(bufs[2], sizeof(bufs[2]), spec);
        save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            parse_rule(tok);
        }
    }
    active = n_patterns > 0 || n_fds > 0;
}

static void *
real(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (!fn) {
        shim_die("symbol", name);
    }
    return fn;
}

#define REAL(name, type) \
    static __typeof__(type) real_##name; \
    if (!real_##name) { \
        real_##name = (type)real(#name); \
    }

static int
fd_matches(int fd)
{
    char link[64], target[PATH_MAX];
    ssize_t n;

    if (!active || fd < 0) {
        return 0;
    }
    for (int i = 0; i < n_fds; i++) {
        if (fds[i] == fd) {
            return 1;
        }
    }
    if (n_patterns == 0) {
        return 0;
    }
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0) {
        return 0;
    }
    target[n] = '\0';
    for (int i = 0; i < n_patterns; i++) {
        if (strstr(target, patterns[i])) {
            return 1;
        }
    }
    return 0;
}

static void
append_line(const char *path, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int len, fd;

    if (!path) {
        return;
    }
    va_start(ap, fmt);
    len = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (len <= 0) {
        return;
    }
    /* Raw syscalls: our own wrappers must not see these. */
    fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                      0644);
    if (fd < 0) {
        return;
    }
    if (syscall(SYS_write, fd, line, (size_t)MIN_LEN(len, sizeof(line) - 1)) < 0) {
        /* a lost log line shows up as a wrong count in the test */
    }
    syscall(SYS_close, fd);
}

/* The fault for the call about to be made, or NULL. Counts the call. */
/* @pos: the file offset the call starts at, or -1 when the fd has none (pipes). */
static const Rule *
next_fault(int op, size_t len, long long pos, unsigned long *ret_nth)
{
    unsigned long nth = __atomic_add_fetch(&counters[op], 1, __ATOMIC_SEQ_CST);
    unsigned long long start = pos >= 0 ? (unsigned long long)pos
                                        : __atomic_fetch_add(&moved[op], len, __ATOMIC_SEQ_CST);

    *ret_nth = nth;
    for (int i = 0; i < n_rules; i++) {
        Rule *r = &rules[i];
        if (r->op != op && r->op != OP_ANY) {
            continue;
        }
        if (r->when == WHEN_AT) {
            if (len > 0 && start <= r->at && r->at < start + len &&
                !__atomic_exchange_n(&r->fired, 1, __ATOMIC_SEQ_CST)) {
                return r;
            }
            continue;
        }
        if ((r->when == WHEN_NTH && nth == r->n) || (r->when == WHEN_FROM && nth >= r->n) ||
            (r->when == WHEN_EVERY && nth % r->n == 0) ||
            (r->when == WHEN_UNALIGNED && len % 4096 != 0)) {
            return r;
        }
    }
    return NULL;
}

static void
log_fault(int op, unsigned long nth, const Rule *r, int fd)
{
    append_line(log_path, "fault %s#%lu %s fd=%d\n", op_names[op], nth,
                r->is_short ? "short" : r->stall_ms ? "stall" : errname(r->err), fd);
}

static void
stall(int op, unsigned long nth, const Rule *r, int fd)
{
    struct timespec ts = { r->stall_ms / 1000, (long)(r->stall_ms % 1000) * 1000000L };

    log_fault(op, nth, r, fd);
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static void
trace(int op, int fd, long long len, long long ret, int err)
{
    if (ret < 0) {
        append_line(trace_path, "%s fd=%d len=%lld ret=-1 errno=%s\n", op_names[op], fd, len,
                    errname(err));
    } else {
        append_line(trace_path, "%s fd=%d len=%lld ret=%lld\n", op_names[op], fd, len, ret);
    }
}

/* The fd's file offset, or -1 (a pipe). lseek is not wrapped. */
static long long
position(int fd)
{
    off_t pos = lseek(fd, 0, SEEK_CUR);

    return pos < 0 ? -1 : (long long)pos;
}

/* The granularity of what an O_DIRECT call on @fd can move: 1 without O_DIRECT. */
static size_t
dio_granule(int fd)
{
    int fl = fcntl(fd, F_GETFL);
#ifdef STATX_DIOALIGN
    struct statx stx;
#endif

    if (fl < 0 || !(fl & O_DIRECT)) {
        return 1;
    }
#ifdef STATX_DIOALIGN
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > 0) {
        return stx.stx_dio_offset_align;
    }
#endif
    return 4096;
}

/* What "short" leaves of a call on @fd moving @len bytes: half (a multiple of 4096 when
 * that is >= 4096), at least one byte; @len itself when no shorter call is one a real
 * kernel could have ended with. The shim shortens the request, and the kernel then moves
 * what it was asked: that stands for a real short transfer only while the shorter request
 * is itself one the kernel takes. On an O_DIRECT fd it is not, below the file system's
 * O_DIRECT granularity (STATX_DIOALIGN's offset alignment, the device's logical block):
 * a block file system completes an O_DIRECT transfer in whole blocks or fails it, so it
 * never returns a short count that leaves the rest at an offset it refuses. Halving an
 * O_DIRECT write down to 256 bytes on a 512-byte device made the kernel refuse the
 * shortened write itself (EINVAL), a failure no real short write can cause, and the test
 * then saw an "O_DIRECT refused" instead of the short write it meant to inject. Lengths
 * that are whole blocks but not multiples of the engine's own alignment (4096) stay: a
 * real kernel can return them, and the engine must take the rest from there. */
static size_t
short_len(int fd, size_t len)
{
    size_t half = len / 2, granule;

    if (half >= 4096) {
        half -= half % 4096;
    }
    granule = len > 1 ? dio_granule(fd) : 1;
    if (granule > 1) {
        half -= half % granule;
        return half ? half : len;
    }
    return half ? half : (len ? 1 : 0);
}

/* The common shape of every byte-moving wrapper: CALL is evaluated with `len` possibly
 * shortened; a fault that is an errno skips the call. */
#define FAULTED_IO(op, fd, lenvar, POS, CALL) \
    do { \
        unsigned long nth_; \
        const Rule *r_; \
        ssize_t ret_; \
        int err_; \
        if (!fd_matches(fd)) { \
            return CALL; \
        } \
        r_ = next_fault(op, (lenvar), (POS), &nth_); \
        if (r_ && r_->stall_ms) { \
            stall(op, nth_, r_, fd); \
            r_ = NULL; \
        } \
        if (r_ && !r_->is_short) { \
            log_fault(op, nth_, r_, fd); \
            trace(op, fd, (long long)(lenvar), -1, r_->err); \
            errno = r_->err; \
            return -1; \
        } \
        if (r_ && r_->is_short && short_len(fd, (lenvar)) < (lenvar)) { \
            log_fault(op, nth_, r_, fd); \
            lenvar = short_len(fd, (lenvar)); \
        } \
        ret_ = CALL; \
        err_ = errno; \
        trace(op, fd, (long long)(lenvar), (long long)ret_, err_); \
        errno = err_; \
        return ret_; \
    } while (0)


ssize_t
read(int fd, void *buf, size_t len)
{
    REAL(read, ssize_t (*)(int, void *, size_t));
    FAULTED_IO(OP_READ, fd, len, position(fd), real_read(fd, buf, len));
}

ssize_t
write(int fd, const void *buf, size_t len)
{
    REAL(write, ssize_t (*)(int, const void *, size_t));
    FAULTED_IO(OP_WRITE, fd, len, position(fd), real_write(fd, buf, len));
}

ssize_t
pread64(int fd, void *buf, size_t len, off_t off)
{
    REAL(pread64, ssize_t (*)(int, void *, size_t, off_t));
    FAULTED_IO(OP_PREAD, fd, len, (long long)off, real_pread64(fd, buf, len, off));
}

ssize_t
pread(int fd, void *buf, size_t len, off_t off)
{
    return pread64(fd, buf, len, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    REAL(pwrite64, ssize_t (*)(int, const void *, size_t, off_t));
    FAULTED_IO(OP_PWRITE, fd, len, (long long)off, real_pwrite64(fd, buf, len, off));
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite64(fd, buf, len, off);
}

/* Vectored calls: "short" keeps the first half of the first vector only. */
static int
shorten_iov(int fd, const struct iovec *iov, int cnt, struct iovec *one)
{
    if (cnt <= 0 || iov[0].iov_len < 2) {
        return 0;
    }
    one->iov_base = iov[0].iov_base;
    one->iov_len = short_len(fd, iov[0].iov_len);
    return one->iov_len < iov[0].iov_len || cnt > 1;
}

static size_t
iov_total(const struct iovec *iov, int cnt)
{
    size_t t = 0;

    for (int i = 0; i < cnt; i++) {
        t += iov[i].iov_len;
    }
    return t;
}

/* The fault for a vectored call: a rule on its own operation, else, for a vectored write,
 * one on write (the bytes written into the file, however the engine gathers them: the
 * call counts as one of each, as splice does). *@op becomes the rule's operation. */
static const Rule *
iov_fault(int *op, size_t len, long long pos, unsigned long *ret_nth)
{
    const Rule *r = next_fault(*op, len, pos, ret_nth);

    if (!r && *op == OP_WRITEV && (r = next_fault(OP_WRITE, len, pos, ret_nth))) {
        *op = OP_WRITE;
    }
    return r;
}

#define FAULTED_IOV(op, fd, iov, cnt, POS, CALL) \
    do { \
        unsigned long nth_; \
        const Rule *r_; \
        struct iovec one_; \
        ssize_t ret_; \
        int err_, op_ = (op); \
        if (!fd_matches(fd)) { \
            return CALL; \
        } \
        r_ = iov_fault(&op_, iov_total(iov, cnt), (POS), &nth_); \
        if (r_ && r_->stall_ms) { \
            stall(op_, nth_, r_, fd); \
            r_ = NULL; \
        } \
        if (r_ && !r_->is_short) { \
            log_fault(op_, nth_, r_, fd); \
            trace(op, fd, (long long)iov_total(iov, cnt), -1, r_->err); \
            errno = r_->err; \
            return -1; \
        } \
        if (r_ && r_->is_short && shorten_iov(fd, iov, cnt, &one_)) { \
            log_fault(op_, nth_, r_, fd); \
            iov = &one_; \
            cnt = 1; \
        } \
        ret_ = CALL; \
        err_ = errno; \
        trace(op, fd, (long long)iov_total(iov, cnt), (long long)ret_, err_); \
        errno = err_; \
        return ret_; \
    } while (0)

ssize_t
readv(int fd, const struct iovec *iov, int cnt)
{
    REAL(readv, ssize_t (*)(int, const struct iovec *, int));
    FAULTED_IOV(OP_READV, fd, iov, cnt, position(fd), real_readv(fd, iov, cnt));
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev, ssize_t (*)(int, const struct iovec *, int));
    FAULTED_IOV(OP_WRITEV, fd, iov, cnt, position(fd), real_writev(fd, iov, cnt));
}

ssize_t
preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    REAL(preadv64, ssize_t (*)(int, const struct iovec *, int, off_t));
    FAULTED_IOV(OP_READV, fd, iov, cnt, (long long)off, real_preadv64(fd, iov, cnt, off));
}

ssize_t
preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return preadv64(fd, iov, cnt, off);
}

ssize_t
pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    REAL(pwritev64, ssize_t (*)(int, const struct iovec *, int, off_t));
    FAULTED_IOV(OP_WRITEV, fd, iov, cnt, (long long)off, real_pwritev64(fd, iov, cnt, off));
}

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return pwritev64(fd, iov, cnt, off);
}

ssize_t
preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    REAL(preadv64v2, ssize_t (*)(int, const struct iovec *, int, off_t, int));
    FAULTED_IOV(OP_READV, fd, iov, cnt, off >= 0 ? (long long)off : position(fd),
                real_preadv64v2(fd, iov, cnt, off, flags));
}

ssize_t
preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return preadv64v2(fd, iov, cnt, off, flags);
}

ssize_t
pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    REAL(pwritev64v2, ssize_t (*)(int, const struct iovec *, int, off_t, int));
    FAULTED_IOV(OP_WRITEV, fd, iov, cnt, off >= 0 ? (long long)off : position(fd),
                real_pwritev64v2(fd, iov, cnt, off, flags));
}

ssize_t
pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return pwritev64v2(fd, iov, cnt, off, flags);
}

/* The fault @r (of the call @nth of @op on @fd, moving @len bytes) before the call: a
 * stall sleeps (then no fault, *@r cleared); an errno is logged and traced, and returned
 * for the caller to fail with. 0: make the call (shortened when *@r is "short"). */
static int
fault_errno(int op, unsigned long nth, const Rule **r, int fd, long long len)
{
    if (*r && (*r)->stall_ms) {
        stall(op, nth, *r, fd);
        *r = NULL;
    }
    if (*r && !(*r)->is_short) {
        log_fault(op, nth, *r, fd);
        trace(op == OP_FADVISE ? OP_FADVISE : OP_SPLICE, fd, len, -1, (*r)->err);
        return (*r)->err;
    }
    return 0;
}

/* splice moves bytes out of fd_in and into fd_out, so it is covered as the calls it
 * stands for: a rule on "splice" matches it (counted once per call, on the matching end
 * its position comes from), and so does a rule on "write" when fd_out matches (the bytes
 * written into the image, however they get there) and one on "read" when fd_in matches;
 * the call counts as one of each. The first rule that fires wins, in that order, and the
 * fault is logged under that rule's operation ("fault write#3 EIO"); "short" shortens the
 * splice. Traced as "splice fd=N", N the matching end (fd_out when both match). */
static const Rule *
splice_fault(int m_in, int m_out, size_t len, long long pos_in, long long pos_out,
             int *ret_op, unsigned long *ret_nth)
{
    const Rule *r;

    *ret_op = OP_SPLICE;
    r = next_fault(OP_SPLICE, len, m_out ? pos_out : pos_in, ret_nth);
    if (!r && m_out) {
        *ret_op = OP_WRITE;
        r = next_fault(OP_WRITE, len, pos_out, ret_nth);
    }
    if (!r && m_in) {
        *ret_op = OP_READ;
        r = next_fault(OP_READ, len, pos_in, ret_nth);
    }
    return r;
}

/* What a splice out of @fd can move: at most what a pipe holds (so that "unaligned" and
 * "@OFF" see the bytes the call moves, as for a read of that much), else @len. */
static size_t
splice_len(int fd, size_t len)
{
    struct stat st;
    int avail = 0;

    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
        return len;
    }
    /* A blocking splice waits for the pipe's first bytes: wait for them here, so that
     * what the pipe holds is what the call will move. */
    if (!(fcntl(fd, F_GETFL) & O_NONBLOCK)) {
        while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
        }
    }
    if (ioctl(fd, FIONREAD, &avail) == 0 && avail > 0) {
        return MIN_LEN(len, avail);
    }
    return len;
}

ssize_t
splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
       unsigned int flags)
{
    int m_in = fd_matches(fd_in), m_out = fd_matches(fd_out);
    int fd = m_out ? fd_out : fd_in, op, err;
    int dio_fd = dio_granule(fd_in) > 1 ? fd_in : fd_out;    /* a pipe is never O_DIRECT */
    unsigned long nth;
    const Rule *r;
    ssize_t ret;

    REAL(splice, ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned int));
    if (!m_in && !m_out) {
        return real_splice(fd_in, off_in, fd_out, off_out, len, flags);
    }
    /* Moves at most what the shim saw in the pipe, so that the rule matched the bytes the
     * call moves even when a writer adds more meanwhile (a short splice is always legal). */
    len = splice_len(fd_in, len);
    r = splice_fault(m_in, m_out, len, off_in ? (long long)*off_in : position(fd_in),
                     off_out ? (long long)*off_out : position(fd_out), &op, &nth);
    err = fault_errno(op, nth, &r, fd, (long long)len);
    if (err) {
        errno = err;
        return -1;
    }
    if (r && r->is_short && short_len(dio_fd, len) < len) {
        log_fault(op, nth, r, fd);
        len = short_len(dio_fd, len);
    }
    ret = real_splice(fd_in, off_in, fd_out, off_out, len, flags);
    err = errno;
    trace(OP_SPLICE, fd, (long long)len, (long long)ret, err);
    errno = err;
    return ret;
}

ssize_t
copy_file_range(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
                unsigned int flags)
{
    REAL(copy_file_range, ssize_t (*)(int, loff_t *, int, loff_t *, size_t, unsigned int));
    FAULTED_IO(OP_COPY_FILE_RANGE, fd_matches(fd_in) ? fd_in : fd_out, len,
               fd_matches(fd_in) ? (off_in ? (long long)*off_in : position(fd_in))
                                 : (off_out ? (long long)*off_out : position(fd_out)),
               real_copy_file_range(fd_in, off_in, fd_out, off_out, len, flags));
}

ssize_t
sendfile64(int out_fd, int in_fd, off_t *off, size_t len)
{
    REAL(sendfile64, ssize_t (*)(int, int, off_t *, size_t));
    FAULTED_IO(OP_SENDFILE, fd_matches(in_fd) ? in_fd : out_fd, len,
               fd_matches(in_fd) ? (off ? (long long)*off : position(in_fd)) : position(out_fd),
               real_sendfile64(out_fd, in_fd, off, len));
}

ssize_t
sendfile(int out_fd, int in_fd, off_t *off, size_t len)
{
    return sendfile64(out_fd, in_fd, off, len);
}

/* Calls that move no bytes: a rule's errno makes them fail without running ("short" is
 * meaningless there and ignored). */
#define FAULTED_CALL(op, fd, CALL) \
    do { \
        unsigned long nth_; \
        const Rule *r_; \
        int ret_, err_; \
        if (!fd_matches(fd)) { \
            return CALL; \
        } \
        r_ = next_fault(op, 0, -1, &nth_); \
        if (r_ && r_->stall_ms) { \
            stall(op, nth_, r_, fd); \
            r_ = NULL; \
        } \
        if (r_ && !r_->is_short) { \
            log_fault(op, nth_, r_, fd); \
            trace(op, fd, 0, -1, r_->err); \
            errno = r_->err; \
            return -1; \
        } \
        ret_ = CALL; \
        err_ = errno; \
        trace(op, fd, 0, ret_, err_); \
        errno = err_; \
        return ret_; \
    } while (0)

int
fdatasync(int fd)
{
    REAL(fdatasync, int (*)(int));
    FAULTED_CALL(OP_FDATASYNC, fd, real_fdatasync(fd));
}

int
fsync(int fd)
{
    REAL(fsync, int (*)(int));
    FAULTED_CALL(OP_FSYNC, fd, real_fsync(fd));
}

int
sync_file_range(int fd, off_t off, off_t len, unsigned int flags)
{
    REAL(sync_file_range, int (*)(int, off_t, off_t, unsigned int));
    FAULTED_CALL(OP_SYNC_FILE_RANGE, fd, real_sync_file_range(fd, off, len, flags));
}

int
fallocate64(int fd, int mode, off_t off, off_t len)
{
    REAL(fallocate64, int (*)(int, int, off_t, off_t));
    FAULTED_CALL(OP_FALLOCATE, fd, real_fallocate64(fd, mode, off, len));
}

int
fallocate(int fd, int mode, off_t off, off_t len)
{
    return fallocate64(fd, mode, off, len);
}

int
ftruncate64(int fd, off_t len)
{
    REAL(ftruncate64, int (*)(int, off_t));
    FAULTED_CALL(OP_FTRUNCATE, fd, real_ftruncate64(fd, len));
}

int
ftruncate(int fd, off_t len)
{
    return ftruncate64(fd, len);
}

int
posix_fadvise64(int fd, off_t off, off_t len, int advice)
{
    unsigned long nth;
    const Rule *r;
    int ret;

    REAL(posix_fadvise64, int (*)(int, off_t, off_t, int));
    if (!fd_matches(fd)) {
        return real_posix_fadvise64(fd, off, len, advice);
    }
    /* posix_fadvise returns the error number instead of setting errno. */
    r = next_fault(OP_FADVISE, 0, -1, &nth);
    ret = fault_errno(OP_FADVISE, nth, &r, fd, (long long)len);
    if (ret) {
        return ret;
    }
    ret = real_posix_fadvise64(fd, off, len, advice);
    trace(OP_FADVISE, fd, (long long)len, ret ? -1 : 0, ret);
    return ret;
}

int
posix_fadvise(int fd, off_t off, off_t len, int advice)
{
    return posix_fadvise64(fd, off, len, advice);
}

ssize_t
readahead(int fd, off64_t off, size_t len)
{
    REAL(readahead, ssize_t (*)(int, off64_t, size_t));
    FAULTED_CALL(OP_READAHEAD, fd, real_readahead(fd, off, len));
}

/* A failing close still closes the fd (Linux always does): the data may be lost but the
 * descriptor is gone, exactly what NFS or a failing disk does to a program. */
int
close(int fd)
{
    unsigned long nth;
    const Rule *r;
    int ret, err;

    REAL(close, int (*)(int));
    if (!fd_matches(fd)) {
        return real_close(fd);
    }
    r = next_fault(OP_CLOSE, 0, -1, &nth);
    if (r && r->stall_ms) {
        stall(OP_CLOSE, nth, r, fd);
        r = NULL;
    }
    ret = real_close(fd);
    err = errno;
    if (r && !r->is_short) {
        log_fault(OP_CLOSE, nth, r, fd);
        trace(OP_CLOSE, fd, 0, -1, r->err);
        errno = r->err;
        return -1;
    }
    trace(OP_CLOSE, fd, 0, ret, err);
    errno = err;
    return ret;
}

/* liburing: the fd of a submission is in each SQE, which we cannot see from here without
 * liburing's headers; a rule on io_uring_submit fails the whole submission when any fd
 * matches (IOH_FAULT_FD or a path). Only counted while the shim is active. -errno or 0. */
static int
submit_fault(void)
{
    unsigned long nth;
    const Rule *r;

    if (!active) {
        return 0;
    }
    r = next_fault(OP_IO_URING_SUBMIT, 0, -1, &nth);
    if (r && r->stall_ms) {
        stall(OP_IO_URING_SUBMIT, nth, r, -1);
        r = NULL;
    }
    if (r && !r->is_short) {
        log_fault(OP_IO_URING_SUBMIT, nth, r, -1);
        return -r->err;
    }
    return 0;
}

struct io_uring;
struct io_uring_cqe;
struct io_uring_params;
struct __kernel_timespec;

int
io_uring_submit(struct io_uring *ring)
{
    REAL(io_uring_submit, int (*)(struct io_uring *));
    int f = submit_fault();

    return f ? f : real_io_uring_submit(ring);
}

int
io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
    REAL(io_uring_submit_and_wait, int (*)(struct io_uring *, unsigned));
    int f = submit_fault();

    return f ? f : real_io_uring_submit_and_wait(ring, wait_nr);
}

int
io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
                                 unsigned wait_nr, struct __kernel_timespec *ts, void *sigmask)
{
    REAL(io_uring_submit_and_wait_timeout,
         int (*)(struct io_uring *, struct io_uring_cqe **, unsigned,
                 struct __kernel_timespec *, void *));
    int f = submit_fault();

    return f ? f : real_io_uring_submit_and_wait_timeout(ring, cqe, wait_nr, ts, sigmask);
}

/* A kernel that refuses io_uring (io_uring_disabled, seccomp, before 5.1): a rule on
 * io_uring_setup fails the ring's creation. */
int
io_uring_queue_init_params(unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
    unsigned long nth;
    const Rule *r;

    REAL(io_uring_queue_init_params, int (*)(unsigned, struct io_uring *,
                                             struct io_uring_params *));
    r = active ? next_fault(OP_IO_URING_SETUP, 0, -1, &nth) : NULL;
    if (r && !r->is_short && !r->stall_ms) {
        log_fault(OP_IO_URING_SETUP, nth, r, -1);
        return -r->err;
    }
    return real_io_uring_queue_init_params(entries, ring, p);
}

/* The engine's io_uring strategy asks here before each read or write it prepares
 * (helper/engine/strategies/ioh-uring.h), as the other wrappers are asked by a call: the
 * rules on read and write apply, counted with read() and write(). 0: submit it (*len
 * lowered by "short": the kernel then moves fewer bytes, a real short read or write);
 * -errno: it completes with that result without reaching the kernel, as a failed CQE. */
int
ioh_fault_uring(int fd, int is_write, size_t *len, long long pos)
{
    int op = is_write ? OP_WRITE : OP_READ;
    unsigned long nth;
    const Rule *r;

    if (!fd_matches(fd)) {
        return 0;
    }
    r = next_fault(op, *len, pos, &nth);
    if (r && r->stall_ms) {
        stall(op, nth, r, fd);
        r = NULL;
    }
    if (r && !r->is_short) {
        log_fault(op, nth, r, fd);
        trace(op, fd, (long long)*len, -1, r->err);
        return -r->err;
    }
    if (r && r->is_short && short_len(fd, *len) < *len) {
        log_fault(op, nth, r, fd);
        *len = short_len(fd, *len);
    }
    return 0;
}

/* ... and tells each one's result when it completes (IOH_FAULT_TRACE). */
void
ioh_fault_uring_done(int fd, int is_write, size_t len, long long res)
{
    if (fd_matches(fd)) {
        trace(is_write ? OP_WRITE : OP_READ, fd, (long long)len, res < 0 ? -1 : res,
              res < 0 ? (int)-res : 0);
    }
}

/* A mapping of a matching file reads or writes it through memory, so a rule on "mmap"
 * fails it (MAP_FAILED with the rule's errno). Anonymous memory (the engine's buffers)
 * is not I/O: passed through, never counted. */
void *
mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    unsigned long nth;
    const Rule *r;
    void *ret;
    int err;

    REAL(mmap64, void *(*)(void *, size_t, int, int, int, off_t));
    if ((flags & MAP_ANONYMOUS) || !fd_matches(fd)) {
        return real_mmap64(addr, len, prot, flags, fd, off);
    }
    r = next_fault(OP_MMAP, len, off, &nth);
    if (r && r->stall_ms) {
        stall(OP_MMAP, nth, r, fd);
        r = NULL;
    }
    if (r && !r->is_short) {
        log_fault(OP_MMAP, nth, r, fd);
        trace(OP_MMAP, fd, (long long)len, -1, r->err);
        errno = r->err;
        return MAP_FAILED;
    }
    ret = real_mmap64(addr, len, prot, flags, fd, off);
    err = errno;
    trace(OP_MMAP, fd, (long long)len, ret == MAP_FAILED ? -1 : 0, err);
    errno = err;
    return ret;
}

void *
mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap64(addr, len, prot, flags, fd, off);
}
