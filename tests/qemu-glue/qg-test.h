/* qg-test.h - real QEMU guests for the qemu-glue tests (prefix qgt_) */
#pragma once

#include <glib.h>
#include "qg-image.h"
#include "qg-qmp.h"

G_BEGIN_DECLS

/* Guest RAM where the loader puts the random data, and the tests' sizes. */
#define QGT_DATA_ADDR 0x1000000
#define QGT_DATA_SIZE (64u << 20)
#define QGT_RAM_MIB 256

typedef struct {
    GPid pid;
    char *sockdir;   /* short, in /tmp: unix socket paths are limited to 107 bytes */
    char *sock;      /* the QMP socket for the tool under test */
    char *test_sock; /* a second QMP monitor, for the test (a QMP socket takes one client) */
    QgQmp *qmp;      /* the test's connection, on test_sock */
} QgtQemu;

/* The emulator, or NULL (the caller skips). */
const char *qgt_qemu_binary(void);

/* TRUE when the emulator is installed; else marks the test skipped, with the reason. */
gboolean qgt_have_qemu(void);

/* g_test_init(), then the tool's path from the first argument (meson passes it); exits 2
 * with a usage line when it is missing. */
void qgt_test_init(int *argc, char ***argv);

/* Starts a paused TCG guest whose RAM at QGT_DATA_ADDR holds @data_file, with
 * `-incoming defer` when @incoming. The child dies with the test (PR_SET_PDEATHSIG),
 * even when an assertion aborts it. Connects qmp. */
QgtQemu *qgt_qemu_start(const char *data_file, gboolean incoming);

/* The same, without -S when !@paused (an incoming QEMU then starts the guest itself
 * once the stream is loaded). */
QgtQemu *qgt_qemu_start_full(const char *data_file, gboolean incoming, gboolean paused);

/* More arguments for the QEMUs started from now on (NULL: none), e.g. another
 * "-device loader,..." to fill more of the guest's RAM. */
extern const char *const *qgt_qemu_extra_args;

/* The CPU the QEMUs started from now on are pinned to, as under `taskset -c N`; -1 (the
 * default): not pinned. */
extern int qgt_qemu_cpu;

/* Kills (SIGKILL) and reaps QEMU, removes its socket. NULL allowed. */
void qgt_qemu_stop(QgtQemu *q);

/* Waits up to @secs for QEMU (our child) to exit; TRUE with its wait status if it did
 * (then reaped: qgt_qemu_stop() does not kill that number). */
gboolean qgt_qemu_exited_within(QgtQemu *q, guint secs, int *ret_status);

/* query-status "status". */
char *qgt_qemu_status(QgtQemu *q);

/* Dumps @size bytes of guest RAM at QGT_DATA_ADDR into @path (QMP pmemsave). */
void qgt_qemu_pmemsave(QgtQemu *q, const char *path, guint64 size);

/* Runs the qemu-iohelper tool (argv[0] filled in) and waits. Returns its exit code;
 * *ret_stderr gets what it printed (also logged). */
int qgt_tool_run(const char *const *args, char **ret_stdout, char **ret_stderr);

/* The same, killed (SIGKILL) if it runs longer than @secs: returns 128 + 9 then. */
int qgt_tool_run_timeout(const char *const *args, guint secs, char **ret_stdout,
                         char **ret_stderr);

/* What the tool printed on stderr is one line "qemu-iohelper: ...\n" without any control
 * character, nor a GLib CRITICAL or WARNING. */
void qgt_assert_one_line(const char *err);

/* The tool's path (the test's first argument, set by meson). */
void qgt_set_tool(const char *path);
const char *qgt_tool(void);

/* ---- what the image tests share ---- */

/* Runs `sh -c @cmd`, which must succeed; its stdout. */
char *qgt_sh_out(const char *cmd);

/* The header of the image @img, which must be valid (free it: qg_image_info_free). */
QgImageInfo *qgt_image_info(const char *img);

/* The image format version, from the header's fixed part. */
guint32 qgt_image_version(const char *img);

/* After a refused restore the guest did not resume: QEMU quit (a half-loaded guest) or
 * stays paused (a loaded one that proved bad). */
void qgt_assert_not_resumed(QgtQemu *dst);

/* Saves a guest whose RAM holds @data (running when @running) into @img with @extra
 * options (NULL-terminated); the tool must succeed and leave the source paused. Then
 * pmemsaves the source's data into @src_dump and its whole RAM into @ram_dump (either
 * NULL: not). Returns the tool's stdout. */
char *qgt_save_guest(const char *data, const char *img, const char *const *extra,
                     gboolean running, const char *src_dump, const char *ram_dump);

/* Restores @img into a new QEMU holding @other, with --stats=json and @opts (two
 * entries, either NULL); the guest runs and its data is @want's. Returns the stdout. */
char *qgt_restore_guest(const char *img, const char *other, const char *const *opts,
                        const char *want);

/* The tool run with @args is a usage error: exit 2, one line, saying @needle. */
void qgt_assert_usage(const char *const *args, const char *needle);

/* A work folder (ioht_workdir()) holding a guest's data (random, QGT_DATA_SIZE, from
 * @seed) and other data for the destination before a restore (from @seed + 1). */
void qgt_guest_files(char **ret_workdir, char **ret_data, char **ret_other, guint32 seed);

/* A restore of @img into a new QEMU holding @other, with @opt (NULL: none), that fails
 * (exit 1) with one line saying @needle, and never lets the guest
 * resume: QEMU untouched (still waiting for a stream) when @untouched. The line. */
char *qgt_restore_refused(const char *img, const char *other, const char *opt,
                          const char *needle, gboolean untouched);

/* The first @len bytes of @from into @to. */
void qgt_copy_truncated(const char *from, const char *to, guint64 len);

/* Bytes allocated (st_blocks) to the files "@base*.part-*" in @dir: how much of a running
 * save's streams its temporary file holds. */
guint64 qgt_part_blocks(const char *dir, const char *base);

G_END_DECLS
