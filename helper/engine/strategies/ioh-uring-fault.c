/* ioh-uring-fault.c - the io_uring strategy asks the fault shim, when one is preloaded,
 * what each read and write it prepares is to meet, and tells it their results
 * (ioh-uring.h) */
#include "ioh-uring.h"

#include <dlfcn.h>

typedef int (*IohUringFaultFn)(int fd, int is_write, size_t *len, long long pos);
typedef void (*IohUringDoneFn)(int fd, int is_write, size_t len, long long res);

static IohUringFaultFn fault_fn;
static IohUringDoneFn done_fn;

static void
look_up(void)
{
    static gsize once;

    if (g_once_init_enter(&once)) {
        /* Only a preloaded library defines them: looked up once per process. */
        fault_fn = (IohUringFaultFn)dlsym(RTLD_DEFAULT, "ioh_fault_uring");
        done_fn = (IohUringDoneFn)dlsym(RTLD_DEFAULT, "ioh_fault_uring_done");
        g_once_init_leave(&once, 1);
    }
}

int
ioh_uring_fault(int fd, gboolean is_write, gsize *len, gint64 pos)
{
    size_t l = *len;
    int r;

    look_up();
    if (!fault_fn) {
        return 0;
    }
    r = fault_fn(fd, is_write ? 1 : 0, &l, (long long)pos);
    *len = MIN(*len, (gsize)l);
    return r;
}

void
ioh_uring_fault_done(int fd, gboolean is_write, gsize len, int res)
{
    look_up();
    if (done_fn) {
        done_fn(fd, is_write ? 1 : 0, len, res);
    }
}
