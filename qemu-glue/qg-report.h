/* qg-report.h - what qemu-iohelper prints (qg-report.c)
 *
 * Every message reaches stderr as one line through qg_report_error(); the progress line
 * goes to stderr (redrawn in place on a terminal), the stats and the QMP shell's replies
 * to stdout.
 */
#pragma once

#include "ioh-cache-mode.h"
#include "qg-migrate.h"

G_BEGIN_DECLS

/* What the reports say of the job, and whether a progress line waits for its end. */
typedef struct {
    IohCacheMode cache;      /* --bypass-cache (an NBD export reports "nbd") */
    gboolean live;           /* save --live */
    gboolean compress;       /* save --compress: progress counts stream bytes compressed */
    gboolean tty;            /* stderr is a terminal: the progress line is redrawn */
    gboolean drew;           /* a progress line is drawn and not yet ended */
    const char *helper_cpus;      /* the helpers' --cpus; NULL: anywhere (qg-placement.h) */
    const char *helper_cpus_why;  /* how that was chosen */
} QgReport;

/* The only way a message reaches stderr: "qemu-iohelper: " and one line, control
 * characters (from paths, commands, QEMU's own words) shown as '?'. */
void qg_report_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* A QgProgressFunc (@data: the QgReport): bytes, MiB/s, percent and ETA on stderr. */
void qg_report_progress(const char *what, const QgProgress *p, gpointer data);

/* Ends a progress line drawn in place, if any. */
void qg_report_progress_end(QgReport *r);

/* The stats of the job @what ("save" or "restore") of @file on stdout: text (one line,
 * and a compressed image's stored bytes) or one line of JSON. */
void qg_report_stats(const QgReport *r, const char *what, const char *file,
                     const QgMigrateStats *s, gboolean json);

/* `qmp --wait-migration`: the migration's final @status and the @seconds it took, one
 * line of JSON on stdout. */
void qg_report_migration(const char *status, double seconds);

G_END_DECLS
