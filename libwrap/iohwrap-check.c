/* iohwrap-check.c - what ioh_wrap_new() accepts
 *
 * In order: the values alone (flags, path, params), then the fd (open, access mode,
 * kind), then the flags and params against that fd (O_DIRECT, where the stream starts,
 * the file's size on a restore). Each refusal names the parameter or the fd and its value.
 */
#include "config.h"

#include "iohwrap-check.h"
#include "ioh-dio.h"
#include "ioh-option-rules.h"
#include "ioh-fd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/stat.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int fd;
    const char *name;         /* "fd N of PATH" or "fd N" */
    const char *file;         /* PATH, or "fd N" without one */
    int fl;                   /* F_GETFL */
    struct stat st;
    gboolean storage;         /* a regular file or block device: the helper's "storage" */
    gboolean has_size;
    guint64 size;
} FdInfo;

static gboolean refuse(GError **error, IohWrapError code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* A refusal. INVALID names a parameter, so it says whose ("ioh_wrap_new: offset ...");
 * BADFD starts with the fd ("fd 5 of /x.save is a directory"). */
static gboolean
refuse(GError **error, IohWrapError code, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, IOH_WRAP_ERROR, code, "%s%s",
                code == IOH_WRAP_ERROR_INVALID ? "ioh_wrap_new: " : "", msg);
    return FALSE;
}

#define invalid(error, ...) refuse((error), IOH_WRAP_ERROR_INVALID, __VA_ARGS__)
#define badfd(error, ...) refuse((error), IOH_WRAP_ERROR_BADFD, __VA_ARGS__)

/* ---- the values alone ------------------------------------------------------------ */

static gboolean
check_flags(IohWrapFlags flags, GError **error)
{
    const guint known = IOH_WRAP_DIRECT | IOH_WRAP_FADVISE | IOH_WRAP_POLLABLE;
    IohOptionSet set = { 0 };

    if ((guint)flags & ~known) {
        return invalid(error, "unknown flags 0x%x", (guint)flags & ~known);
    }
    /* the helper's rule (ioh-option-rules.h), in this API's words */
    set.direct = (flags & IOH_WRAP_DIRECT) != 0;
    set.fadvise = (flags & IOH_WRAP_FADVISE) != 0;
    if (ioh_option_rules_check(&set) == IOH_OPTION_RULE_DIRECT_AND_FADVISE) {
        return invalid(error, "IOH_WRAP_DIRECT and IOH_WRAP_FADVISE cannot be combined");
    }
    return TRUE;
}

static gboolean
check_params(const IohWrapParams *p, GError **error)
{
    if (p->offset > IOH_OFFSET_MAX) {
        return invalid(error, "offset %" G_GUINT64_FORMAT " is too large (at most %"
                       G_GUINT64_FORMAT ")", p->offset, IOH_OFFSET_MAX);
    }
    if (p->length > IOH_OFFSET_MAX) {
        return invalid(error, "length %" G_GUINT64_FORMAT " is too large (at most %"
                       G_GUINT64_FORMAT ")", p->length, IOH_OFFSET_MAX);
    }
    /* Refused, not clamped (ioh_limits_status_interval() would clamp it): a caller's
     * value is never changed behind its back. */
    if (p->progress_interval_ms != 0 &&
        (p->progress_interval_ms < IOH_STATUS_INTERVAL_MIN_MS ||
         p->progress_interval_ms > IOH_STATUS_INTERVAL_MAX_MS)) {
        return invalid(error, "progress_interval_ms %u is out of range (%d to %d, or 0 for "
                       "%d)", p->progress_interval_ms, IOH_STATUS_INTERVAL_MIN_MS,
                       IOH_STATUS_INTERVAL_MAX_MS, IOH_STATUS_INTERVAL_DEFAULT_MS);
    }
    return TRUE;
}

gboolean
iohw_check_params(const IohWrapParams *params, GError **error)
{
    return check_params(params, error);
}

/* ---- the fd ---------------------------------------------------------------------- */

static void
read_size(FdInfo *fi)
{
    guint64 bytes = 0;

    if (S_ISREG(fi->st.st_mode)) {
        fi->size = (guint64)fi->st.st_size;
        fi->has_size = TRUE;
    } else if (S_ISBLK(fi->st.st_mode) && ioctl(fi->fd, BLKGETSIZE64, &bytes) == 0) {
        fi->size = bytes;
        fi->has_size = TRUE;
    }
}

static gboolean
inspect_fd(FdInfo *fi, GError **error)
{
    int errsv;

    fi->fl = fi->fd >= 0 ? fcntl(fi->fd, F_GETFL) : -1;
    if (fi->fl < 0) {
        errsv = fi->fd >= 0 ? errno : EBADF;
        return badfd(error, "%s: %s", fi->name, g_strerror(errsv));
    }
    if (fi->fl & O_PATH) {
        return badfd(error, "%s is an O_PATH descriptor: it can be neither read nor "
                     "written", fi->name);
    }
    if ((fi->fl & O_ACCMODE) == O_RDWR) {
        return badfd(error, "%s is open read-write; open it O_WRONLY to save or O_RDONLY "
                     "to restore", fi->name);
    }
    if (fstat(fi->fd, &fi->st) < 0) {
        errsv = errno;
        return badfd(error, "%s: %s", fi->name, g_strerror(errsv));
    }
    if (S_ISDIR(fi->st.st_mode)) {
        return badfd(error, "%s is a directory", fi->name);
    }
    fi->storage = S_ISREG(fi->st.st_mode) || S_ISBLK(fi->st.st_mode);
    read_size(fi);
    return TRUE;
}

/* ---- flags and params against the fd --------------------------------------------- */

static gboolean
check_fd_fits(const FdInfo *fi, IohwPlan *plan, GError **error)
{
    if ((fi->fl & O_DIRECT) && (plan->flags & IOH_WRAP_FADVISE)) {
        return invalid(error, "%s has O_DIRECT set, which IOH_WRAP_FADVISE cannot use",
                       fi->name);
    }
    if (fi->fl & O_DIRECT) {
        /* QEMU cannot write its unaligned stream to an O_DIRECT fd: the helper must. */
        plan->flags |= IOH_WRAP_DIRECT;
    }
    if ((plan->flags & (IOH_WRAP_DIRECT | IOH_WRAP_FADVISE)) && !fi->storage) {
        return badfd(error, "%s: %s needs a regular file or block device, and this is %s",
                     fi->name, plan->flags & IOH_WRAP_DIRECT ? "IOH_WRAP_DIRECT (O_DIRECT)"
                                                             : "IOH_WRAP_FADVISE",
                     ioh_fd_kind_name(fi->st.st_mode));
    }
    if (plan->offset && !fi->storage) {
        return badfd(error, "%s: offset %" G_GUINT64_FORMAT " needs a regular file or block "
                     "device, and this is %s", fi->name, plan->offset,
                     ioh_fd_kind_name(fi->st.st_mode));
    }
    if (plan->save && plan->offset && (fi->fl & O_APPEND)) {
        return badfd(error, "%s has O_APPEND: a save lands at the end of the file, not at "
                     "offset %" G_GUINT64_FORMAT, fi->name, plan->offset);
    }
    return TRUE;
}

/* Both paths seek to the offset (libwrap itself, or the helper): try it now and go back,
 * so that an offset past what the file system or the device can hold is known. */
static gboolean
probe_seek(const FdInfo *fi, guint64 offset, GError **error)
{
    off_t pos = lseek(fi->fd, 0, SEEK_CUR);
    int errsv;

    if (pos < 0 || lseek(fi->fd, (off_t)offset, SEEK_SET) < 0) {
        errsv = errno;
        return badfd(error, "%s: cannot seek to offset %" G_GUINT64_FORMAT ": %s", fi->name,
                     offset, g_strerror(errsv));
    }
    if (lseek(fi->fd, pos, SEEK_SET) < 0) {
        errsv = errno;
        return badfd(error, "%s: cannot seek back to %lld: %s", fi->name, (long long)pos,
                     g_strerror(errsv));
    }
    return TRUE;
}

/* The stream starts at the offset; else where the fd stands (libvirt's header before
 * it); with O_APPEND a save starts at the file's end whatever the position. */
static gboolean
find_start(const FdInfo *fi, IohwPlan *plan, GError **error)
{
    if (plan->offset) {
        if (!probe_seek(fi, plan->offset, error)) {
            return FALSE;
        }
        plan->start = plan->offset;
    } else if (plan->save && (fi->fl & O_APPEND) && fi->has_size) {
        plan->start = fi->size;
    } else if (fi->storage) {
        off_t pos = lseek(fi->fd, 0, SEEK_CUR);
        if (pos < 0) {
            int errsv = errno;
            return badfd(error, "%s: cannot tell its position: %s", fi->name,
                         g_strerror(errsv));
        }
        plan->start = (guint64)pos;
    } else {
        plan->start = 0;
    }
    if (plan->length > IOH_OFFSET_MAX - plan->start) {
        return invalid(error, "%s %" G_GUINT64_FORMAT " + length %" G_GUINT64_FORMAT
                       " ends past the largest file offset %" G_GUINT64_FORMAT,
                       plan->offset ? "offset" : "start", plan->start, plan->length,
                       IOH_OFFSET_MAX);
    }
    return TRUE;
}

/* The helper sets O_DIRECT on the file itself: try it now (ioh_dio_probe() puts the flags
 * back), so that a file system that refuses it is known before anything runs. */
static gboolean
probe_direct(const FdInfo *fi, GError **error)
{
    int errsv = ioh_dio_probe(fi->fd);

    if (errsv) {
        return badfd(error, "%s: " IOH_DIO_REFUSED " (IOH_WRAP_DIRECT): %s", fi->name,
                     g_strerror(errsv));
    }
    return TRUE;
}

static gboolean
check_direct(const FdInfo *fi, const IohwPlan *plan, GError **error)
{
    guint align;

    if (!(plan->flags & IOH_WRAP_DIRECT)) {
        return TRUE;
    }
    if (!probe_direct(fi, error)) {
        return FALSE;
    }
    align = ioh_dio_align(fi->fd, S_ISBLK(fi->st.st_mode));    /* as the helper finds it */
    if (plan->start % align == 0) {
        return TRUE;
    }
    if (plan->offset) {
        return invalid(error, "offset %" G_GUINT64_FORMAT " is not a multiple of %u, as "
                       "IOH_WRAP_DIRECT needs for %s", plan->offset, align, fi->file);
    }
    return invalid(error, "the stream would start at byte %" G_GUINT64_FORMAT " of %s (%s), "
                   "not a multiple of %u, as IOH_WRAP_DIRECT needs", plan->start, fi->file,
                   plan->save && (fi->fl & O_APPEND) ? "its end: O_APPEND" : "the fd's position",
                   align);
}

/* A restore reads [start, start + length) or [start, EOF): the file must hold it. */
static gboolean
check_restore_size(const FdInfo *fi, const IohwPlan *plan, GError **error)
{
    if (plan->save || !fi->has_size) {
        return TRUE;
    }
    if (plan->start > fi->size) {
        return invalid(error, "%s %" G_GUINT64_FORMAT " is past the end of %s (%"
                       G_GUINT64_FORMAT " bytes)", plan->offset ? "offset" : "the fd's position",
                       plan->start, fi->file, fi->size);
    }
    if (plan->length > fi->size - plan->start) {
        return invalid(error, "%s holds %" G_GUINT64_FORMAT " bytes, short of %s %"
                       G_GUINT64_FORMAT " + length %" G_GUINT64_FORMAT, fi->file, fi->size,
                       plan->offset ? "offset" : "start", plan->start, plan->length);
    }
    return TRUE;
}

gboolean
iohw_check_new(int fd, const char *path, IohWrapFlags flags, const IohWrapParams *params,
               IohwPlan *ret_plan, GError **error)
{
    static const IohWrapParams defaults = { 0 };
    g_autofree char *bare = g_strdup_printf("fd %d", fd);
    g_autofree char *name = path ? g_strdup_printf("fd %d of %s", fd, path) : g_strdup(bare);
    FdInfo fi = { .fd = fd, .name = name, .file = path ? path : bare };
    IohwPlan plan = { 0 };

    if (!params) {
        params = &defaults;
    }
    if (path && !*path) {
        return invalid(error, "path is empty (pass NULL to name the file by its fd)");
    }
    if (!check_flags(flags, error) || !check_params(params, error) ||
        !inspect_fd(&fi, error)) {
        return FALSE;
    }
    plan.save = (fi.fl & O_ACCMODE) == O_WRONLY;
    plan.flags = flags;
    plan.offset = params->offset;
    plan.length = params->length;
    plan.interval_ms = ioh_limits_status_interval(params->progress_interval_ms);
    if (!check_fd_fits(&fi, &plan, error) || !find_start(&fi, &plan, error) ||
        !check_direct(&fi, &plan, error) || !check_restore_size(&fi, &plan, error)) {
        return FALSE;
    }
    plan.mode = iohw_flags_cache_mode(plan.flags);
    *ret_plan = plan;
    return TRUE;
}

gboolean
iohw_check_checksum(gboolean save, const char *checksum, const char *verify,
                    GError **error)
{
    gsize n = 0;

    if (checksum && !g_str_equal(checksum, "xxh3")) {
        return invalid(error, "checksum '%s' is not a known algorithm (xxh3)", checksum);
    }
    if (!verify) {
        return TRUE;
    }
    if (save) {
        return invalid(error, "verify_checksum is for a restore (the fd is open for writing)");
    }
    while (g_ascii_isxdigit(verify[n])) {
        n++;
    }
    if (n != 16 || verify[n]) {
        return invalid(error, "verify_checksum '%s' is not an xxh3 checksum (16 hex digits)",
                       verify);
    }
    return TRUE;
}

IohCacheMode
iohw_flags_cache_mode(IohWrapFlags flags)
{
    if (flags & IOH_WRAP_DIRECT) {
        return IOH_CACHE_DIRECT;
    }
    return flags & IOH_WRAP_FADVISE ? IOH_CACHE_FADVISE : IOH_CACHE_BUFFERED;
}
