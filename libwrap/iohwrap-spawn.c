/* iohwrap-spawn.c - spawning the helper
 *
 * The helper gets exactly four fds (five when decrypting):
 *   save:    0 = read end of the data pipe, 1 = the file, 2 = stderr pipe, 3 = status pipe
 *   restore: 0 = the file, 1 = write end of the data pipe, 2 = stderr pipe, 3 = status pipe,
 *            4 = the age identity (`--identity-fd=4`; iohwrap-age.c: never on argv)
 * and runs in its libvirt form `iohelper [OPTIONS] -- PATH FD`, so that its messages
 * name the file by its path. A wrap of a URI (iohwrap-uri.c) has no file: fd 1 or 0 is
 * /dev/null and the helper runs as `iohelper [OPTIONS] -- - env:IOHELPER_NBD_URI`
 * (restore: `env:IOHELPER_NBD_URI -`), the URI in its environment: every local user can
 * read a command line (ps), only the helper's owner its environment, and a URI may hold
 * secrets (a user name with a password, tls-psk-file=...). An RBD image's name goes the
 * same way, under the same variable: one pattern for every target without an fd (its
 * keyring= path is no secret, but its options are the caller's business).
 */
#include "config.h"

#include "iohwrap-private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioh-error.h"
#include "ioh-fd.h"
#include "ioh-pipe.h"

#define HELPER_STATUS_FD 3
#define FD_FLOOR 10        /* fds handed to the spawn are moved above this */
#define URI_ENV "IOHELPER_NBD_URI"

/* The fds of one spawn until the helper and the wrap own them: whatever is still here
 * when it is freed is closed. */
typedef struct {
    int data[2];
    int status[2];
    int err[2];
    int file;              /* our copy of the caller's file */
    int identity;          /* the age identity, or -1 */
} SpawnFds;

static SpawnFds *
spawn_fds_new(void)
{
    SpawnFds *f = g_new(SpawnFds, 1);

    f->data[0] = f->data[1] = f->status[0] = f->status[1] = -1;
    f->err[0] = f->err[1] = f->file = f->identity = -1;
    return f;
}

static void
spawn_fds_free(SpawnFds *f)
{
    if (!f) {
        return;
    }
    for (int i = 0; i < 2; i++) {
        ioh_fd_clear(&f->data[i]);
        ioh_fd_clear(&f->status[i]);
        ioh_fd_clear(&f->err[i]);
    }
    ioh_fd_clear(&f->file);
    ioh_fd_clear(&f->identity);
    g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SpawnFds, spawn_fds_free)

static char *
helper_path(void)
{
    const char *env = g_getenv("IOHELPER_PATH");

    if (env && *env) {
        return g_strdup(env);
    }
    return g_build_filename(IOHELPER_LIBEXECDIR, "iohelper", NULL);
}

static gboolean
check_helper(const char *helper, GError **error)
{
    struct stat st;

    if (stat(helper, &st) < 0) {
        int errsv = errno;
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_NOHELPER,
                    "helper %s: %s (set IOHELPER_PATH to override)", helper,
                    g_strerror(errsv));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode) || access(helper, X_OK) < 0) {
        g_set_error(error, IOH_WRAP_ERROR, IOH_WRAP_ERROR_NOHELPER,
                    "helper %s: not an executable file", helper);
        return FALSE;
    }
    return TRUE;
}

/* Moves @fd above FD_FLOOR (CLOEXEC), so that no fd handed to the spawn collides with
 * a target number 0..3 of another. */
static gboolean
lift_fd(int *fd, GError **error)
{
    int nfd;

    if (*fd >= FD_FLOOR) {
        return TRUE;
    }
    nfd = fcntl(*fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    if (nfd < 0) {
        g_autofree char *name = g_strdup_printf("fd %d", *fd);
        return ioh_error_set_errno(error, errno, "dup", name);
    }
    close(*fd);
    *fd = nfd;
    return TRUE;
}

/* A channel's stream (ioh_wrap_new_channel()): the helper's end is a copy of the
 * caller's socket or pipe; the caller has no end of ours. */
static gboolean
open_data(SpawnFds *f, int stream_fd, gboolean save, GError **error)
{
    if (stream_fd < 0) {
        return ioh_pipe_open(f->data, 0, IOH_PIPE_DEFAULT_SIZE, error);
    }
    f->data[save ? 0 : 1] = fcntl(stream_fd, F_DUPFD_CLOEXEC, FD_FLOOR);
    if (f->data[save ? 0 : 1] < 0) {
        g_autofree char *name = g_strdup_printf("fd %d", stream_fd);
        return ioh_error_set_errno(error, errno, "dup", name);
    }
    return TRUE;
}

/* Only the data pipe is raised: every pipe's size counts against the user's
 * pipe-user-pages-soft quota, past which new pipes get one page. The status and stderr
 * pipes keep the default 64 KiB: ~600 status lines, dropped rather than blocking when
 * nobody reads (a caller that reads no progress must never stall the copy: the status
 * pipe is non-blocking and the helper drops a line that does not fit); the helper writes
 * one stderr line at its end. */
static gboolean
open_fds(SpawnFds *f, int fd, const IohWrap *wrap, GError **error)
{
    gboolean save = wrap->save;
    g_autoptr(GError) err = NULL;

    f->identity = iohw_age_identity_open(wrap->options, &err);
    if (err) {
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    if (f->identity >= 0 && !lift_fd(&f->identity, error)) {
        return FALSE;
    }
    if (!open_data(f, wrap->stream_fd, save, error) ||
        !ioh_pipe_open(f->status, O_NONBLOCK, 0, error) ||
        !ioh_pipe_open(f->err, 0, 0, error) || !ioh_fd_set_nonblock(f->err[0], TRUE, error)) {
        return FALSE;
    }
    /* A URI has no file: the helper's unused stdio is /dev/null. */
    f->file = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, FD_FLOOR)
                      : open("/dev/null", O_RDWR | O_CLOEXEC);
    if (f->file < 0) {
        g_autofree char *name = g_strdup_printf("fd %d", fd);
        return ioh_error_set_errno(error, errno, "dup", name);
    }
    return lift_fd(&f->data[save ? 0 : 1], error) && lift_fd(&f->status[1], error) &&
           lift_fd(&f->err[1], error) && lift_fd(&f->file, error);
}

static GPtrArray *
helper_argv(const char *helper, const IohWrap *wrap, const IohwPlan *plan)
{
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);

    g_ptr_array_add(argv, g_strdup(helper));
    if (plan->mode != IOH_CACHE_BUFFERED) {
        /* --direct, --fadvise: the options are spelled as the modes */
        g_ptr_array_add(argv, g_strdup_printf("--%s", ioh_cache_mode_to_string(plan->mode)));
    }
    g_ptr_array_add(argv, g_strdup_printf("--status-fd=%d", HELPER_STATUS_FD));
    g_ptr_array_add(argv, g_strdup_printf("--status-interval=%u", plan->interval_ms));
    if (plan->offset) {
        g_ptr_array_add(argv, g_strdup_printf("--offset=%" G_GUINT64_FORMAT, plan->offset));
    }
    if (plan->length && !wrap->save) {
        g_ptr_array_add(argv, g_strdup_printf("--length=%" G_GUINT64_FORMAT, plan->length));
    }
    if (wrap->options->verify_checksum) {
        g_ptr_array_add(argv, g_strdup_printf("--verify-checksum=%s",
                                              wrap->options->verify_checksum));
    } else if (wrap->options->checksum) {
        g_ptr_array_add(argv, g_strdup_printf("--checksum=%s", wrap->options->checksum));
    }
    iohw_options_add_compress_args(wrap->options, argv);
    if (wrap->options->connections) {
        g_ptr_array_add(argv, g_strdup_printf("--connections=%u",
                                              wrap->options->connections));
    }
    if (wrap->options->region && wrap->uri) {
        /* an export or image has no file-size limit: the helper bounds its own writes */
        g_ptr_array_add(argv, g_strdup_printf("--region=%" G_GUINT64_FORMAT,
                                              wrap->options->region));
    } else if (wrap->options->region) {
        g_ptr_array_add(argv, g_strdup("--no-truncate"));
    }
    if (wrap->options->stall_timeout) {
        g_ptr_array_add(argv, g_strdup_printf("--stall-timeout=%u",
                                              wrap->options->stall_timeout));
    }
    g_ptr_array_add(argv, g_strdup("--"));
    if (wrap->uri) {
        g_ptr_array_add(argv, g_strdup(wrap->save ? "-" : "env:" URI_ENV));
        g_ptr_array_add(argv, g_strdup(wrap->save ? "env:" URI_ENV : "-"));
    } else {
        g_ptr_array_add(argv, g_strdup(wrap->path));
        g_ptr_array_add(argv, g_strdup(wrap->save ? "1" : "0"));
    }
    g_ptr_array_add(argv, NULL);
    return argv;
}

/* In the child before exec (async-signal-safe only): a channel's region bounds the file
 * the helper may write, on every write path of the engine (EFBIG past it). */
static void
limit_file_size(gpointer data)
{
    struct rlimit rl;

    rl.rlim_cur = rl.rlim_max = (rlim_t)*(const guint64 *)data;
    (void)setrlimit(RLIMIT_FSIZE, &rl);
}

static gboolean
run_helper(IohWrap *wrap, GPtrArray *argv, const SpawnFds *f, GError **error)
{
    guint64 limit = wrap->start + wrap->options->region;
    int source_fds[] = { f->status[1], f->identity };
    int target_fds[] = { HELPER_STATUS_FD, IOHW_IDENTITY_FD };
    g_auto(GStrv) envp = wrap->uri ? g_environ_setenv(g_get_environ(), URI_ENV, wrap->uri, TRUE)
                                   : NULL;

    return g_spawn_async_with_pipes_and_fds(NULL, (const char *const *)argv->pdata,
                                            (const char *const *)envp,
                                            G_SPAWN_DO_NOT_REAP_CHILD,
                                            wrap->options->region ? limit_file_size : NULL,
                                            &limit,
                                            wrap->save ? f->data[0] : f->file,
                                            wrap->save ? f->file : f->data[1], f->err[1],
                                            source_fds, target_fds,
                                            f->identity >= 0 ? 2 : 1, &wrap->pid,
                                            NULL, NULL, NULL, error);
}

/* Ours from now on: the caller's end of the data pipe, the read ends, the file. */
static void
adopt_fds(IohWrap *wrap, SpawnFds *f)
{
    int *caller_end = &f->data[wrap->save ? 1 : 0];
    struct stat st;

    if (fstat(*caller_end, &st) == 0) {
        wrap->caller_dev = st.st_dev;
        wrap->caller_ino = st.st_ino;
    }
    wrap->caller_fd = *caller_end;
    *caller_end = -1;
    if (!wrap->uri) {
        wrap->file_fd = f->file;   /* a URI's /dev/null is closed with @f */
        f->file = -1;
    }
    wrap->monitor = iohw_monitor_new(wrap->path, wrap->save, f->status[0], f->err[0]);
    f->status[0] = f->err[0] = -1;
    /* The helper's ends are its own now: the pipes end when it closes them (or exits). */
    ioh_fd_clear(&f->status[1]);
    ioh_fd_clear(&f->err[1]);
    ioh_fd_clear(&f->data[wrap->save ? 0 : 1]);
    ioh_fd_clear(&f->identity);   /* the helper's copy is read and closed by it */
}

gboolean
iohw_spawn(IohWrap *wrap, int fd, const IohwPlan *plan, GError **error)
{
    g_autofree char *helper = helper_path();
    g_autoptr(SpawnFds) f = NULL;
    g_autoptr(GPtrArray) argv = NULL;

    if (!check_helper(helper, error)) {
        return FALSE;
    }
    f = spawn_fds_new();
    if (!open_fds(f, fd, wrap, error)) {
        return FALSE;
    }
    argv = helper_argv(helper, wrap, plan);
    if (!run_helper(wrap, argv, f, error)) {
        return FALSE;
    }
    g_debug("helper %s for %s: pid %d, %s %s", helper, wrap->path, (int)wrap->pid,
            ioh_cache_mode_to_string(plan->mode), wrap->save ? "save" : "restore");
    wrap->state = IOHW_STATE_RUNNING;
    wrap->helper = g_steal_pointer(&helper);
    adopt_fds(wrap, f);
    return TRUE;
}
