/* ioh-dio.c - the O_DIRECT alignment rule */
#include "config.h"
#include "ioh-dio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/stat.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "ioh-error.h"

guint
ioh_dio_align(int fd, gboolean is_block)
{
    guint align = IOH_DIO_MIN_ALIGN;
    struct stat st;

#ifdef HAVE_STATX_DIOALIGN
    struct statx stx;
    /* Kernels since 6.1 tell the real O_DIRECT constraints of the file system. */
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > 0) {
        return MAX(align, MAX(stx.stx_dio_offset_align, stx.stx_dio_mem_align));
    }
#endif
    if (is_block) {
        int lbs = 0;
        if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
            align = MAX(align, (guint)lbs);
        }
    } else if (fstat(fd, &st) == 0 && st.st_blksize > 0 && st.st_blksize <= (1 << 20)) {
        align = MAX(align, (guint)st.st_blksize);
    }
    return align;
}

/* F_SETFL with O_DIRECT set or cleared: 0 or the errno. */
static int
set_flag(int fd, int fl, gboolean direct)
{
    return fcntl(fd, F_SETFL, direct ? (fl | O_DIRECT) : (fl & ~O_DIRECT)) < 0 ? errno : 0;
}

int
ioh_dio_probe(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    int errsv;

    if (fl < 0) {
        return errno;
    }
    if (fl & O_DIRECT) {
        return 0;
    }
    errsv = set_flag(fd, fl, TRUE);
    if (errsv == 0 && fcntl(fd, F_SETFL, fl) < 0) {
        errsv = errno;
    }
    return errsv;
}

gboolean
ioh_dio_set(int fd, gboolean direct, const char *name, GError **error)
{
    int fl = fcntl(fd, F_GETFL);
    int errsv;

    if (fl < 0) {
        return ioh_error_set_errno(error, errno, "fcntl", name);
    }
    errsv = set_flag(fd, fl, direct);
    if (errsv == EINVAL && direct) {
        return ioh_error_set(error, EINVAL, "open", name, IOH_DIO_REFUSED " (%s)",
                             g_strerror(EINVAL));
    }
    if (errsv) {
        return ioh_error_set_errno(error, errsv, "fcntl", name);
    }
    return TRUE;
}
