/* ioh-file.h - the two ends of a copy: opening, probing, closing
 *
 * An IohEnd is one fd the engine reads or writes, with what the engine must know of
 * it: whether it is a pipe, a regular file or a block device, the O_DIRECT alignment
 * its file system needs, and the name to use in messages.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

G_BEGIN_DECLS

typedef enum {
    IOH_KIND_PIPE,     /* FIFO: raised to the pipe size, never synced */
    IOH_KIND_FILE,     /* regular file: truncated on save, synced */
    IOH_KIND_BLOCK,    /* block device: synced, never truncated */
    IOH_KIND_OTHER,    /* char device, socket, tty: plain read/write */
    IOH_KIND_NBD,      /* an NBD export (fd -1): the nbd source and sink (ioh-nbd.h) */
    IOH_KIND_RBD,      /* an RBD image (fd -1): the rbd source and sink (ioh-rbd.h) */
} IohKind;

typedef struct {
    int fd;
    char *name;        /* path, "stdin"/"stdout" or "fd N", for messages */
    IohKind kind;
    gboolean owned;    /* opened by us: closed (and its close checked) by ioh_end_close */
    gboolean direct;   /* O_DIRECT is set on fd */
    gboolean direct_cleared;     /* a copy cleared O_DIRECT (an unaligned rest) ... */
    guint64 direct_cleared_at;   /* ... at this file position: what followed went through
                                  * the page cache (--stats says so) */
    guint align;       /* O_DIRECT alignment of offsets, lengths and buffers (>= 4096) */
    gboolean truncate_pending;  /* a save target opened by path: truncate before writing */
    guint64 truncate_to;
    char *uri;         /* IOH_KIND_NBD: the URI as given (name: without its query secrets);
                        * IOH_KIND_RBD: the image's name as given (name: without options) */
    gpointer priv;     /* a layer's state for this end, freed with priv_free by ioh_end_free */
    GDestroyNotify priv_free;
} IohEnd;

/* Opens @path for reading (@for_write FALSE) or writing. A written regular file is
 * created 0600 (it holds guest memory) and locked against a second writer with flock;
 * it is truncated to @offset only by ioh_end_apply_truncate(), which the engine calls
 * once every check that could refuse the copy has passed, so a refused save leaves an
 * existing image intact. A read regular file is locked shared. */
IohEnd *ioh_end_open(const char *path, gboolean for_write, guint64 offset, GError **error);

/* Carries out the truncation ioh_end_open() left pending (nothing when none is). */
gboolean ioh_end_apply_truncate(IohEnd *end, GError **error);

/* Wraps an inherited fd (not closed by ioh_end_free unless ioh_end_close is called). */
IohEnd *ioh_end_from_fd(int fd, const char *name, GError **error);

/* TRUE for regular files and block devices: the side whose cache mode we choose. */
gboolean ioh_end_is_storage(const IohEnd *end);

/* Sets or clears O_DIRECT with F_SETFL. Setting it fails with a clear message where the
 * file system refuses O_DIRECT. */
gboolean ioh_end_set_direct(IohEnd *end, gboolean direct, GError **error);

/* The access mode of @fd (O_RDONLY, O_WRONLY, O_RDWR) into *@ret_mode, and whether
 * O_DIRECT is set into *@ret_direct (may be NULL). FALSE with "fd N: <cause>" (IOH_ERROR,
 * errno) when F_GETFL fails. */
gboolean ioh_fd_access_mode(int fd, int *ret_mode, gboolean *ret_direct, GError **error);

/* Closes the fd (inherited ones too) and reports a failed close as an error. */
gboolean ioh_end_close(IohEnd *end, GError **error);

/* Frees @end (NULL allowed); closes an owned fd that ioh_end_close did not. */
void ioh_end_free(IohEnd *end);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohEnd, ioh_end_free)

G_END_DECLS
