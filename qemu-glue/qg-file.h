/* qg-file.h - the image file, checked before QEMU is touched (prefix qg_file_)
 *
 * What FILE means, decided here once: an image is a regular file. A save replaces it
 * (or creates it); a symlink at FILE is followed, to the end, and the file it leads to
 * is replaced, atomically, by a new file made in that file's own folder, so the link
 * stays and points to the new image. A directory, a device node, a FIFO or a socket at
 * FILE (or at the end of its links), and a symlink loop, are refused before anything
 * is done to QEMU. Errors are G_IO_ERROR, one line naming FILE.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The file a save to @path replaces or creates: @path, or where its symlinks lead
 * (a relative link is taken from the link's folder). NULL with @error when it exists
 * and is no regular file, or the links cannot be followed. */
char *qg_file_save_target(const char *path, GError **error);

/* Opens the image at @path for a restore (O_RDONLY, O_CLOEXEC), following symlinks:
 * -1 with @error when it is no regular file. Never blocks on a FIFO. */
int qg_file_open_image(const char *path, GError **error);

/* Opens @path with O_DIRECT and @access (O_RDONLY or O_WRONLY), closes it again: FALSE
 * with @error (IOH_ERROR, the errno, operation "open", @path; for EINVAL the message "its
 * file system refuses O_DIRECT (Invalid argument)", without the path: the caller names
 * the file) when that fails. */
gboolean qg_file_probe_direct(const char *path, int access, GError **error);

G_END_DECLS
