/* fuzz-args.c - libFuzzer target: the iohelper command line and its size parser
 *
 * The input is split at NUL bytes into up to 32 arguments. ioh_args_parse() must either
 * fail with a one-line message or return arguments within the documented bounds;
 * ioh_args_parse_size() must agree with a reference reading of the same text. Any
 * violation aborts (a crash to libFuzzer), as do ASan/UBSan findings and GLib criticals. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ioh-args.h"
#include "ioh-rbd-name.h"

static void
check(gboolean ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-args: invariant broken: %s\n", what);
        abort();
    }
}

static void
check_message(const GError *error)
{
    check(error != NULL && error->message != NULL, "a failure sets an error");
    for (const char *p = error->message; *p; p++) {
        check((unsigned char)*p >= 0x20 && *p != 0x7f, "one printable line");
    }
}

/* Reference: digits, then optional K/M/G/T (any case) and optional "iB"; "B" alone after
 * the letter (1MB: decimal or binary?) is refused as ambiguous. */
static gboolean
ref_size(const char *s, guint64 *ret)
{
    guint64 v = 0, mult = 1;
    const char *p = s;

    if (!g_ascii_isdigit(*p)) {
        return FALSE;
    }
    for (; g_ascii_isdigit(*p); p++) {
        if (v > (G_MAXUINT64 - (guint64)(*p - '0')) / 10) {
            return FALSE;
        }
        v = v * 10 + (guint64)(*p - '0');
    }
    if (*p) {
        const char *units = "KMGT";
        const char *u = strchr(units, g_ascii_toupper(*p));
        if (!u || !*u) {
            return FALSE;
        }
        mult = 1ULL << (10 * (u - units + 1));
        p++;
        if (g_str_equal(p, "iB")) {
            p += strlen(p);
        }
        if (*p) {
            return FALSE;
        }
    }
    if (v > (guint64)G_MAXINT64 / mult) {
        return FALSE;
    }
    *ret = v * mult;
    return TRUE;
}

static void
fuzz_size(const char *s)
{
    g_autoptr(GError) error = NULL;
    guint64 got = 0, want = 0;
    gboolean ok = ioh_args_parse_size(s, TRUE, &got, &error);
    gboolean ref = ref_size(s, &want);

    check(ok == ref, "ioh_args_parse_size agrees with the reference");
    if (ok) {
        check(got == want, "same value as the reference");
        check(got <= (guint64)G_MAXINT64, "sizes fit off_t");
    } else {
        check_message(error);
    }
    g_clear_error(&error);
    ok = ioh_args_parse_size(s, FALSE, &got, &error);
    check(ok == (ref && want != 0), "zero refused when not allowed");
    if (!ok) {
        check_message(error);
    }
}

/* libnbd's URI schemes: such an operand is an NBD export. */
static gboolean
is_nbd_uri(const char *spec)
{
    static const char *const schemes[] = {
        "nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(schemes); i++) {
        if (g_str_has_prefix(spec, schemes[i])) {
            return TRUE;
        }
    }
    return FALSE;
}

/* Only the bare "-" is stdio, only "fd:" and digits an fd, an NBD scheme an NBD URI:
 * anything else is a path. */
static void
check_operand(const char *spec, const IohOperand *op, int stdio_fd)
{
    if (g_str_equal(spec, "-")) {
        check(op->kind == IOH_OPERAND_STDIO && op->fd == stdio_fd, "'-' is stdio");
    } else if (g_str_has_prefix(spec, "fd:")) {
        check(op->kind == IOH_OPERAND_FD && op->fd >= 0 && spec[3] != '\0' &&
              strspn(spec + 3, "0123456789") == strlen(spec + 3), "fd:N is a number");
    } else if (is_nbd_uri(spec)) {
        check(op->kind == IOH_OPERAND_NBD && op->fd == -1, "an NBD scheme is an NBD URI");
    } else if (ioh_rbd_is_name(spec)) {
        check(op->kind == IOH_OPERAND_RBD && op->fd == -1, "rbd:... is an RBD image name");
    } else {
        check(op->kind == IOH_OPERAND_PATH && op->fd == -1, "anything else is a path");
    }
}

/* An option that takes the next argument as its value when it has no '='. */
static gboolean
takes_next(const char *arg)
{
    static const char *const names[] = {
        "--pipe-size", "--buffer-size", "--ring", "--offset", "--length",
        "--fadvise-window", "--status-fd", "--status-interval", "--record",
        "--connections", "--requests", "--request-size", "--stall-timeout", "--recipient",
        "--recipients-file", "--identity", "--identity-fd", NULL,
    };

    return g_strv_contains(names, arg);
}

/* "--stats WORD": a value that looks like --stats's is never taken for an operand. */
static void
check_no_stats_word(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (g_str_equal(argv[i], "--")) {
            return;
        }
        if (takes_next(argv[i - 1])) {
            continue;    /* argv[i] is that option's value */
        }
        check(!(g_str_equal(argv[i], "--stats") &&
                (g_str_equal(argv[i + 1], "json") || g_str_equal(argv[i + 1], "text"))),
              "--stats json is refused");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *copy = g_malloc(size + 1);
    char *argv[34];
    int argc = 0;
    IohArgs a;
    size_t start = 0;

    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[argc++] = (char *)"iohelper";
    for (size_t i = 0; i <= size && argc < 33; i++) {
        if (copy[i] == '\0') {
            argv[argc++] = copy + start;
            start = i + 1;
        }
    }
    argv[argc] = NULL;

    for (int i = 1; i < argc; i++) {
        fuzz_size(argv[i]);
    }
    if (ioh_args_parse(argc, argv, &a, &error)) {
        check(error == NULL, "no error on success");
        check_no_stats_word(argc, argv);
        if (!a.help && !a.version) {
            check(!(a.direct && a.fadvise), "--direct and --fadvise exclusive");
            check(a.copy.buffer_size >= 4096 && a.copy.buffer_size <= (256u << 20),
                  "buffer size in range");
            check(a.copy.ring >= 1 && a.copy.ring <= 64, "ring in range");
            check(a.copy.pipe_size >= 4096 && a.copy.pipe_size <= (1u << 30),
                  "pipe size in range");
            check(a.copy.fadvise_window >= (1u << 20) && a.copy.fadvise_window <= (1u << 30),
                  "fadvise window in range");
            check(!a.copy.has_offset || a.copy.offset <= (guint64)G_MAXINT64, "offset fits");
            check(!a.copy.has_length || a.copy.length <= (guint64)G_MAXINT64, "length fits");
            check(a.status_fd >= -1, "status fd");
            if (a.libvirt) {
                check(a.path && *a.path && a.fd >= 0 && !a.in && !a.out, "libvirt form");
            } else {
                check(a.in && *a.in && a.out && *a.out && !a.path, "standalone form");
                check_operand(a.in, &a.in_op, 0);
                check_operand(a.out, &a.out_op, 1);
                /* an export has no end of stream: reading one needs --length */
                check(a.in_op.kind != IOH_OPERAND_NBD || a.copy.has_length,
                      "an NBD IN has --length");
                check(!(a.in_op.kind == IOH_OPERAND_NBD && a.out_op.kind == IOH_OPERAND_NBD),
                      "not both NBD");
            }
            check(a.copy.nbd_connections <= 16 && a.copy.nbd_requests <= 256 &&
                  a.copy.nbd_request_size <= (32u << 20) && a.copy.nbd_stall_timeout <= 86400,
                  "NBD options in range");
        }
        ioh_args_clear(&a);
    } else {
        check_message(error);
    }
    return 0;
}
