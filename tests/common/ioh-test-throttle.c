/* ioh-test-throttle.c - a disk slower than a pipe, on any machine: a cgroup-v1 blkio
 * cgroup whose write throttle holds the programs started in it to a set rate on the disk
 * under a folder (the kernel delays their writes; O_DIRECT writes are throttled whole).
 * The tests of the ring's growth need the writer to be the bottleneck, which a fast
 * virtual disk (1 GB/s of O_DIRECT writes, seen here) does not give by itself. */
#include "ioh-test.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BLKIO "/sys/fs/cgroup/blkio"

struct IohtThrottle {
    char *cgroup;
    char *procs;             /* its cgroup.procs, opened by each child that enters */
};

/* "MAJ:MIN" of the whole disk holding @dir (the throttle takes no partitions); NULL with
 * the reason when @dir is not on a block device. */
static char *
throttle_disk(const char *dir, char **ret_why)
{
    g_autofree char *sys = NULL;
    g_autofree char *part = NULL;
    g_autofree char *parent = NULL;
    g_autofree char *dev = NULL;
    struct stat st;

    if (stat(dir, &st) < 0) {
        *ret_why = g_strdup_printf("%s: %s", dir, g_strerror(errno));
        return NULL;
    }
    sys = g_strdup_printf("/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    if (!g_file_test(sys, G_FILE_TEST_EXISTS)) {
        *ret_why = g_strdup_printf("%s is not on a block device (%u:%u)", dir,
                                   major(st.st_dev), minor(st.st_dev));
        return NULL;
    }
    part = g_build_filename(sys, "partition", NULL);
    if (!g_file_test(part, G_FILE_TEST_EXISTS)) {
        return g_strdup(sys + strlen("/sys/dev/block/"));
    }
    parent = g_build_filename(sys, "..", "dev", NULL);
    if (!g_file_get_contents(parent, &dev, NULL, NULL)) {
        *ret_why = g_strdup_printf("%s: cannot be read", parent);
        return NULL;
    }
    return g_strstrip(g_steal_pointer(&dev));
}

/* Writes @text into the control file @path: 0, or the errno. */
static int
throttle_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int err = 0;

    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        err = errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    return err;
}

IohtThrottle *
ioht_throttle_new(const char *dir, guint mbps, char **ret_why)
{
    static gint serial;
    g_autofree char *disk = NULL;
    g_autofree char *limit = NULL;
    g_autofree char *rule = NULL;
    IohtThrottle *t;
    int err;

    *ret_why = NULL;
    if (geteuid() != 0 || access(BLKIO "/blkio.throttle.write_bps_device", W_OK) < 0) {
        *ret_why = g_strdup("no writable cgroup-v1 blkio throttle (" BLKIO ", needs root)");
        return NULL;
    }
    if (!(disk = throttle_disk(dir, ret_why))) {
        return NULL;
    }
    t = g_new0(IohtThrottle, 1);
    t->cgroup = g_strdup_printf(BLKIO "/ioht-%d-%d", (int)getpid(),
                                g_atomic_int_add(&serial, 1));
    t->procs = g_build_filename(t->cgroup, "cgroup.procs", NULL);
    if (mkdir(t->cgroup, 0755) < 0) {
        *ret_why = g_strdup_printf("mkdir %s: %s", t->cgroup, g_strerror(errno));
        g_clear_pointer(&t->cgroup, g_free);
        ioht_throttle_free(t);
        return NULL;
    }
    limit = g_build_filename(t->cgroup, "blkio.throttle.write_bps_device", NULL);
    rule = g_strdup_printf("%s %" G_GUINT64_FORMAT "\n", disk, (guint64)mbps * 1000000);
    if ((err = throttle_write(limit, rule)) != 0) {
        *ret_why = g_strdup_printf("%s: cannot set '%s': %s", limit, disk, g_strerror(err));
        ioht_throttle_free(t);
        return NULL;
    }
    return t;
}

void
ioht_throttle_enter(gpointer throttle)
{
    const IohtThrottle *t = throttle;
    int fd = open(t->procs, O_WRONLY | O_CLOEXEC);    /* in a forked child: syscalls only */

    if (fd < 0 || write(fd, "0", 1) != 1) {    /* "0": the writing process */
        _exit(125);
    }
    close(fd);
}

void
ioht_throttle_free(IohtThrottle *t)
{
    if (!t) {
        return;
    }
    /* Its processes have been reaped; the kernel may take a moment to let go of it. */
    for (int i = 0; t->cgroup && i < 100 && rmdir(t->cgroup) < 0 && errno == EBUSY; i++) {
        g_usleep(10000);
    }
    g_free(t->cgroup);
    g_free(t->procs);
    g_free(t);
}
