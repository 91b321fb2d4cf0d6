/* iohelper.c - the iohelper binary: a thin CLI over the copy engine
 *
 * Only this file prints and exits. Messages: "iohelper: <what> <path>: <cause>", or in
 * libvirt's form "iohelper: failure with <PATH>: <reason>" (libvirt shows that text).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ioh-args.h"
#include "ioh-args-age.h"
#include "ioh-clash.h"
#include "ioh-conf.h"
#include "ioh-cpus.h"
#include "ioh-engine.h"
#include "ioh-error.h"
#include "ioh-escape.h"
#include "ioh-nbd-uri.h"
#include "ioh-rbd-name.h"
#include "ioh-status.h"

typedef struct {
    IohArgs *args;
    gboolean tty;
    gboolean drew;
} Reporter;

static void
draw_progress(const IohStats *s)
{
    double secs = ioh_stats_seconds(s);
    double rate = secs > 0 ? (double)s->bytes / secs : 0;

    /* dd status=progress style, redrawn in place. */
    fprintf(stderr, "\r%" G_GUINT64_FORMAT " bytes (%.1f GB, %.1f GiB) copied, %.0f s, "
            "%.1f MB/s, %.1f GiB synced   ", s->bytes, (double)s->bytes / 1e9,
            (double)s->bytes / (1 << 30), secs, rate / 1e6, (double)s->synced / (1 << 30));
    fflush(stderr);
}

static void
on_progress(const IohStats *s, gpointer data)
{
    Reporter *r = data;

    if (r->tty) {
        draw_progress(s);
        r->drew = TRUE;
    }
    if (r->args->status_fd >= 0) {
        if (s->end_us == 0) {
            /* the final line is main()'s to write once the files are closed */
            ioh_status_write_progress(r->args->status_fd, s);
        }
    }
}

static IohEnd *
open_operand(const IohOperand *op, const char *spec, gboolean for_write, const IohArgs *a,
             GError **error)
{
    g_autofree char *name = NULL;

    switch (op->kind) {
    case IOH_OPERAND_STDIO:
        return ioh_end_from_fd(op->fd, op->fd == 0 ? "stdin" : "stdout", error);
    case IOH_OPERAND_FD:
        name = g_strdup_printf("fd %d", op->fd);
        return ioh_end_from_fd(op->fd, name, error);
    case IOH_OPERAND_NBD:
        return ioh_nbd_end_new(spec);    /* connected by the engine's nbd layer */
    case IOH_OPERAND_RBD:
        return ioh_rbd_end_new(spec);    /* connected by the engine's rbd layer */
    case IOH_OPERAND_PATH:
    default:
        return ioh_end_open(spec, for_write, a->copy.has_offset ? a->copy.offset : 0, error);
    }
}

/* libvirt's form: FD's access mode gives the direction, its O_DIRECT flag the mode. */
static gboolean
open_libvirt(IohArgs *a, IohEnd **ret_src, IohEnd **ret_dst, GError **error)
{
    gboolean direct = FALSE;
    int mode = 0;
    g_autoptr(GError) local = NULL;
    g_autoptr(IohEnd) file = NULL;
    g_autoptr(IohEnd) pipe = NULL;

    if (!ioh_fd_access_mode(a->fd, &mode, &direct, &local)) {
        /* the record's error line names the image (operation fcntl, path PATH) */
        g_propagate_error(error, ioh_error_new_literal(local->code, "fcntl", a->path,
                                                       local->message));
        return FALSE;
    }
    if (mode == O_RDWR) {
        g_autofree char *msg = g_strdup_printf("fd %d is open read-write; expected O_WRONLY "
                                               "(save) or O_RDONLY (restore)", a->fd);
        g_propagate_error(error, ioh_error_new_literal(EINVAL, "open", a->path, msg));
        return FALSE;
    }
    if (direct) {
        a->copy.mode = IOH_CACHE_DIRECT;
    }
    g_debug("libvirt form: fd %d is %s%s: a %s in %s mode", a->fd,
            mode == O_WRONLY ? "O_WRONLY" : "O_RDONLY", direct ? " with O_DIRECT" : "",
            mode == O_WRONLY ? "save" : "restore", ioh_cache_mode_to_string(a->copy.mode));
    file = ioh_end_from_fd(a->fd, a->path, error);
    if (!file) {
        return FALSE;
    }
    pipe = mode == O_WRONLY ? ioh_end_from_fd(0, "stdin", error)
                            : ioh_end_from_fd(1, "stdout", error);
    if (!pipe) {
        return FALSE;
    }
    *ret_src = mode == O_WRONLY ? g_steal_pointer(&pipe) : g_steal_pointer(&file);
    *ret_dst = mode == O_WRONLY ? g_steal_pointer(&file) : g_steal_pointer(&pipe);
    return TRUE;
}

/* A direct save whose sink cleared O_DIRECT (an unaligned rest, a short write): the
 * bytes from there to where the copy ended went through the page cache. */
static void
note_buffered(IohEnd *dst, IohStats *stats)
{
    off_t end = dst->direct_cleared ? lseek(dst->fd, 0, SEEK_CUR) : -1;

    if (end >= 0 && (guint64)end > dst->direct_cleared_at) {
        stats->buffered = (guint64)end - dst->direct_cleared_at;
    }
}

static gboolean
run(IohArgs *a, IohStats *stats, GError **error)
{
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    Reporter rep = { .args = a };
    gboolean ok;

    /* Before opening anything: a save must not truncate an image only to fail. */
    if (a->status_fd >= 0 && fcntl(a->status_fd, F_GETFD) < 0) {
        g_set_error(error, IOH_ERROR, EBADF, "--status-fd %d: not an open file descriptor",
                    a->status_fd);
        return FALSE;
    }
    if (!ioh_clash_check_direction(a, error)) {
        return FALSE;
    }
    if (a->libvirt) {
        if (!open_libvirt(a, &src, &dst, error)) {
            return FALSE;
        }
    } else {
        src = open_operand(&a->in_op, a->in, FALSE, a, error);
        if (!src) {
            return FALSE;
        }
        dst = open_operand(&a->out_op, a->out, TRUE, a, error);
        if (!dst) {
            return FALSE;
        }
    }
    if (!ioh_args_age_check_plain(a, src->fd, src->name,
                                  a->copy.has_offset ? a->copy.offset : 0, dst->fd, error)) {
        return FALSE;
    }
    /* ioh_clash_check() compared them before: this is what was actually opened. */
    if (ioh_clash_same_data(src->fd, dst->fd)) {
        g_set_error(error, IOH_ARGS_ERROR, 0, "%s and %s are the same file: a copy onto "
                    "itself", src->name, dst->name);
        return FALSE;
    }
    rep.tty = a->progress && isatty(STDERR_FILENO);
    if (rep.tty || a->status_fd >= 0) {
        a->copy.progress = on_progress;
        a->copy.progress_data = &rep;
    }
    if (a->status_fd >= 0) {
        ioh_status_write_ready(a->status_fd);    /* nothing more to refuse up front */
    }

    ok = ioh_copy(src, dst, &a->copy, stats, error);
    note_buffered(dst, stats);
    if (rep.drew) {
        fputc('\n', stderr);
    }
    /* Close the destination first and check it: a failed close can mean lost data. */
    if (ok) {
        int dst_fd = dst->fd;
        ok = ioh_end_close(dst, error);
        if (src->fd == dst_fd) {
            src->fd = -1;    /* one fd on both sides (a socket): closed once */
        }
        ok = ok && ioh_end_close(src, error);
    }
    return ok;
}

static void
report_failure(IohArgs *a, GError *error)
{
    /* One line on stderr whatever a path holds: control characters become '?'. */
    g_autofree char *message = ioh_escape_line(error->message);

    if (a->libvirt) {
        g_autofree char *path = ioh_escape_line(a->path);
        fprintf(stderr, "iohelper: failure with %s: %s\n", path, message);
    } else {
        fprintf(stderr, "iohelper: %s\n", message);
    }
}

/* The final line on the status fd, when there is one that is open. */
static void
write_final(const IohArgs *a, const IohStats *stats, const GError *error,
            IohProtocolMsg *final)
{
    ioh_status_final(final, stats, error);
    if (a->status_fd >= 0 && fcntl(a->status_fd, F_GETFD) >= 0) {
        ioh_status_write_final(a->status_fd, final);
    }
}

/* A usage error (exit 2) found once ioh_clash_check() passed: the status fd is no data
 * side, so the error goes there too (a config file, an option the ends refuse), and a
 * caller learns the cause without reading stderr. Nothing is recorded. */
static int
usage_failure(IohArgs *a, const IohStats *stats, GError *error)
{
    g_auto(IohProtocolMsg) final = { 0 };

    write_final(a, stats, error, &final);
    report_failure(a, error);
    ioh_args_clear(a);
    return 2;
}

/* Read by LeakSanitizer (the ASan build of CI) at exit, unused otherwise. librbd keeps
 * objects of its own (allocated in librbd, referenced from no memory of ours) when an
 * operation timed out and the image is left open on purpose (ends/ioh-rbd.c: closing it
 * would wait for the cluster again): they are librbd's, not a leak of this program. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);

/* ... and without a report of the suppressions used: a failure is one line. */
const char *
__lsan_default_options(void)
{
    return "print_suppressions=0";
}

const char *
__lsan_default_suppressions(void)
{
    return "leak:librbd.so\nleak:librados.so\nleak:libceph-common.so\n";
}

/* What follows the checks of the command line and precedes the copy: the placement, the
 * config file, the age keys. A failure is a usage error. */
static gboolean
prepare(IohArgs *a, GError **error)
{
    /* Before any thread or io_uring exists: they inherit the affinity. */
    if (a->has_cpus && !ioh_cpus_apply(&a->cpus, error)) {
        g_prefix_error(error, "--cpus: ");
        return FALSE;
    }
    return ioh_conf_read(a, error) && ioh_args_age_load(a, error);
}

static int
iohelper_main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    IohArgs args;
    IohStats stats = { 0 };
    g_auto(IohProtocolMsg) final = { 0 };
    gboolean ok;

    /* stdout may be the stream: every log message (g_debug with G_MESSAGES_DEBUG=iohelper
     * included) goes to stderr. */
    g_log_writer_default_set_use_stderr(TRUE);
    /* A reader that goes away must give EPIPE and a message, not a silent death. */
    signal(SIGPIPE, SIG_IGN);
    /* Past RLIMIT_FSIZE, write() must fail with EFBIG and a message, not kill us. */
    signal(SIGXFSZ, SIG_IGN);

    if (!ioh_args_parse(argc, argv, &args, &error)) {
        fprintf(stderr, "iohelper: %s (try --help)\n", error->message);
        return 2;
    }
    if (args.help) {
        fputs(ioh_args_usage(), stdout);
        ioh_args_clear(&args);
        return 0;
    }
    if (args.version) {
        printf("iohelper %s\n", IOHELPER_VERSION);
        ioh_args_clear(&args);
        return 0;
    }

    /* Colliding parts are a usage error: nothing opened, nothing recorded, and not a
     * word on the status fd, which may be one of them. */
    if (!ioh_clash_check(&args, &error)) {
        report_failure(&args, error);
        ioh_args_clear(&args);
        return 2;
    }
    if (!prepare(&args, &error)) {
        return usage_failure(&args, &stats, error);
    }
    /* The host's budget for buffers (ioh-budget.h): a lease given back at exit. */
    g_autoptr(IohBudget) budget = args.has_memory_budget
                                      ? ioh_budget_new(args.memory_budget, NULL) : NULL;
    args.copy.budget = budget;

    ok = run(&args, &stats, &error);
    if (!ok && g_error_matches(error, IOH_ARGS_ERROR, 0)) {
        return usage_failure(&args, &stats, error);
    }
    /* The final line, a result only once nothing can fail any more (synced, closed). */
    write_final(&args, &stats, ok ? NULL : error, &final);
    if (args.record) {
        /* an NBD URI without the secrets of its query (tls-psk-file=...), an RBD image
         * without its options */
        g_autofree char *out = args.libvirt ? NULL
                               : args.out_op.kind == IOH_OPERAND_NBD ? ioh_nbd_safe_name(args.out)
                               : args.out_op.kind == IOH_OPERAND_RBD ? ioh_rbd_safe_name(args.out)
                                                                     : NULL;
        ioh_status_append_record(args.record, &final, &stats, args.libvirt,
                                 args.libvirt ? args.path : out ? out : args.out);
    }
    if (!ok) {
        report_failure(&args, error);
        ioh_args_clear(&args);
        return 1;
    }
    if (args.stats != IOH_STATS_NONE) {
        g_autofree char *line = args.stats == IOH_STATS_JSON ? ioh_stats_format_json(&stats)
                                                             : ioh_stats_format_text(&stats);
        fprintf(stderr, "%s%s\n", args.stats == IOH_STATS_JSON ? "" : "iohelper: ", line);
    }
    ioh_args_clear(&args);
    return 0;
}

int
main(int argc, char **argv)
{
    int code = iohelper_main(argc, argv);

    if (ioh_rbd_left_open()) {
        /* librbd's threads still use what exit()'s destructors would free */
        fflush(NULL);
        _exit(code);
    }
    return code;
}
