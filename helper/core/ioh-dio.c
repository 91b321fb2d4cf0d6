/* ioh-dio.c - the O_DIRECT alignment rule */
#include "config.h"
#include "ioh-dio.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/stat.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

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
