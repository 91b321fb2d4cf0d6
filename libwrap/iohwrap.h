/* iohwrap.h - wrap a save/restore fd behind the iohelper process when needed
 *
 * Contract of libwrap (prefix ioh_wrap_; pkg-config name iohwrap; #include <iohwrap.h>
 * with the flags from `pkg-config --cflags iohwrap`). Management code opens the image
 * file, calls ioh_wrap_new() and hands QEMU whatever fd comes back in *fd: the file
 * itself when no helper is needed, else the caller's end of a 1 MiB pipe whose other end
 * is served by an `iohelper` child process. When the migration is over it calls
 * ioh_wrap_finish() (or ioh_wrap_finish_async()) and ioh_wrap_free().
 *
 * Library code here never prints and never exits. Every error a function can report is a
 * GError in the IOH_WRAP_ERROR domain (or IOH_ERROR / G_SPAWN_ERROR passed through),
 * misuse included: a NULL wrap given to a function with a GError is IOH_WRAP_ERROR_INVALID.
 * ioh_wrap_set_progress_func(), which has no GError, reports a NULL wrap as GLib does:
 * a g_return_if_fail() critical in the log domain "iohwrap" (fatal only under
 * G_DEBUG=fatal-criticals).
 *
 * ioh_wrap_new() refuses, with the parameter and its value in the message, everything
 * the helper would refuse once running: a wrap it returned never fails at its finish for
 * a reason that was known at its creation (see ioh_wrap_new()).
 *
 * The process that uses a wrap must ignore SIGPIPE (as every daemon does): when a helper
 * dies, writes to the pipe fail with EPIPE instead of killing the writer. The library
 * does not change signal dispositions itself.
 *
 * Threads: all functions may be called from any thread; one wrap is used by one owner at
 * a time (do not free it while another thread finishes it).
 *
 * Changes to the first contract (see docs/libwrap.md):
 *  - an fd that has O_DIRECT set always gets a helper (as if IOH_WRAP_DIRECT): QEMU
 *    cannot write its unaligned stream to it. O_DIRECT with IOH_WRAP_FADVISE is refused.
 *  - IohWrapParams.offset 0 means "where the fd stands now" (libvirt writes its header
 *    and hands the fd over positioned after it); a non-zero offset is applied on both
 *    paths (without a helper, by seeking the fd), so both place the stream alike.
 *  - the original fd is taken over by the wrap and closed at the latest by
 *    ioh_wrap_free(); the caller must not use that number after a spawn.
 *  - without a helper, finishing a save fdatasyncs the file: TRUE is durable either way.
 *  - the finish closes the caller's end only if that number still names the pipe.
 *  - (0.1, issue 10) ioh_wrap_new() checks every argument up front, on both paths: an
 *    empty path, an offset or length past 2^63 - 1 or whose sum is, a progress interval
 *    out of 10..3600000 (it was clamped), a directory or O_PATH fd, DIRECT/FADVISE or an
 *    offset on a pipe or socket, an offset with O_APPEND, a file system that refuses
 *    O_DIRECT or an unaligned start with DIRECT, an offset the file system cannot seek
 *    to, a restore past the end of its file. ioh_wrap_finish_finish() checks the result
 *    is of its wrap. A progress callback's data is freed on every path that drops it.
 *  - (0.2, issue 11) ioh_wrap_new_full() and ioh_wrap_get_checksum(): the helper computes
 *    (and on a restore verifies) an XXH3-64 checksum of the stream. Version node
 *    IOHWRAP_0.2.
 */
#pragma once

#include <glib.h>
#include <gio/gio.h>

G_BEGIN_DECLS

#define IOH_WRAP_ERROR (ioh_wrap_error_quark())
GQuark ioh_wrap_error_quark(void);

/**
 * IohWrapError:
 * @IOH_WRAP_ERROR_INVALID: a bad argument, named with its value ("ioh_wrap_new: offset
 *     9223372036854775808 is too large (at most 9223372036854775807)"), or a finish
 *     already pending.
 * @IOH_WRAP_ERROR_BADFD: the fd cannot be served as asked, named with what it is ("fd 5
 *     of /x.save is a directory"): not open, open read-write or O_PATH, a directory, a
 *     pipe or socket where DIRECT, FADVISE or an offset needs a file, O_APPEND with an
 *     offset, a file system that refuses O_DIRECT, an offset it cannot seek to.
 * @IOH_WRAP_ERROR_NOHELPER: the helper binary is missing or not executable.
 * @IOH_WRAP_ERROR_FAILED: the helper refused to start (from a constructor, e.g. a typo in
 *     its config file: "config file /etc/iohelper.conf: memory-budget: ...", operation
 *     "config", path the file), or reported a failure in its final status line (the
 *     helper protocol, docs/protocol.md); the message is that line's, the one the helper
 *     prints on stderr after "iohelper: ", e.g. "write /x.save: No space left on device",
 *     control characters shown as '?'. The error also carries the line's errno, operation
 *     and path as fields, which helper/core/ioh-error.h reads. A helper that exits non-zero
 *     without a final line gives "helper HELPER for PATH exited with status N without a
 *     final status line".
 * @IOH_WRAP_ERROR_KILLED: the helper was killed by a signal: "helper killed by signal N".
 *
 * A cancelled ioh_wrap_finish_async(), or a wrap freed while its helper ran, gives
 * G_IO_ERROR_CANCELLED instead.
 */
typedef enum {
    IOH_WRAP_ERROR_INVALID,
    IOH_WRAP_ERROR_BADFD,
    IOH_WRAP_ERROR_NOHELPER,
    IOH_WRAP_ERROR_FAILED,
    IOH_WRAP_ERROR_KILLED,
} IohWrapError;

/**
 * IohWrapFlags:
 * @IOH_WRAP_NONE: keep the page cache; no helper unless another flag needs one.
 * @IOH_WRAP_DIRECT: bypass the page cache with O_DIRECT (needs a helper).
 * @IOH_WRAP_FADVISE: bypass the page cache with sync_file_range + fadvise (needs a helper).
 * @IOH_WRAP_POLLABLE: the caller needs a pollable fd, e.g. for a live guest: QEMU must
 *     never block on a regular file (needs a helper).
 *
 * DIRECT and FADVISE are mutually exclusive. With none of the three flags no helper is
 * spawned and the fd is left alone: a paused guest saved straight to the file was
 * measured at 42 s against 2 min 06 s through a helper (90 GB guest).
 */
typedef enum {
    IOH_WRAP_NONE = 0,
    IOH_WRAP_DIRECT = 1 << 0,
    IOH_WRAP_FADVISE = 1 << 1,
    IOH_WRAP_POLLABLE = 1 << 2,
} IohWrapFlags;

/**
 * IohWrapParams:
 * @offset: byte offset in the file where the stream starts, at most 2^63 - 1 and
 *          where the file system can seek. 0 means the fd's current position (a plain
 *          image opened just now starts at 0); a save through an O_APPEND fd starts at
 *          the file's end, and a non-zero offset is refused with O_APPEND. A non-zero
 *          offset needs a regular file or block device and is applied on both paths:
 *          without a helper libwrap seeks the fd there. With IOH_WRAP_DIRECT the start
 *          (offset, position or end) must be a multiple of the file's O_DIRECT
 *          alignment: 4096, or more where the file system says so (statx). A save
 *          truncates nothing: open the file with O_TRUNC (or ftruncate it to @offset)
 *          when it may be longer.
 * @length: restore: deliver exactly this many bytes of stream; 0 means to EOF. At most
 *          2^63 - 1, and start + @length too (checked on every path). A restore from a
 *          file (or block device) that cannot hold start + @length bytes is refused by
 *          ioh_wrap_new(); a pipe or socket that ends early fails the finish. Not used
 *          on save nor without a helper. Pass it when the file has bytes past the
 *          stream: else the helper fails with EPIPE when QEMU closes the pipe before
 *          the file's end.
 * @progress_interval_ms: how often the helper reports progress: 0 means 1000, else
 *          10..3600000 (the helper's --status-interval range); other values are refused.
 *
 * Zero-initialise it (`IohWrapParams p = { 0 };`): fields may be added at the end.
 */
typedef struct {
    guint64 offset;
    guint64 length;
    guint progress_interval_ms;
} IohWrapParams;

/**
 * IohWrapProgressFunc:
 * @bytes_written: bytes the helper has written to the file (save) or to the pipe (restore).
 * @bytes_synced: bytes that have left the page cache (save): IOH_WRAP_DIRECT and
 *     IOH_WRAP_FADVISE advance it as they go, a buffered save (IOH_WRAP_POLLABLE alone)
 *     reports 0 until its final fdatasync. Equals @bytes_written on restore.
 * @user_data: as given to ioh_wrap_set_progress_func().
 *
 * Called in the GMainContext that was thread-default when ioh_wrap_new() ran, each time
 * the helper reports new figures (every IohWrapParams.progress_interval_ms) and once
 * more after the finish with the final figures: on success both equal the stream size.
 * Values never decrease. These are bytes the helper has moved, not bytes QEMU pushed into
 * the pipe.
 */
typedef void (*IohWrapProgressFunc)(guint64 bytes_written, guint64 bytes_synced,
                                    gpointer user_data);

typedef struct _IohWrap IohWrap;

/**
 * ioh_wrap_new:
 * @fd: (inout): the open image file. Its access mode gives the direction: O_WRONLY is a
 *      save, O_RDONLY a restore; O_RDWR is refused. When a helper is spawned, *fd is
 *      replaced by the caller's end of the pipe (blocking, O_CLOEXEC, raised to 1 MiB
 *      capped by /proc/sys/fs/pipe-max-size) and the original fd now belongs to the wrap
 *      (closed by ioh_wrap_finish()/ioh_wrap_free() at the latest); otherwise *fd is left
 *      untouched and stays the caller's.
 * @path: (nullable): the file's path, used in messages only (NULL: "fd N"); not empty.
 * @flags: what the caller needs.
 * @params: (nullable): stream placement and progress period; NULL for defaults.
 * @error: return location for a #GError.
 *
 * Checks every argument before anything is done, and refuses with IOH_WRAP_ERROR_INVALID
 * (a parameter) or IOH_WRAP_ERROR_BADFD (the fd) whatever the helper would refuse once
 * running, on both paths alike: unknown flags, DIRECT with FADVISE, FADVISE with an
 * O_DIRECT fd, an empty @path, @params out of range (see #IohWrapParams), a directory
 * or O_PATH or O_RDWR fd, DIRECT or FADVISE or an offset on an fd that is not a regular
 * file or block device, an offset with O_APPEND, an offset the file system cannot seek
 * to, DIRECT where the file system refuses O_DIRECT or the start is unaligned, and a
 * restore whose file ends before the start or before start + length. To probe, it seeks
 * the fd and (DIRECT) sets O_DIRECT on it, then puts both back: do not use another fd
 * sharing its open file description meanwhile.
 *
 * Spawns `iohelper` only when @flags ask for it (or the fd has O_DIRECT set), and then
 * waits for the helper's "ready" line (its start: a few ms; at most 30 s, then it is
 * killed) before returning: what the helper itself refuses up front, its config file,
 * fails this call with IOH_WRAP_ERROR_FAILED and the helper's message, never the finish
 * after QEMU was given the pipe. The helper
 * is $IOHELPER_PATH when that is set and not empty, else IOHELPER_LIBEXECDIR/iohelper.
 * It gets exactly four fds: the pipe end and the file as its stdin/stdout, a stderr pipe
 * and a status pipe (fd 3); nothing else of this process leaks into it.
 * Progress sources are attached to the thread-default GMainContext.
 *
 * Returns: (transfer full): a new wrap, even when no helper was needed; NULL with
 *     @error set on failure, and then *fd is untouched (same number, flags and position).
 */
IohWrap *ioh_wrap_new(int *fd, const char *path, IohWrapFlags flags,
                      const IohWrapParams *params, GError **error);

/**
 * ioh_wrap_new_full:
 * @fd: (inout): as for ioh_wrap_new().
 * @path: (nullable): as for ioh_wrap_new().
 * @flags: as for ioh_wrap_new().
 * @params: (nullable): as for ioh_wrap_new().
 * @checksum: (nullable): "xxh3" to have the helper compute XXH3-64 (seed 0, as
 *     `xxhsum -H3`) of the stream as it passes, on a save or a restore; read it with
 *     ioh_wrap_get_checksum() after a successful finish. NULL: none.
 * @verify_checksum: (nullable): restore only: the XXH3-64 the stream must have, 16 hex
 *     digits (either case). The helper computes it as the bytes pass and, when the stream
 *     (IohWrapParams.length bytes, or to EOF) ends with another value, exits 1: the finish
 *     then fails with IOH_WRAP_ERROR_FAILED and the helper's message, "verify PATH: xxh3
 *     checksum mismatch: ...". Implies @checksum "xxh3". NULL: no verification.
 * @error: return location for a #GError.
 *
 * ioh_wrap_new() with a checksum (since 0.2). The helper's command line is fixed when it
 * is spawned, which ioh_wrap_new() does, so the checksum is asked for here rather than by
 * a setter afterwards. A checksum always needs a helper: with @checksum or
 * @verify_checksum set, one is spawned whatever @flags say (buffered, as with
 * IOH_WRAP_POLLABLE, unless DIRECT or FADVISE ask otherwise).
 *
 * Besides what ioh_wrap_new() refuses, refuses with IOH_WRAP_ERROR_INVALID an unknown
 * @checksum, a @verify_checksum that is not 16 hex digits, and a @verify_checksum on a
 * save.
 *
 * Note that the helper hands the bytes on as they pass: a restore that fails its
 * verification has delivered the whole stream already. The caller must not trust what
 * it loaded (e.g. not resume a guest) before ioh_wrap_finish() returned TRUE.
 *
 * Returns: (transfer full): as ioh_wrap_new().
 */
IohWrap *ioh_wrap_new_full(int *fd, const char *path, IohWrapFlags flags,
                           const IohWrapParams *params, const char *checksum,
                           const char *verify_checksum, GError **error);

/**
 * IohWrapOptions:
 *
 * What the helper does to the stream besides copying it (since 0.3): an opaque object
 * the caller fills with the ioh_wrap_options_set_*() functions and hands to
 * ioh_wrap_new_with_options(), which copies it (free it when you like). New options are
 * new setters, so the object never changes size under a caller.
 */
typedef struct _IohWrapOptions IohWrapOptions;

/**
 * ioh_wrap_options_new:
 *
 * Returns: (transfer full): options with every default: no checksum, no verification.
 */
IohWrapOptions *ioh_wrap_options_new(void);

/**
 * ioh_wrap_options_free:
 * @options: (nullable): options, or NULL.
 */
void ioh_wrap_options_free(IohWrapOptions *options);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohWrapOptions, ioh_wrap_options_free)

/**
 * ioh_wrap_options_set_checksum:
 * @options: the options.
 * @algorithm: (nullable): "xxh3" (XXH3-64, seed 0, as `xxhsum -H3`), or NULL for none.
 * @error: return location for a #GError.
 *
 * Has the helper compute a checksum of the stream as it passes, on a save or a restore
 * (read it with ioh_wrap_get_checksum() after a successful finish). A checksum always
 * needs a helper: one is spawned whatever the flags say (buffered unless DIRECT or
 * FADVISE ask otherwise). Refuses an unknown @algorithm (IOH_WRAP_ERROR_INVALID).
 */
gboolean ioh_wrap_options_set_checksum(IohWrapOptions *options, const char *algorithm,
                                       GError **error);

/**
 * ioh_wrap_options_set_verify_checksum:
 * @options: the options.
 * @hex: (nullable): the XXH3-64 the stream must have, 16 hex digits (either case); NULL
 *     for no verification.
 * @error: return location for a #GError.
 *
 * Restore only (ioh_wrap_new_with_options() refuses it on a save): as @verify_checksum
 * of ioh_wrap_new_full(). Implies the "xxh3" checksum. Refuses a @hex that is not 16 hex
 * digits (IOH_WRAP_ERROR_INVALID).
 */
gboolean ioh_wrap_options_set_verify_checksum(IohWrapOptions *options, const char *hex,
                                              GError **error);

/**
 * ioh_wrap_new_with_options:
 * @fd: (inout): as for ioh_wrap_new().
 * @path: (nullable): as for ioh_wrap_new().
 * @flags: as for ioh_wrap_new().
 * @params: (nullable): as for ioh_wrap_new().
 * @options: (nullable): what the helper does besides copying; copied. NULL: none.
 * @error: return location for a #GError.
 *
 * ioh_wrap_new() with options (since 0.3); ioh_wrap_new_full() is this with the two
 * checksum options. Refuses, besides what ioh_wrap_new() refuses, the options that do
 * not fit the direction (a verification on a save).
 *
 * Returns: (transfer full): as ioh_wrap_new().
 */
IohWrap *ioh_wrap_new_with_options(int *fd, const char *path, IohWrapFlags flags,
                                   const IohWrapParams *params,
                                   const IohWrapOptions *options, GError **error);

/**
 * ioh_wrap_get_checksum:
 * @wrap: (nullable): a wrap.
 *
 * The checksum the helper computed, as the final line of its status protocol gave it:
 * lower-case hex, XXH3-64 as 16 digits (`xxhsum -H3` prints the same). Available once
 * ioh_wrap_finish() (or ioh_wrap_finish_finish()) returned TRUE for a wrap made by
 * ioh_wrap_new_full() with a checksum; NULL before that, after a failure, for a NULL
 * @wrap and when no checksum was asked for. (Since 0.2.)
 *
 * Returns: (transfer none) (nullable): owned by @wrap, valid until ioh_wrap_free().
 */
const char *ioh_wrap_get_checksum(IohWrap *wrap);

/**
 * ioh_wrap_is_spawned:
 * @wrap: (nullable): a wrap.
 *
 * Returns: TRUE when a helper process serves the fd.
 */
gboolean ioh_wrap_is_spawned(IohWrap *wrap);

/**
 * ioh_wrap_get_pid:
 * @wrap: (nullable): a wrap.
 *
 * Returns: the PID of the helper, or 0 when none was spawned. The library reaps it; do
 *     not waitpid() it yourself (kill() is fine: the finish then reports the signal).
 */
GPid ioh_wrap_get_pid(IohWrap *wrap);

/**
 * ioh_wrap_set_progress_func:
 * @wrap: (not nullable): a wrap.
 * @func: (nullable): the callback, NULL to stop callbacks.
 * @user_data: passed to @func; held by the wrap until the callback is replaced (by any
 *     call, NULL @func included) or the wrap is freed.
 * @notify: (nullable): gives @user_data back, exactly once, on every path that drops
 *     it: when the callback is replaced, when the wrap is freed, and at once for a NULL
 *     @wrap. It runs once no call of @func with that data is in progress: at once, or
 *     when that call returns (so @func may replace itself, and another thread may free
 *     the wrap, while it runs).
 *
 * Registers a progress callback (replaces any previous one). It runs only while the
 * GMainContext captured by ioh_wrap_new() is iterated (or inside ioh_wrap_finish() when
 * the calling thread owns that context). Never called for a wrap without a helper.
 *
 * A NULL @wrap is a programmer error: as in GLib, a g_return_if_fail() critical is
 * logged (domain "iohwrap") and nothing else happens, except that @notify(@user_data)
 * runs first: the data was handed over and nothing would ever free it. (GLib's own
 * setters, e.g. g_source_set_callback(), leak it after a failed precondition; we prefer
 * the caller's destructor to run, which is safe because the call took ownership.)
 */
void ioh_wrap_set_progress_func(IohWrap *wrap, IohWrapProgressFunc func,
                                gpointer user_data, GDestroyNotify notify);

/**
 * ioh_wrap_get_progress:
 * @wrap: (nullable): a wrap.
 * @ret_written: (out) (optional): bytes written by the helper.
 * @ret_synced: (out) (optional): bytes that have left the page cache (durable once
 *   ioh_wrap_finish() returned TRUE).
 *
 * Latest progress the helper reported, without a main loop: reads what is pending on
 * the status pipe, never blocks. 0 and 0 for a wrap without a helper.
 */
void ioh_wrap_get_progress(IohWrap *wrap, guint64 *ret_written, guint64 *ret_synced);

/**
 * ioh_wrap_finish:
 * @wrap: a wrap.
 * @error: return location for a #GError.
 *
 * Closes the caller's end of the pipe if that fd number still names the pipe (the
 * caller must not use it afterwards; closing it first is fine), waits for the helper
 * (that is, until QEMU too has closed its copy of a save pipe) and returns TRUE only when
 * it exited 0: every byte written and durable. On failure the GError is the helper's
 * final error line (IOH_WRAP_ERROR_FAILED), or "helper killed by signal N"
 * (IOH_WRAP_ERROR_KILLED). Without a helper it closes nothing, and a save's file is
 * fdatasync'ed (through the wrap's own reference to it, so the caller may have closed
 * its fd already): TRUE means durable on both paths.
 * Idempotent: later calls (and ioh_wrap_finish_async()) return the first result again.
 *
 * Returns: TRUE when the stream was copied completely and made durable.
 */
gboolean ioh_wrap_finish(IohWrap *wrap, GError **error);

/**
 * ioh_wrap_finish_async:
 * @wrap: a wrap.
 * @cancellable: (nullable): cancelling it kills the helper (SIGKILL); the result is
 *     then G_IO_ERROR_CANCELLED unless the helper had already succeeded.
 * @callback: runs in the thread-default GMainContext of the calling thread.
 * @user_data: passed to @callback.
 *
 * The same as ioh_wrap_finish() for GMainLoop code: closes the caller's end, watches the
 * helper with a child-watch source, and calls @callback once it has exited (without a
 * helper, the fdatasync of a save runs in a GTask worker thread, not in the loop). Call
 * ioh_wrap_finish_finish() from @callback. Freeing the wrap while this is pending kills
 * the helper and completes the call with G_IO_ERROR_CANCELLED (the wrap stays valid for
 * ioh_wrap_finish_finish() inside @callback).
 */
void ioh_wrap_finish_async(IohWrap *wrap, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data);

/**
 * ioh_wrap_finish_finish:
 * @wrap: the wrap given to ioh_wrap_finish_async().
 * @result: the #GAsyncResult given to the callback.
 * @error: return location for a #GError.
 *
 * Returns: as ioh_wrap_finish(); FALSE with IOH_WRAP_ERROR_INVALID when @result is not
 *     from ioh_wrap_finish_async() of this very @wrap.
 */
gboolean ioh_wrap_finish_finish(IohWrap *wrap, GAsyncResult *result, GError **error);

/**
 * ioh_wrap_free:
 * @wrap: (nullable): a wrap.
 *
 * Frees @wrap. A helper still running is killed (SIGKILL) and reaped; the caller's end
 * of the pipe is closed as by ioh_wrap_finish(). The progress callback is not called
 * again; its notify runs (here, or when a call of the callback in progress in another
 * thread returns).
 */
void ioh_wrap_free(IohWrap *wrap);

/**
 * ioh_wrap_new_uri:
 * @uri: an NBD URI in libnbd's syntax (nbd://HOST[:PORT]/EXPORT,
 *     nbd+unix:///EXPORT?socket=PATH, nbds://...), or an RBD image,
 *     rbd:POOL/IMAGE[@SNAP][:conf=PATH][:id=USER][:keyring=PATH]: the helper's IN or OUT.
 * @save: TRUE: the stream goes to @uri; FALSE: it comes from @uri.
 * @ret_fd: (out): on success, the caller's end of the data pipe (CLOEXEC, blocking):
 *     give it to QEMU as for ioh_wrap_new().
 * @params: (nullable): as for ioh_wrap_new(); offset is where the stream starts in the
 *     export; a restore needs length (an export has a fixed size).
 * @options: (nullable): as for ioh_wrap_new_with_options() (a checksum, connections).
 * @error: return location for a #GError.
 *
 * ioh_wrap_new() for a target that has no fd: the helper is always spawned and connects
 * to @uri itself. Progress, finish, errors and checksum are those of a file wrap; every
 * message names @uri without its secrets (the query is dropped except socket=PATH).
 * Refused (IOH_WRAP_ERROR_INVALID): a @uri that is not an NBD URI or an RBD image name
 * that parses, a restore from an NBD URI without length (an RBD image records the
 * stream's length), connections with an RBD image, the values ioh_wrap_new() refuses. What only the server knows (refused
 * connection, export too small, read-only export) fails the finish with the helper's
 * message, e.g. "export nbd+unix:///x?socket=/s is 1048576 bytes, the stream needs more".
 *
 * Returns: (transfer full): the wrap, or NULL with @error set.
 * Since: 0.3
 */
IohWrap *ioh_wrap_new_uri(const char *uri, gboolean save, int *ret_fd,
                          const IohWrapParams *params, const IohWrapOptions *options,
                          GError **error);

/**
 * ioh_wrap_options_set_connections:
 * @options: the options.
 * @connections: the helper's --connections (NBD): 1 to 16, or 0 for its default
 *     (several when the server advertises multi-conn, else 1).
 * @error: return location for a #GError.
 *
 * Only for ioh_wrap_new_uri(): ioh_wrap_new_with_options() refuses options with
 * connections set (IOH_WRAP_ERROR_INVALID).
 *
 * Returns: FALSE with IOH_WRAP_ERROR_INVALID for a value out of range.
 * Since: 0.3
 */
gboolean ioh_wrap_options_set_connections(IohWrapOptions *options, guint connections,
                                          GError **error);

/**
 * ioh_wrap_options_set_stall_timeout:
 * @options: the options.
 * @seconds: the helper's --stall-timeout (NBD): 1 to 86400, or 0 for none (its default:
 *     a server that stops answering holds the copy).
 * @error: return location for a #GError.
 *
 * The helper then fails the copy (the finish's error, ETIMEDOUT) when the server is
 * silent for @seconds with commands in flight, the final flush included, and gives its
 * handshake @seconds (else 60). Only for ioh_wrap_new_uri(): ioh_wrap_new_with_options()
 * refuses options with a stall timeout (IOH_WRAP_ERROR_INVALID).
 *
 * Returns: FALSE with IOH_WRAP_ERROR_INVALID for a value out of range.
 * Since: 0.3
 */
gboolean ioh_wrap_options_set_stall_timeout(IohWrapOptions *options, guint seconds,
                                            GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(IohWrap, ioh_wrap_free)


/* ---- compression (0.3) ----------------------------------------------------------- */

/**
 * ioh_wrap_options_set_compress:
 * @options: the options.
 * @spec: (nullable): "zstd" (the helper's default level, 1) or "zstd:LEVEL" (LEVEL -7
 *     to 19; negative: zstd's fast levels), "auto" or "zstd:auto" (raw frames
 *     or a level chosen per window from the disk's and the compressor's measured speeds,
 *     the helper's `--compress=auto`), or NULL for none.
 * @error: return location for a #GError.
 *
 * Save only (ioh_wrap_new_with_options() refuses it on a restore): the helper stores
 * the stream as a sequence of standard zstd frames (its `--compress=zstd:LEVEL`), so
 * `zstd -dc` of the file from the stream's start gives the stream back. A checksum is
 * still of the stream. Compression always needs a helper: one is spawned whatever the
 * flags say (buffered unless DIRECT or FADVISE ask otherwise); the progress counts
 * stream bytes. ioh_wrap_get_stored_bytes() tells the compressed size after the finish.
 * Refuses another @spec (IOH_WRAP_ERROR_INVALID). (Since 0.3.)
 */
gboolean ioh_wrap_options_set_compress(IohWrapOptions *options, const char *spec,
                                       GError **error);

/**
 * ioh_wrap_options_set_decompress:
 * @options: the options.
 * @decompress: TRUE: the file holds zstd frames (from the stream's start, for
 *     IohWrapParams.length bytes when given: the stored length), and the helper hands
 *     on what they decode to.
 * @error: return location for a #GError.
 *
 * Restore only (ioh_wrap_new_with_options() refuses it on a save); always spawns a
 * helper. A corrupt image (a bad block, a frame checksum mismatch, a frame cut short)
 * fails the finish with the helper's line, `decompress PATH: corrupt zstd image: ...`
 * (errno EBADMSG): what was delivered before must be discarded, as after a checksum
 * mismatch. (Since 0.3.)
 */
gboolean ioh_wrap_options_set_decompress(IohWrapOptions *options, gboolean decompress,
                                         GError **error);

/**
 * ioh_wrap_options_set_threads:
 * @options: the options.
 * @threads: zstd's compression workers, 1 to 64; 0: the helper's default (the CPUs it
 *     may use: ioh_wrap_options_set_cpus(), else the caller's affinity).
 * @error: return location for a #GError.
 *
 * The helper's `--threads`. Only with ioh_wrap_options_set_compress() (the constructor
 * refuses it otherwise). Refuses more than 64 (IOH_WRAP_ERROR_INVALID). (Since 0.3.)
 */
gboolean ioh_wrap_options_set_threads(IohWrapOptions *options, guint threads,
                                      GError **error);

/**
 * ioh_wrap_get_stream_bytes:
 * @wrap: (nullable): a wrap.
 *
 * The length of the stream, from the final line of the helper's status protocol (its
 * `written`): what QEMU wrote (save) or was given (restore). Available once
 * ioh_wrap_finish() (or ioh_wrap_finish_finish()) returned TRUE for a wrap with a
 * helper; 0 before that, after a failure, for a NULL @wrap and without a helper.
 * (Since 0.3.)
 */
guint64 ioh_wrap_get_stream_bytes(IohWrap *wrap);

/**
 * ioh_wrap_get_stored_bytes:
 * @wrap: (nullable): a wrap.
 *
 * The bytes on the storage side, from the final line (its `stored`): written to the
 * file after the offset (save) or read from it (restore). Equal to
 * ioh_wrap_get_stream_bytes() unless the stream was (de)compressed; what an image
 * header records as the stored length. Available as ioh_wrap_get_stream_bytes() is;
 * 0 otherwise. (Since 0.3.)
 */
guint64 ioh_wrap_get_stored_bytes(IohWrap *wrap);

/* ---- parallel channels (0.4) ----------------------------------------------------- */

/**
 * ioh_wrap_new_channel:
 * @stream_fd: one connection of a parallel migration (QEMU's multifd: the main channel
 *     or one of its channels), a socket or a pipe: read by the helper on a save, written
 *     on a restore. The helper gets a copy; @stream_fd stays the caller's, who should
 *     close it once the wrap is made (else the helper of a restore never sees QEMU close
 *     its end, nor QEMU the helper's end). Not handed to QEMU: QEMU made the connection.
 * @fd: (inout): the image file, as for ioh_wrap_new(): its access mode gives the
 *     direction. On success the wrap holds it and *@fd is set to -1. Open it once per
 *     channel (each helper moves its own file position: no shared open file description).
 * @path: (nullable): as for ioh_wrap_new().
 * @flags: as for ioh_wrap_new(); a helper is always spawned.
 * @params: (nullable): offset: where this channel's region starts; length (restore): the
 *     region's stored bytes.
 * @options: (nullable): as for ioh_wrap_new_with_options(), plus a region
 *     (ioh_wrap_options_set_region()) on a save.
 * @error: return location for a #GError.
 *
 * One helper per channel, each with the layers of a single stream (checksum,
 * compression, the cache mode, the memory budget). Refuses what ioh_wrap_new_with_options()
 * refuses, and a @stream_fd that is not an open socket or pipe of the right direction
 * (IOH_WRAP_ERROR_BADFD). Finish and free each wrap as any other.
 *
 * Returns: (transfer full): the wrap, or NULL with @error set (*@fd untouched).
 * Since: 0.4
 */
IohWrap *ioh_wrap_new_channel(int stream_fd, int *fd, const char *path, IohWrapFlags flags,
                              const IohWrapParams *params, const IohWrapOptions *options,
                              GError **error);

/**
 * ioh_wrap_new_channel_uri:
 * @stream_fd: as for ioh_wrap_new_channel().
 * @uri: an NBD URI or an RBD image name, as for ioh_wrap_new_uri(): the image the
 *     channels share, each in its own region. The server must take one connection per
 *     channel at once (qemu-nbd: --shared=0, or more than the channels).
 * @save: TRUE: the stream goes to @uri; FALSE: it comes from @uri.
 * @params: (nullable): offset: this channel's region; length (restore): its stored bytes.
 * @options: (nullable): as for ioh_wrap_new_uri(), plus a region on a save (the
 *     helper refuses a request that would end past it before sending any byte of it:
 *     the finish reports "the stream passes the end of its region ...").
 * @error: return location for a #GError.
 *
 * ioh_wrap_new_channel() for a target that has no fd: the helper connects to @uri
 * itself and moves this channel's bytes between @stream_fd and its region. Refuses what
 * ioh_wrap_new_uri() and ioh_wrap_new_channel() refuse.
 *
 * Returns: (transfer full): the wrap, or NULL with @error set.
 * Since: 0.4
 */
IohWrap *ioh_wrap_new_channel_uri(int stream_fd, const char *uri, gboolean save,
                                  const IohWrapParams *params, const IohWrapOptions *options,
                                  GError **error);

/**
 * ioh_wrap_options_set_region:
 * @options: the options.
 * @size: save: the bytes this channel's stored stream may take from its offset; 0: none.
 * @error: return location for a #GError.
 *
 * With a region the helper never writes past offset + @size (a file: RLIMIT_FSIZE, the
 * write fails, the finish reports "File too large"; an export or RBD image: the helper's
 * --region, checked before each request is sent) and leaves the file's bytes past its stream
 * as they are (--no-truncate): other channels' regions. Restore: refused.
 *
 * Returns: FALSE with IOH_WRAP_ERROR_INVALID for a size past 2^63 - 1.
 * Since: 0.4
 */
gboolean ioh_wrap_options_set_region(IohWrapOptions *options, guint64 size, GError **error);
/* ---- placement (0.5) ------------------------------------------------------------- */

/**
 * ioh_wrap_options_set_cpus:
 * @options: the options.
 * @cpus: (nullable): a CPU list as `taskset -c` and cpusets write it ("0", "0-3,6");
 *     NULL: the helper runs wherever the caller may (the default).
 * @error: return location for a #GError.
 *
 * The helper's `--cpus`: the helper, its threads and its io_uring workers run on these
 * CPUs only. Where the process writing the pipe (QEMU's migration thread) is pinned, a
 * helper on the same CPUs spends about half the CPU per byte of one on another core
 * (docs/engine.md). A list that does not parse is IOH_WRAP_ERROR_INVALID here; one with
 * a CPU the helper may not use (its cgroup's cpuset) fails the constructor with the
 * helper's line naming `--cpus`. A list alone needs no helper: where the flags and the
 * other options need none (ioh_wrap_get_pid() is 0), nothing is placed nor checked.
 * Calling it again replaces the list (one that does not parse leaves the list as it
 * was); NULL removes it. (Since 0.5.)
 */
gboolean ioh_wrap_options_set_cpus(IohWrapOptions *options, const char *cpus,
                                   GError **error);

/* ---- encryption (0.4) ------------------------------------------------------------ */

/**
 * ioh_wrap_options_add_recipient:
 * @options: the options.
 * @recipient: an age X25519 recipient, "age1..." (a public key, as age-keygen prints).
 * @error: return location for a #GError.
 *
 * Save only (ioh_wrap_new_with_options() refuses it on a restore): the helper stores the
 * stream encrypted to every recipient added (its `--recipient`), as one age v1 file from
 * the stream's start (after compression when both are asked: `age -d` then `zstd -dc`
 * give the stream back). The saving host needs no secret. Always spawns a helper; a
 * checksum is still of the stream; ioh_wrap_get_stored_bytes() tells the encrypted size.
 * Refuses anything that is not an age X25519 recipient (IOH_WRAP_ERROR_INVALID; the
 * message never quotes it). (Since 0.4.)
 */
gboolean ioh_wrap_options_add_recipient(IohWrapOptions *options, const char *recipient,
                                        GError **error);

/**
 * ioh_wrap_options_add_recipients_file:
 * @options: the options.
 * @file: a recipients file in age's format (one recipient a line, '#' comments).
 * @error: return location for a #GError.
 *
 * As ioh_wrap_options_add_recipient() for each recipient in @file, which the helper reads
 * when it starts (a file it cannot read or that holds no recipient fails the wrap's
 * creation with the helper's line naming it). (Since 0.4.)
 */
gboolean ioh_wrap_options_add_recipients_file(IohWrapOptions *options, const char *file,
                                              GError **error);

/**
 * ioh_wrap_options_set_identity_file:
 * @options: the options.
 * @file: (nullable): an age identity file (age-keygen's format), or NULL for none.
 * @error: return location for a #GError.
 *
 * Restore only (refused on a save): the file holds an age image from the stream's start
 * (after which the helper decompresses, with ioh_wrap_options_set_decompress()), and
 * the helper decrypts it with the identities in @file. The secret never goes on the
 * helper's command line nor in its environment: at each ioh_wrap_new_with_options() the
 * library opens @file (refused, EPERM naming it, when group or others may read or write
 * it, as ssh refuses a private key; no symbolic link) and hands the helper the open file
 * as an fd (`--identity-fd`), which it reads into locked memory. No identity that
 * matches, or a chunk that fails authentication, fails the finish with the helper's
 * line (the byte offset of the failing chunk); what was delivered before must be
 * discarded, as after a checksum mismatch. (Since 0.4.)
 */
gboolean ioh_wrap_options_set_identity_file(IohWrapOptions *options, const char *file,
                                            GError **error);

/**
 * ioh_wrap_options_set_identity_fd:
 * @options: the options.
 * @fd: an fd the identities can be read from (a memfd, a pipe, an open file), or -1 for
 *     none.
 * @error: return location for a #GError.
 *
 * As ioh_wrap_options_set_identity_file(), for a caller that holds the key elsewhere
 * than in a file of its own. The options keep a duplicate of @fd (the caller keeps and
 * closes its own); the helper reads it from its current offset to its end, so one fd
 * serves one wrap (a second wrap would read nothing: for a file, prefer
 * ioh_wrap_options_set_identity_file()). Replaces an identity file set before, and the
 * other way round. (Since 0.4.)
 */
gboolean ioh_wrap_options_set_identity_fd(IohWrapOptions *options, int fd, GError **error);

/**
 * ioh_wrap_get_encryption:
 * @wrap: (nullable): a wrap.
 *
 * "age" when the helper encrypted what it stored (a save) or decrypted what it read (a
 * restore), from the final line of its status protocol; NULL otherwise, before a
 * successful finish, after a failure and without a helper. A save can be encrypted
 * without any recipient asked for here: the host's /etc/iohelper.conf may name
 * recipients for every save (docs/security.md); a caller that records how an image was
 * stored (as qemu-iohelper's header does) must ask. The string belongs to the wrap.
 * (Since 0.4.)
 */
const char *ioh_wrap_get_encryption(IohWrap *wrap);

G_END_DECLS
