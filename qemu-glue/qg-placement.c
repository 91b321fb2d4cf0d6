/* qg-placement.c - on which CPUs the helper runs (qg-placement.h) */
#include "qg-placement.h"

#include "ioh-cpus.h"

gboolean
qg_placement_check(const char *spec, GError **error)
{
    cpu_set_t set;

    /* A list with a CPU we may not use would fail every helper, and only once QEMU is
     * set up (a restore's QEMU quit): a usage error now instead. */
    return !spec || g_str_equal(spec, "auto") || g_str_equal(spec, "all") ||
           (ioh_cpus_parse(spec, &set, error) && ioh_cpus_allowed(&set, error));
}

/* "auto": QEMU's CPUs when they are fewer than ours, those of them we may use. */
static void
choose_auto(GPid qemu_pid, const char *no_pid, QgPlacement *ret)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *qemu_list = NULL;
    g_autofree char *ours_list = NULL;
    cpu_set_t qemu, ours, both;

    if (qemu_pid <= 0) {
        ret->why = g_strdup_printf("auto: %s", no_pid ? no_pid : "QEMU's pid unknown");
        return;
    }
    if (!ioh_cpus_get(qemu_pid, &qemu, &error) || !ioh_cpus_get(0, &ours, &error)) {
        ret->why = g_strdup_printf("auto: %s", error->message);
        return;
    }
    CPU_AND(&both, &qemu, &ours);
    qemu_list = ioh_cpus_format(&qemu);
    ours_list = ioh_cpus_format(&ours);
    if (CPU_COUNT(&both) == 0) {
        ret->why = g_strdup_printf("auto: QEMU (pid %d) runs on CPUs %s, none of ours (%s)",
                                   (int)qemu_pid, qemu_list, ours_list);
    } else if (ioh_cpus_narrower(&both, &ours)) {
        ret->cpus = ioh_cpus_format(&both);
        ret->from_auto = TRUE;
        ret->why = g_strdup_printf("auto: QEMU (pid %d) runs on CPUs %s", (int)qemu_pid,
                                   qemu_list);
    } else {
        ret->why = g_strdup_printf("auto: QEMU (pid %d) is not pinned (CPUs %s)",
                                   (int)qemu_pid, qemu_list);
    }
}

gboolean
qg_placement_choose(const char *spec, GPid qemu_pid, const char *no_pid, QgPlacement *ret,
                    GError **error)
{
    cpu_set_t set;

    *ret = (QgPlacement){ 0 };
    if (qg_placement_is_auto(spec)) {
        choose_auto(qemu_pid, no_pid, ret);
        return TRUE;
    }
    if (g_str_equal(spec, "all")) {
        ret->why = g_strdup("--helper-cpus=all");
        return TRUE;
    }
    if (!ioh_cpus_parse(spec, &set, error)) {
        return FALSE;
    }
    ret->cpus = ioh_cpus_format(&set);
    ret->why = g_strdup("--helper-cpus");
    return TRUE;
}

gboolean
qg_placement_is_auto(const char *spec)
{
    return !spec || g_str_equal(spec, "auto");
}

gboolean
qg_placement_applies(gboolean from_auto, gboolean compressed, gboolean encrypted)
{
    return !from_auto || (!compressed && !encrypted);
}

void
qg_placement_clear(QgPlacement *p)
{
    g_clear_pointer(&p->cpus, g_free);
    g_clear_pointer(&p->why, g_free);
}
