/* test-engine.c - the copy engine's strategies (ioh-ring.c, ioh-strategy-*.c) through its
 * public header: every ring and buffer size moves the exact bytes, and an error on either
 * side stops both threads. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "ioh-copy.h"
#include "ioh-error.h"
#include "ioh-file.h"
#include "engine-util.h"

static char *workdir;
static gboolean have_direct;

/* The ends of a restore of @img into a pipe, and the thread that drains the pipe into
 * @got. */
static IohtPump *
restore_into_pipe(const char *img, GByteArray *got, IohEnd **ret_src, IohEnd **ret_dst)
{
    g_autoptr(GError) error = NULL;
    IohtPumpOpts drain = { .keep = got };
    IohtPump *t;
    int fds[2];

    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    t = ioht_drain_start(fds[0], &drain);
    *ret_src = ioh_end_open(img, FALSE, 0, &error);
    g_assert_no_error(error);
    *ret_dst = ioh_end_from_fd(fds[1], "pipe", &error);
    g_assert_no_error(error);
    return t;
}

/* Saves @len random bytes from a pipe into a file and restores them into a pipe with
 * @mode, @ring and @bufsize; both must give back the exact bytes. */
static void
roundtrip(IohCacheMode mode, guint ring, gsize bufsize, gsize len)
{
    g_autofree char *img = g_build_filename(workdir, "rt-img", NULL);
    g_autofree char *data = engt_random(len, (guint32)(len ^ ring ^ bufsize ^ mode));
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    IohtPumpOpts feed = { .data = data, .len = len };
    IohtPumpOpts drain = { .keep = g_byte_array_new() };
    IohtPump *t;
    int fds[2];

    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.ring = ring;
    opts.buffer_size = bufsize;

    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    t = ioht_feed_start(fds[1], &feed);
    src = ioh_end_from_fd(fds[0], "pipe", &error);
    g_assert_no_error(error);
    dst = ioh_end_open(img, TRUE, 0, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    ioht_pump_join(t, NULL);
    g_assert_cmpuint(stats.bytes, ==, len);
    g_assert_cmpuint(stats.synced, ==, len);
    g_assert_cmpstr(stats.mode, ==, ioh_cache_mode_to_string(mode));
    g_assert_cmpuint(stats.reads, >=, 1);
    g_assert_cmpuint(stats.writes, >=, len > 0 ? 1 : 0);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_true(ioh_end_close(src, &error));
    g_clear_pointer(&src, ioh_end_free);
    g_clear_pointer(&dst, ioh_end_free);

    {
        g_autofree char *saved = NULL;
        gsize slen = 0;
        g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
        g_assert_cmpuint(slen, ==, len);
        g_assert_true(memcmp(saved, data, len) == 0);
    }

    t = restore_into_pipe(img, drain.keep, &src, &dst);
    g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    g_assert_true(ioh_end_close(dst, &error));
    ioht_pump_join(t, NULL);
    g_assert_cmpuint(drain.keep->len, ==, len);
    g_assert_true(len == 0 || memcmp(drain.keep->data, data, len) == 0);
    g_byte_array_unref(drain.keep);
    g_unlink(img);
}

static void
test_roundtrip_rings(void)
{
    static const IohCacheMode modes[] = { IOH_CACHE_BUFFERED, IOH_CACHE_DIRECT, IOH_CACHE_FADVISE };
    static const guint rings[] = { 1, 2, 3, 4, 8 };
    static const gsize sizes[] = { 0, 1, 4096, 4097, 3 * MiB, 5 * MiB + 12345 };
    guint m, r, s;

    for (m = 0; m < G_N_ELEMENTS(modes); m++) {
        if (modes[m] == IOH_CACHE_DIRECT && !have_direct) {
            continue;
        }
        for (r = 0; r < G_N_ELEMENTS(rings); r++) {
            for (s = 0; s < G_N_ELEMENTS(sizes); s++) {
                roundtrip(modes[m], rings[r], MiB, sizes[s]);
            }
        }
    }
}

/* Buffer sizes that are not a multiple of the alignment get rounded up, and small ones
 * mean many slots per stream and many wraps of the ring. */
static void
test_roundtrip_buffer_sizes(void)
{
    static const gsize bufs[] = { 4096, 10000, 65536, 3 * MiB };
    guint b;

    for (b = 0; b < G_N_ELEMENTS(bufs); b++) {
        roundtrip(IOH_CACHE_BUFFERED, 3, bufs[b], 2 * MiB + 777);
        if (have_direct) {
            roundtrip(IOH_CACHE_DIRECT, 5, bufs[b], 2 * MiB + 777);
        }
        roundtrip(IOH_CACHE_FADVISE, 2, bufs[b], 2 * MiB + 777);
    }
}

/* A short input with --length: "read X: stream ended after A of B bytes", in every mode
 * (O_DIRECT with several readers at once too). */
static void
length_short(IohCacheMode mode, guint ring)
{
    g_autofree char *img = g_build_filename(workdir, "ls-img", NULL);
    g_autofree char *data = engt_random(3 * MiB, 7);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    IohtPumpOpts drain = { .keep = g_byte_array_new() };
    IohtPump *t;

    g_assert_true(g_file_set_contents(img, data, 3 * MiB, NULL));
    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.ring = ring;
    opts.has_length = TRUE;
    opts.length = 4 * MiB;
    t = restore_into_pipe(img, drain.keep, &src, &dst);
    g_assert_false(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_error(error, IOH_ERROR, EIO);
    g_assert_true(g_str_has_suffix(error->message,
                                   "stream ended after 3145728 of 4194304 bytes"));
    g_assert_true(ioh_end_close(dst, NULL));
    ioht_pump_join(t, NULL);
    g_assert_cmpuint(drain.keep->len, ==, 3 * MiB);
    g_byte_array_unref(drain.keep);
    g_unlink(img);
}

static void
test_length_short(void)
{
    length_short(IOH_CACHE_BUFFERED, 4);
    length_short(IOH_CACHE_FADVISE, 4);
    if (have_direct) {
        length_short(IOH_CACHE_DIRECT, 1);
        length_short(IOH_CACHE_DIRECT, 8);
    }
}

/* Restoring part of an image (--offset, --length) with several O_DIRECT readers gives
 * exactly those bytes, and leaves the position after them as read() would. */
static void
test_direct_parallel_range(void)
{
    g_autofree char *img = g_build_filename(workdir, "pr-range", NULL);
    g_autofree char *data = engt_random(9 * MiB, 17);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    IohtPumpOpts drain = { .keep = g_byte_array_new() };
    IohtPump *t;

    if (!have_direct) {
        g_test_skip("no O_DIRECT on the test file system");
        return;
    }
    g_assert_true(g_file_set_contents(img, data, 9 * MiB, NULL));
    ioh_copy_options_init(&opts);
    opts.mode = IOH_CACHE_DIRECT;
    opts.ring = 8;
    opts.has_offset = TRUE;
    opts.offset = 2 * MiB;
    opts.has_length = TRUE;
    opts.length = 5 * MiB + 4096 * 3 + 17;
    t = restore_into_pipe(img, drain.keep, &src, &dst);
    g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    g_assert_cmpint(lseek(src->fd, 0, SEEK_CUR), ==, (off_t)(opts.offset + opts.length));
    g_assert_true(ioh_end_close(dst, NULL));
    ioht_pump_join(t, NULL);
    g_assert_cmpuint(drain.keep->len, ==, opts.length);
    g_assert_true(memcmp(drain.keep->data, data + opts.offset, opts.length) == 0);
    g_byte_array_unref(drain.keep);
    g_unlink(img);
}

/* The writer fails (the reader of the output pipe went away) while the producer has
 * stalled with the input pipe open: the reader thread must not wait for it. */
static void
test_writer_error_stops_reader(void)
{
    g_autofree char *data = engt_random(3 * MiB, 9);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    /* 2 MiB, then silence with the pipe open until released */
    IohtPumpOpts feed = { .data = data, .len = 3 * MiB, .max = 2 * MiB,
                          .stall_at = 2 * MiB, .stall_ms = IOHT_STALL_HELD };
    IohtPump *t;
    gint64 t0;
    int in[2], out[2];

    ioh_copy_options_init(&opts);
    g_assert_no_errno(pipe2(in, O_CLOEXEC));
    g_assert_no_errno(pipe2(out, O_CLOEXEC));
    close(out[0]);
    t = ioht_feed_start(in[1], &feed);
    src = ioh_end_from_fd(in[0], "in", &error);
    dst = ioh_end_from_fd(out[1], "out", &error);
    g_assert_no_error(error);
    t0 = g_get_monotonic_time();
    g_assert_false(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_error(error, IOH_ERROR, EPIPE);
    g_assert_cmpstr(error->message, ==, "write out: Broken pipe");
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    ioht_pump_release(t);
    ioht_pump_join(t, NULL);
    close(in[0]);
    close(out[1]);
}

/* The reader fails (EBADF: reading the write end of a pipe): the writer, waiting for data,
 * stops with the reader's error. */
static void
test_reader_error_stops_writer(void)
{
    g_autofree char *img = g_build_filename(workdir, "re-img", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    int fds[2];

    ioh_copy_options_init(&opts);
    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    src = ioh_end_from_fd(fds[1], "wrong-end", &error);
    dst = ioh_end_open(img, TRUE, 0, &error);
    g_assert_no_error(error);
    g_assert_false(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_error(error, IOH_ERROR, EBADF);
    g_assert_cmpstr(error->message, ==, "read wrong-end: Bad file descriptor");
    close(fds[0]);
    close(fds[1]);
    g_unlink(img);
}

/* Without an offset the stream starts at the fd's position (libvirt writes its header
 * first); what precedes it is kept. */
static void
test_position_kept(void)
{
    g_autofree char *img = g_build_filename(workdir, "pos-img", NULL);
    g_autofree char *data = engt_random(MiB + 3, 11);
    g_autofree char *saved = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    IohtPumpOpts feed = { .data = data, .len = MiB + 3 };
    IohtPump *t;
    gsize slen;
    int fds[2], fd;

    fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(write(fd, "HEADER", 6), ==, 6);
    ioh_copy_options_init(&opts);
    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    t = ioht_feed_start(fds[1], &feed);
    src = ioh_end_from_fd(fds[0], "pipe", &error);
    dst = ioh_end_from_fd(fd, img, &error);
    g_assert_no_error(error);
    g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    ioht_pump_join(t, NULL);
    close(fd);
    close(fds[0]);
    g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
    g_assert_cmpuint(slen, ==, 6 + MiB + 3);
    g_assert_true(memcmp(saved, "HEADER", 6) == 0);
    g_assert_true(memcmp(saved + 6, data, MiB + 3) == 0);
    g_unlink(img);
}

static void
count_progress(const IohStats *stats, gpointer data)
{
    guint *n = data;

    g_assert_cmpuint(stats->bytes, <=, 8 * MiB);
    (*n)++;
}

/* Progress comes at most once per interval, plus once at the end. */
static void
test_progress_throttled(void)
{
    g_autofree char *img = g_build_filename(workdir, "pr-img", NULL);
    g_autofree char *data = engt_random(8 * MiB, 13);
    guint every = 0, seldom = 0;
    guint pass;

    for (pass = 0; pass < 2; pass++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(IohEnd) src = NULL;
        g_autoptr(IohEnd) dst = NULL;
        IohCopyOptions opts;
        IohStats stats;
        IohtPumpOpts feed = { .data = data, .len = 8 * MiB };
        IohtPump *t;
        int fds[2];

        ioh_copy_options_init(&opts);
        opts.progress = count_progress;
        opts.progress_data = pass == 0 ? &every : &seldom;
        opts.progress_interval_us = pass == 0 ? 0 : (gint64)3600 * G_USEC_PER_SEC;
        g_assert_no_errno(pipe2(fds, O_CLOEXEC));
        t = ioht_feed_start(fds[1], &feed);
        src = ioh_end_from_fd(fds[0], "pipe", &error);
        dst = ioh_end_open(img, TRUE, 0, &error);
        g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
        g_assert_no_error(error);
        ioht_pump_join(t, NULL);
        close(fds[0]);
    }
    g_assert_cmpuint(every, >=, 8);
    /* The first call comes at once (nothing was reported yet), the last at the end. */
    g_assert_cmpuint(seldom, <=, 2);
    g_unlink(img);
}

static gboolean
cancel_later(gpointer data)
{
    g_cancellable_cancel(data);
    return G_SOURCE_REMOVE;
}

static gpointer
run_loop(gpointer data)
{
    g_main_loop_run(data);
    return NULL;
}

/* A silent producer holds the pipe open; the caller's cancellable, cancelled from another
 * thread, stops the copy promptly (G_IO_ERROR_CANCELLED) in each strategy that reads a stream
 * (inline: buffered save; ring: a direct save). Cancelled before the start, nothing is
 * opened or truncated. */
static void
test_cancel(gconstpointer data)
{
    IohCacheMode mode = GPOINTER_TO_INT(data);
    g_autofree char *img = g_build_filename(workdir, "cancel-img", NULL);
    g_autoptr(GMainContext) ctx = g_main_context_new();
    g_autoptr(GMainLoop) loop = g_main_loop_new(ctx, FALSE);
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    g_autoptr(GSource) timer = g_timeout_source_new(200);
    g_autoptr(GError) error = NULL;
    g_autoptr(GError) again = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    IohCopyOptions opts;
    IohStats stats;
    GThread *t;
    gint64 t0;
    int fds[2];

    if (mode == IOH_CACHE_DIRECT && !have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return;
    }
    ioh_copy_options_init(&opts);
    opts.mode = mode;
    opts.cancellable = cancel;
    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    g_assert_cmpint(write(fds[1], "some bytes", 10), ==, 10);
    src = ioh_end_from_fd(fds[0], "silent", &error);
    dst = ioh_end_open(img, TRUE, 0, &error);
    g_assert_no_error(error);
    g_source_set_callback(timer, cancel_later, cancel, NULL);
    g_source_attach(timer, ctx);
    t = g_thread_new("canceller", run_loop, loop);
    t0 = g_get_monotonic_time();
    g_assert_false(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_true(ioh_error_is_cancelled(error));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    g_main_loop_quit(loop);
    g_thread_join(t);
    /* Cancelled already: refused before anything. */
    g_assert_false(ioh_copy(src, dst, &opts, &stats, &again));
    g_assert_error(again, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpstr(again->message, ==, "copy: Operation canceled");
    close(fds[1]);
    g_unlink(img);
}

typedef struct {
    int fd;                  /* the pipe's write end, closed at the end */
    const char *img;
    const char *tail;        /* written last, in pieces */
    gsize tail_len;
    gboolean all_before_close;
} QuietProducer;

/* Waits (10 s at most) until the image holds what the pipe held, then writes the tail in
 * pieces of 1 to 4093 bytes and closes the pipe. */
static gpointer
quiet_producer_main(gpointer data)
{
    QuietProducer *q = data;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    IohtPumpOpts tail = { .data = q->tail, .len = q->tail_len, .vary_pieces = TRUE };
    GStatBuf st;

    while (g_get_monotonic_time() < deadline &&
           !(g_stat(q->img, &st) == 0 && (gsize)st.st_size >= MiB)) {
        g_usleep(2000);
    }
    q->all_before_close = g_stat(q->img, &st) == 0 && (gsize)st.st_size >= MiB;
    ioht_feed(q->fd, &tail);
    close(q->fd);
    return NULL;
}

/* The ring's reader of a pipe waits for the end of each write into it after a read that
 * emptied it (ioh_pipe_edge_before_read()). Bytes that no write's end announces are not left
 * waiting: a pipe holding 1 MiB, read in 64 KiB slots (a full read does not empty it),
 * whose producer then writes nothing until the image holds that 1 MiB; then a tail in
 * small writes (each read after one empties the pipe). The bytes arrive exact. */
static void
test_pipe_edge(void)
{
    g_autofree char *img = g_build_filename(workdir, "edge-img", NULL);
    g_autofree char *data = engt_random(MiB + 100000, 77);
    g_autoptr(GError) error = NULL;
    g_autoptr(IohEnd) src = NULL;
    g_autoptr(IohEnd) dst = NULL;
    g_autofree char *saved = NULL;
    QuietProducer q = { .img = img, .tail = data + MiB, .tail_len = 100000 };
    IohCopyOptions opts;
    IohStats stats;
    GThread *t;
    gsize slen = 0;
    int fds[2];

    if (!have_direct) {
        g_test_skip("the test folder's file system refuses O_DIRECT");
        return;
    }
    ioh_copy_options_init(&opts);
    opts.mode = IOH_CACHE_DIRECT;
    opts.buffer_size = 64 * 1024;
    opts.pipe_size = MiB;
    g_assert_no_errno(pipe2(fds, O_CLOEXEC));
    g_assert_cmpint(fcntl(fds[1], F_SETPIPE_SZ, MiB), ==, MiB);
    g_assert_cmpint(write(fds[1], data, MiB), ==, MiB);
    q.fd = fds[1];
    src = ioh_end_from_fd(fds[0], "quiet", &error);
    dst = ioh_end_open(img, TRUE, 0, &error);
    g_assert_no_error(error);
    t = g_thread_new("quiet-producer", quiet_producer_main, &q);
    g_assert_true(ioh_copy(src, dst, &opts, &stats, &error));
    g_assert_no_error(error);
    g_thread_join(t);
    g_assert_true(q.all_before_close);
    g_assert_true(ioh_end_close(dst, &error));
    g_assert_true(g_file_get_contents(img, &saved, &slen, NULL));
    g_assert_cmpuint(slen, ==, MiB + 100000);
    g_assert_true(memcmp(saved, data, slen) == 0);
    g_unlink(img);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    signal(SIGPIPE, SIG_IGN);
    workdir = ioht_workdir();
    have_direct = ioht_dir_supports_direct(workdir);

    g_test_add_func("/engine/ring/roundtrip/rings", test_roundtrip_rings);
    g_test_add_func("/engine/ring/roundtrip/buffer-sizes", test_roundtrip_buffer_sizes);
    g_test_add_func("/engine/ring/length-short", test_length_short);
    g_test_add_func("/engine/ring/direct-parallel-range", test_direct_parallel_range);
    g_test_add_func("/engine/ring/writer-error-stops-reader", test_writer_error_stops_reader);
    g_test_add_func("/engine/ring/reader-error-stops-writer", test_reader_error_stops_writer);
    g_test_add_func("/engine/ring/position-kept", test_position_kept);
    g_test_add_func("/engine/ring/progress-throttled", test_progress_throttled);
    g_test_add_func("/engine/ring/pipe-edge", test_pipe_edge);
    g_test_add_data_func("/engine/cancel/inline", GINT_TO_POINTER(IOH_CACHE_BUFFERED),
                         test_cancel);
    g_test_add_data_func("/engine/cancel/ring", GINT_TO_POINTER(IOH_CACHE_DIRECT), test_cancel);
    return ioht_run_tests(&workdir);
}
