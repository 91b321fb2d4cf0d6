/* ioh-args-value.h - the values on iohelper's command line: sizes, counts, usage errors
 *
 * Shared by the option parser (ioh-args.c), the config file (ioh-conf.c) and the checks
 * between options (ioh-clash.c).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A usage error (exit 2): one line, naming the option. */
#define IOH_ARGS_ERROR (ioh_args_error_quark())
GQuark ioh_args_error_quark(void);

/* Sets @error to IOH_ARGS_ERROR with the message, its control characters made '?' (it
 * quotes what the user typed). Returns FALSE. */
gboolean ioh_args_usage_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Parses a size: digits with an optional K, M, G or T suffix, or KiB, MiB, GiB, TiB: powers
 * of 1024 either way (lower-case k, m, g, t too). "KB", "MB", "GB", "TB" are refused as
 * ambiguous (decimal or binary?). Rejects signs, junk, zero when !@allow_zero, and
 * overflow. */
gboolean ioh_args_parse_size(const char *text, gboolean allow_zero, guint64 *ret_size,
                             GError **error);

/* A size from @min to @max, for option (or key) @opt: "OPT: CAUSE" otherwise. */
gboolean ioh_args_parse_bounded(const char *opt, const char *val, guint64 min, guint64 max,
                                guint64 *ret, GError **error);

/* A decimal count from @min to @max, for option @opt. */
gboolean ioh_args_parse_count(const char *opt, const char *val, guint64 min, guint64 max,
                              guint64 *ret, GError **error);

G_END_DECLS
