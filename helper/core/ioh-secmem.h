/* ioh-secmem.h - memory for key material: locked, out of core dumps, wiped when freed
 *
 * An age identity's scalar, a file key and the keys derived from it live here, never in
 * the heap: the pages are mlock()ed (never written to swap) and madvise(MADV_DONTDUMP)ed
 * (never in a core dump), and explicit_bzero() wipes them before they go back. A failing
 * mlock (RLIMIT_MEMLOCK) is not an error: the memory stays out of core dumps and is wiped,
 * which is what a helper without the limit can do (ioh_secmem_locked() says which).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @len bytes (rounded up to whole pages), zeroed, or NULL (mmap failed: errno set). */
gpointer ioh_secmem_alloc(gsize len);

/* Wipes and unmaps what ioh_secmem_alloc(@len) returned. Accepts NULL. */
void ioh_secmem_free(gpointer p, gsize len);

/* TRUE when the pages at @p are locked in RAM. */
gboolean ioh_secmem_locked(gconstpointer p);

/* Wipes @len bytes at @p (a local copy of a secret), where the compiler cannot drop it. */
void ioh_secmem_wipe(gpointer p, gsize len);

G_END_DECLS
