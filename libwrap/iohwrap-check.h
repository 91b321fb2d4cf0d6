/* iohwrap-check.h - what ioh_wrap_new() accepts (internal to libiohwrap)
 *
 * Every argument of ioh_wrap_new() is checked here, before anything is done, against
 * what the helper would refuse once it runs: a wrap that ioh_wrap_new() returned never
 * fails at its finish for a reason that was already known. The limits mirror the
 * helper's (helper/cli/ioh-args.c, helper/engine/ioh-file.c); a later change moves
 * them into a library both link.
 *
 * Not exported: the version script exports ioh_wrap_* only, so names here are iohw_*.
 */
#pragma once

#include <sys/types.h>

#include "iohwrap.h"

#include "ioh-cache-mode.h"
#include "ioh-limits.h"

G_BEGIN_DECLS

/* What ioh_wrap_new() goes on with once the arguments passed. */
typedef struct {
    gboolean save;        /* O_WRONLY: a save; O_RDONLY: a restore */
    IohWrapFlags flags;   /* as given, plus IOH_WRAP_DIRECT for an fd with O_DIRECT */
    IohCacheMode mode;    /* what the flags ask of the helper (iohw_flags_cache_mode()) */
    guint64 offset;       /* IohWrapParams.offset (0: none) */
    guint64 length;       /* IohWrapParams.length (0: to EOF) */
    guint64 start;        /* where the stream starts in the file */
    guint interval_ms;    /* the helper's --status-interval */
} IohwPlan;

/* The one mapping of the public flags to the helper's cache mode: DIRECT is direct,
 * FADVISE fadvise, anything else (POLLABLE alone, none) buffered. */
IohCacheMode iohw_flags_cache_mode(IohWrapFlags flags);

/* Checks every argument of ioh_wrap_new() (@fd is the fd number itself). Touches
 * nothing: the fd's flags, position and file are as they were, also on success.
 * FALSE with @error in IOH_WRAP_ERROR when ioh_wrap_new() must refuse. */
gboolean iohw_check_new(int fd, const char *path, IohWrapFlags flags,
                        const IohWrapParams *params, IohwPlan *ret_plan, GError **error);

/* The checksum arguments of ioh_wrap_new_full(): @checksum NULL or "xxh3", @verify NULL
 * or 16 hex digits and only on a restore. FALSE with IOH_WRAP_ERROR_INVALID otherwise. */
gboolean iohw_check_checksum(gboolean save, const char *checksum, const char *verify,
                             GError **error);

/* The values of @params alone (offset, length, progress_interval_ms), for a wrap
 * without an fd (ioh_wrap_new_uri()). */
gboolean iohw_check_params(const IohWrapParams *params, GError **error);

G_END_DECLS
