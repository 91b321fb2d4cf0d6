/* ioh-secmem.c - locked, undumpable, wiped memory for keys (ioh-secmem.h) */
#include "ioh-secmem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The first bytes of each mapping: whether it is locked (the rest is the caller's). */
#define SECMEM_HEAD 64

static gsize
secmem_size(gsize len)
{
    gsize page = (gsize)sysconf(_SC_PAGESIZE);

    return (len + SECMEM_HEAD + page - 1) / page * page;
}

gpointer
ioh_secmem_alloc(gsize len)
{
    gsize size = secmem_size(len);
    guint8 *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    /* never in a core dump; a kernel without MADV_DONTDUMP still wipes at free */
    (void)madvise(p, size, MADV_DONTDUMP);
    p[0] = mlock(p, size) == 0;
    return p + SECMEM_HEAD;
}

void
ioh_secmem_free(gpointer p, gsize len)
{
    guint8 *base, locked;
    gsize size = secmem_size(len);

    if (!p) {
        return;
    }
    base = (guint8 *)p - SECMEM_HEAD;
    locked = base[0];
    explicit_bzero(base, size);
    if (locked) {
        (void)munlock(base, size);
    }
    (void)munmap(base, size);
}

gboolean
ioh_secmem_locked(gconstpointer p)
{
    return p && ((const guint8 *)p - SECMEM_HEAD)[0] != 0;
}

void
ioh_secmem_wipe(gpointer p, gsize len)
{
    if (p) {
        explicit_bzero(p, len);
    }
}
