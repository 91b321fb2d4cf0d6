/* ioh-clash.c - refuse command lines whose parts collide, before anything is opened */
#include "ioh-clash.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ioh-nbd-uri.h"
#include "ioh-rbd-name.h"
#include "ioh-option-rules.h"

/* One part of the command line, as the file system sees it. */
typedef struct {
    char *label;         /* for messages: "OUT (fd 5)", "--record /x" */
    gboolean known;      /* stat'ed: st is valid */
    gboolean absent;     /* a path that does not exist yet: dir_st and base are valid */
    struct stat st;
    struct stat dir_st;
    char *base;
    int flags;           /* F_GETFL of an fd, 0 for a path */
} Part;

static void
part_clear(Part *p)
{
    g_clear_pointer(&p->label, g_free);
    g_clear_pointer(&p->base, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Part, part_clear)

static void
part_from_fd(Part *p, int fd, char *label)
{
    memset(p, 0, sizeof(*p));
    p->label = label;
    p->flags = fcntl(fd, F_GETFL);
    p->known = p->flags >= 0 && fstat(fd, &p->st) == 0;
    if (!p->known) {
        p->flags = 0;
    }
}

static void
part_from_path(Part *p, const char *path, char *label)
{
    memset(p, 0, sizeof(*p));
    p->label = label;
    if (stat(path, &p->st) == 0) {
        p->known = TRUE;
    } else if (errno == ENOENT) {
        g_autofree char *dir = g_path_get_dirname(path);
        if (stat(dir, &p->dir_st) == 0) {
            p->absent = TRUE;
            p->base = g_path_get_basename(path);
        }
    }
}

static void
part_from_operand(Part *p, const IohOperand *op, const char *spec, const char *role)
{
    if (op->kind == IOH_OPERAND_PATH) {
        part_from_path(p, spec, g_strdup_printf("%s '%s'", role, spec));
    } else {
        part_from_fd(p, op->fd, g_strdup_printf("%s (%s)", role,
                                               op->kind == IOH_OPERAND_STDIO
                                                   ? (op->fd == 0 ? "stdin" : "stdout")
                                                   : spec));
    }
}

static gboolean
part_same(const Part *a, const Part *b)
{
    if (a->known && b->known) {
        return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
    }
    return a->absent && b->absent && a->dir_st.st_dev == b->dir_st.st_dev &&
           a->dir_st.st_ino == b->dir_st.st_ino && g_str_equal(a->base, b->base);
}

/* Where bytes stay: a regular file, a block device, or a path about to become a file. */
static gboolean
part_is_storage(const Part *p)
{
    return p->absent || (p->known && (S_ISREG(p->st.st_mode) || S_ISBLK(p->st.st_mode)));
}

/* Copying onto itself: storage or a pipe (a terminal or a socket has two streams). */
static gboolean
part_is_data_clash(const Part *in, const Part *out)
{
    return part_same(in, out) &&
           (part_is_storage(in) || (in->known && S_ISFIFO(in->st.st_mode)));
}

static gboolean
part_is_null(const Part *p)
{
    return p->known && S_ISCHR(p->st.st_mode) && p->st.st_rdev == makedev(1, 3);
}

/* The two data sides: IN and OUT, or in the libvirt form FD and the stream's stdio.
 * FALSE (no error) when the libvirt FD is unusable: opening it says why, as stock does. */
static gboolean
data_parts(const IohArgs *a, Part *in, Part *out)
{
    int mode;

    if (!a->libvirt) {
        part_from_operand(in, &a->in_op, a->in, "IN");
        part_from_operand(out, &a->out_op, a->out, "OUT");
        return TRUE;
    }
    mode = fcntl(a->fd, F_GETFL);
    if (mode < 0 || (mode & O_ACCMODE) == O_RDWR) {
        return FALSE;
    }
    if ((mode & O_ACCMODE) == O_WRONLY) {
        part_from_fd(in, 0, g_strdup("the stream (stdin)"));
        part_from_fd(out, a->fd, g_strdup_printf("the image (fd %d)", a->fd));
    } else {
        part_from_fd(in, a->fd, g_strdup_printf("the image (fd %d)", a->fd));
        part_from_fd(out, 1, g_strdup("the stream (stdout)"));
    }
    return TRUE;
}

static gboolean
check_channel(const Part *ch, const Part *in, const Part *out, const char *why,
              GError **error)
{
    const Part *hit = part_same(ch, out) ? out : part_same(ch, in) ? in : NULL;

    if (hit && !part_is_null(ch)) {
        return ioh_args_usage_error(error, "%s is the same file as %s: %s", ch->label,
                                    hit->label, why);
    }
    return TRUE;
}

static gboolean
check_channels(const IohArgs *a, const Part *in, const Part *out, GError **error)
{
    if (a->status_fd >= 0) {
        g_auto(Part) ch = { 0 };
        part_from_fd(&ch, a->status_fd, g_strdup_printf("--status-fd %d", a->status_fd));
        if (!check_channel(&ch, in, out, "its lines would land in the data", error)) {
            return FALSE;
        }
    }
    if (a->record) {
        g_auto(Part) ch = { 0 };
        part_from_path(&ch, a->record, g_strdup_printf("--record '%s'", a->record));
        if (!check_channel(&ch, in, out, "its line would land in the data", error)) {
            return FALSE;
        }
    }
    if (a->stats != IOH_STATS_NONE || (a->progress && isatty(STDERR_FILENO))) {
        g_auto(Part) ch = { 0 };
        part_from_fd(&ch, STDERR_FILENO,
                     g_strdup(a->stats != IOH_STATS_NONE ? "--stats: standard error"
                                                         : "--progress: standard error"));
        if (!check_channel(&ch, in, out, "what it prints would land in the data", error)) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
check_options(const IohArgs *a, const Part *in, const Part *out, GError **error)
{
    gboolean in_st = part_is_storage(in), out_st = part_is_storage(out);
    const char *opt = a->copy.has_offset ? "--offset" : a->direct ? "--direct"
                      : a->fadvise ? "--fadvise" : NULL;

    if (opt && !in_st && !out_st && in->known && out->known) {
        return ioh_args_usage_error(error, "%s applies to a file or block device, and "
                                    "neither %s nor %s is one", opt, in->label, out->label);
    }
    if (a->copy.has_offset && in_st && out_st) {
        return ioh_args_usage_error(error, "--offset: %s and %s are both files or devices: "
                                    "say which side it means by passing the other as '-' "
                                    "or 'fd:N'", in->label, out->label);
    }
    if (a->copy.has_offset && out_st && (out->flags & O_APPEND)) {
        return ioh_args_usage_error(error, "--offset: %s is open with O_APPEND: every write "
                                    "lands at its end, whatever the offset", out->label);
    }
    return TRUE;
}

gboolean
ioh_clash_check(const IohArgs *a, GError **error)
{
    g_auto(Part) in = { 0 };
    g_auto(Part) out = { 0 };

    if (!data_parts(a, &in, &out)) {
        return TRUE;
    }
    if (part_is_data_clash(&in, &out)) {
        return ioh_args_usage_error(error, "%s and %s are the same file: a copy onto itself",
                                    in.label, out.label);
    }
    return check_channels(a, &in, &out, error) && check_options(a, &in, &out, error);
}

gboolean
ioh_clash_same_data(int in_fd, int out_fd)
{
    g_auto(Part) in = { 0 };
    g_auto(Part) out = { 0 };

    part_from_fd(&in, in_fd, NULL);
    part_from_fd(&out, out_fd, NULL);
    return part_is_data_clash(&in, &out);
}

/* ---- the rules between options (ioh-option-rules.h), in the helper's words -------- */

/* The helper's words for @rule; @src and @dst name the ends when the direction is known. */
static gboolean
rule_error(IohOptionRule rule, const char *src, const char *dst, GError **error)
{
    switch (rule) {
    case IOH_OPTION_RULE_OK:
        return TRUE;
    case IOH_OPTION_RULE_DIRECT_AND_FADVISE:
        return ioh_args_usage_error(error, "--direct and --fadvise cannot be combined");
    case IOH_OPTION_RULE_COMPRESS_AND_DECOMPRESS:
        return ioh_args_usage_error(error, "--compress and --decompress cannot be combined");
    case IOH_OPTION_RULE_NBD_OPTIONS_NEED_NBD:
        return ioh_args_usage_error(error, "--connections, --requests, --request-size and "
                                    "--stall-timeout need an NBD URI or an RBD image as IN "
                                    "or OUT");
    case IOH_OPTION_RULE_COMPRESS_NEEDS_SAVE:
        return ioh_args_usage_error(error, "--compress is for a save (a pipe into a file), "
                                    "not a copy from %s to %s", src, dst);
    case IOH_OPTION_RULE_DECOMPRESS_NEEDS_RESTORE:
        return ioh_args_usage_error(error, "--decompress is for a restore (a file into a "
                                    "pipe), not a copy from %s to %s", src, dst);
    case IOH_OPTION_RULE_ENCRYPT_AND_DECRYPT:
        return ioh_args_usage_error(error, "--recipient or --recipients-file (a save) and "
                                    "--identity or --identity-fd (a restore) cannot be "
                                    "combined");
    case IOH_OPTION_RULE_ENCRYPT_NEEDS_SAVE:
        return ioh_args_usage_error(error, "--recipient and --recipients-file are for a save "
                                    "(a pipe into a file), not a copy from %s to %s", src, dst);
    case IOH_OPTION_RULE_DECRYPT_NEEDS_RESTORE:
        return ioh_args_usage_error(error, "--identity and --identity-fd are for a restore "
                                    "(a file into a pipe), not a copy from %s to %s", src,
                                    dst);
    case IOH_OPTION_RULE_THREADS_NEED_COMPRESS:
    default:
        /* the words of qemu-iohelper's refusal of the same */
        return ioh_args_usage_error(error, "--threads needs --compress or encryption (they "
                                    "are zstd's compression threads)");
    }
}

/* An NBD export or an RBD image: an end without an fd. */
static gboolean
is_remote(const IohOperand *op)
{
    return op->kind == IOH_OPERAND_NBD || op->kind == IOH_OPERAND_RBD;
}

/* @direction: NULL when not known yet. */
static void
option_set(const IohArgs *a, const IohDirection *direction, IohOptionSet *ret)
{
    *ret = (IohOptionSet){
        .direct = a->direct,
        .fadvise = a->fadvise,
        .compress = a->compress,
        .decompress = a->decompress,
        .encrypt = a->encrypt,
        .decrypt = a->decrypt,
        .threads = a->copy.threads,
        .nbd_options = a->nbd_option,
        .nbd = !a->libvirt && (is_remote(&a->in_op) || is_remote(&a->out_op)),
        .direction_known = direction != NULL,
        .direction = direction ? *direction : IOH_DIRECTION_COPY,
    };
}

/* An RBD image's own options: --grow for a save into one; --connections is NBD's (librbd
 * keeps one session to the cluster and talks to every OSD). */
static gboolean
check_rbd(const IohArgs *a, GError **error)
{
    gboolean rbd = !a->libvirt && (a->in_op.kind == IOH_OPERAND_RBD ||
                                   a->out_op.kind == IOH_OPERAND_RBD);

    if (a->copy.rbd_grow && (a->libvirt || a->out_op.kind != IOH_OPERAND_RBD)) {
        return ioh_args_usage_error(error, "--grow is for a save into an RBD image");
    }
    if (a->copy.rbd_grow && a->copy.no_truncate) {
        return ioh_args_usage_error(error, "--grow and --no-truncate: a region of an RBD "
                                    "image never resizes it");
    }
    if (a->copy.region && (a->libvirt || !is_remote(&a->out_op))) {
        /* a file's region is bounded by the file-size limit (RLIMIT_FSIZE) */
        return ioh_args_usage_error(error, "--region is for a save into an NBD export or "
                                    "an RBD image");
    }
    if (rbd && a->copy.nbd_connections) {
        return ioh_args_usage_error(error, "--connections is for an NBD URI, not an RBD "
                                    "image");
    }
    return TRUE;
}

/* An NBD URI or RBD image on one side: the other is the stream; an export has no end of
 * stream (an RBD image has its recorded length). */
static gboolean
check_nbd(const IohArgs *a, GError **error)
{
    gboolean in = !a->libvirt && is_remote(&a->in_op);
    gboolean out = !a->libvirt && is_remote(&a->out_op);

    if (!in && !out) {
        return TRUE;
    }
    if (in && out) {
        return ioh_args_usage_error(error, "IN and OUT are both NBD URIs or RBD images: one "
                                    "side must be the stream");
    }
    if (a->direct || a->fadvise) {
        return ioh_args_usage_error(error, "--direct and --fadvise apply to a file, not to "
                                    "an NBD export or an RBD image");
    }
    if (in && a->in_op.kind == IOH_OPERAND_NBD && !a->copy.has_length) {
        return ioh_args_usage_error(error, "reading an NBD export needs --length (an export "
                                    "has a fixed size, the stream has no end mark)");
    }
    return TRUE;
}

gboolean
ioh_clash_check_options(const IohArgs *a, GError **error)
{
    IohOptionSet set;

    option_set(a, NULL, &set);
    return rule_error(ioh_option_rules_check(&set), NULL, NULL, error) &&
           check_nbd(a, error) && check_rbd(a, error);
}

/* Where an image stays: a file (a path that does not exist yet will be one), a block
 * device, an NBD export; known before anything is opened (which creates OUT). */
static gboolean
fd_is_storage(int fd)
{
    struct stat st;

    return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

static gboolean
operand_is_image(const IohOperand *op, const char *spec)
{
    struct stat st;

    if (is_remote(op)) {
        return TRUE;
    }
    if (op->kind != IOH_OPERAND_PATH) {
        return fd_is_storage(op->fd);
    }
    return stat(spec, &st) < 0 || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
}

/* The name an end goes by in messages: its path, stdin or stdout, "fd N", or an NBD URI
 * without the secrets of its query. */
static char *
operand_name(const IohOperand *op, const char *spec)
{
    switch (op->kind) {
    case IOH_OPERAND_STDIO:
        return g_strdup(op->fd == 0 ? "stdin" : "stdout");
    case IOH_OPERAND_FD:
        return g_strdup_printf("fd %d", op->fd);
    case IOH_OPERAND_NBD:
        return ioh_nbd_safe_name(spec);
    case IOH_OPERAND_RBD:
        return ioh_rbd_safe_name(spec);
    case IOH_OPERAND_PATH:
    default:
        return g_strdup(spec);
    }
}

static IohDirection
direction_of(gboolean src_image, gboolean dst_image)
{
    return dst_image && !src_image   ? IOH_DIRECTION_SAVE
           : src_image && !dst_image ? IOH_DIRECTION_RESTORE
                                     : IOH_DIRECTION_COPY;
}

/* The libvirt form: FD's access mode gives the direction. FALSE when FD is not usable
 * (opening it says why). */
static gboolean
libvirt_direction(const IohArgs *a, IohDirection *ret, char **ret_src, char **ret_dst)
{
    int mode = fcntl(a->fd, F_GETFL);

    if (mode < 0 || (mode & O_ACCMODE) == O_RDWR) {
        return FALSE;
    }
    if ((mode & O_ACCMODE) == O_WRONLY) {
        *ret = direction_of(fd_is_storage(0), fd_is_storage(a->fd));
        *ret_src = g_strdup("stdin");
        *ret_dst = g_strdup(a->path);
    } else {
        *ret = direction_of(fd_is_storage(a->fd), fd_is_storage(1));
        *ret_src = g_strdup(a->path);
        *ret_dst = g_strdup("stdout");
    }
    return TRUE;
}

gboolean
ioh_clash_direction(const IohArgs *a, IohDirection *ret)
{
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;

    if (a->libvirt) {
        return libvirt_direction(a, ret, &src, &dst);
    }
    *ret = direction_of(operand_is_image(&a->in_op, a->in), operand_is_image(&a->out_op, a->out));
    return TRUE;
}

gboolean
ioh_clash_check_direction(const IohArgs *a, GError **error)
{
    g_autofree char *src = NULL;
    g_autofree char *dst = NULL;
    IohDirection direction;
    IohOptionSet set;

    if (!a->compress && !a->decompress && !a->encrypt && !a->decrypt) {
        return TRUE;
    }
    if (a->libvirt) {
        if (!libvirt_direction(a, &direction, &src, &dst)) {
            return TRUE;
        }
    } else {
        direction = direction_of(operand_is_image(&a->in_op, a->in),
                                 operand_is_image(&a->out_op, a->out));
        src = operand_name(&a->in_op, a->in);
        dst = operand_name(&a->out_op, a->out);
    }
    option_set(a, &direction, &set);
    return rule_error(ioh_option_rules_check(&set), src, dst, error);
}
