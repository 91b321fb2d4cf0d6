/* runstat.c - run one command and tell what it cost, for the benchmarks
 *
 *   runstat [-o FILE] [-0 PATH:MODE] [-1 PATH:MODE] -- COMMAND [ARG...]
 *
 * Runs COMMAND, waits for it with wait4() and appends one line to FILE (default stderr):
 *   "wall_s user_s sys_s maxrss_kib exit"
 * -0/-1 open PATH as the command's fd 0 or 1 first, so a command can be handed an O_DIRECT
 * fd the way libvirt hands one to libvirt_iohelper (a shell cannot open with O_DIRECT):
 * MODE r (O_RDONLY), rd (O_RDONLY|O_DIRECT), w (O_WRONLY|O_CREAT|O_TRUNC), wd (w|O_DIRECT).
 * The exit status is the command's. Only libc and GLib.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int
open_spec(const char *spec, int target)
{
    const char *colon = strrchr(spec, ':');
    g_autofree char *path = NULL;
    int flags, fd;

    if (!colon) {
        fprintf(stderr, "runstat: %s: expected PATH:MODE\n", spec);
        return -1;
    }
    path = g_strndup(spec, (gsize)(colon - spec));
    if (strcmp(colon + 1, "r") == 0) {
        flags = O_RDONLY;
    } else if (strcmp(colon + 1, "rd") == 0) {
        flags = O_RDONLY | O_DIRECT;
    } else if (strcmp(colon + 1, "w") == 0) {
        flags = O_WRONLY | O_CREAT | O_TRUNC;
    } else if (strcmp(colon + 1, "wd") == 0) {
        flags = O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT;
    } else {
        fprintf(stderr, "runstat: %s: unknown mode\n", spec);
        return -1;
    }
    fd = open(path, flags, 0600);
    if (fd < 0) {
        fprintf(stderr, "runstat: open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (fd != target) {
        if (dup2(fd, target) < 0) {
            return -1;
        }
        close(fd);
    }
    return 0;
}

int
main(int argc, char **argv)
{
    const char *out = NULL, *in_spec = NULL, *out_spec = NULL;
    struct timespec t0, t1;
    struct rusage ru;
    int opt, status = 0;
    pid_t pid;
    FILE *f;

    while ((opt = getopt(argc, argv, "+o:0:1:")) != -1) {
        switch (opt) {
        case 'o': out = optarg; break;
        case '0': in_spec = optarg; break;
        case '1': out_spec = optarg; break;
        default: return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "usage: runstat [-o FILE] [-0 PATH:MODE] [-1 PATH:MODE] -- CMD...\n");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid = fork();
    if (pid < 0) {
        perror("runstat: fork");
        return 1;
    }
    if (pid == 0) {
        if ((in_spec && open_spec(in_spec, 0) < 0) || (out_spec && open_spec(out_spec, 1) < 0)) {
            _exit(127);
        }
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "runstat: %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("runstat: wait4");
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    f = out ? fopen(out, "a") : stderr;
    if (!f) {
        perror("runstat: open output");
        return 1;
    }
    fprintf(f, "%.6f %.6f %.6f %ld %d\n",
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    if (out) {
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
