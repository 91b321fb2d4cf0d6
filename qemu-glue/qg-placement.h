/* qg-placement.h - on which CPUs the helper of a save or restore runs (prefix
 * qg_placement_)
 *
 * A pipe read on another core than the one that writes it costs its reader about twice
 * the CPU (the pages freed are the writer core's: docs/engine.md, "The relay pipe and
 * the producer's CPU"). QEMU's migration thread is an emulator thread: where the
 * management layer pins those (libvirt's <emulatorpin>, a cgroup cpuset, taskset), the
 * helper is best pinned alike. "auto" (the default) reads QEMU's affinity (its pid from
 * the QMP socket's peer credentials) and, when it is narrower than ours, gives the
 * helper the same CPUs (those of them we may use); "all" leaves the helper where we run;
 * a CPU list ("0-3,6") is taken as it is.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    char *cpus;     /* the helper's --cpus; NULL: wherever this process may run */
    char *why;      /* one phrase: how it was chosen ("QEMU (pid 42) runs on CPUs 0") */
    gboolean from_auto;  /* @cpus are QEMU's, not a list given */
} QgPlacement;

/* Whether @spec is "auto", "all" or a CPU list of CPUs this process may use; else FALSE
 * with the cause (the caller names its option). */
gboolean qg_placement_check(const char *spec, GError **error);

/* Whether @spec (NULL too) is "auto": only then is QEMU's pid needed (qg-qemu-pid.h). */
gboolean qg_placement_is_auto(const char *spec);

/* Chooses for @spec (NULL: "auto") and QEMU's @qemu_pid (0: unknown, @no_pid says why).
 * QEMU's affinity that cannot be read is no error: the helper then runs anywhere and
 * *why says so. FALSE only for a @spec that does not parse. */
gboolean qg_placement_choose(const char *spec, GPid qemu_pid, const char *no_pid,
                             QgPlacement *ret, GError **error);

/* Whether CPUs chosen by "auto" (@from_auto) serve a helper that compresses or encrypts:
 * no. zstd's and age's threads need more CPU than the pipe saves (a pinned QEMU often has
 * one or two CPUs), so such a helper runs wherever this process may. A list given
 * applies to every helper. */
gboolean qg_placement_applies(gboolean from_auto, gboolean compressed, gboolean encrypted);

void qg_placement_clear(QgPlacement *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(QgPlacement, qg_placement_clear)

G_END_DECLS
