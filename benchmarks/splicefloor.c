/* splicefloor.c - the least a pipe -> file save can cost on this kernel, for benchmarks/cpu-save
 *
 *   splicefloor [-p PIPE_SIZE] [-c CHUNK] [-w WINDOW] [-m] [-b] [-d] FILE < pipe
 *
 * Moves stdin (a pipe) into FILE with splice(2) of CHUNK bytes (default 1 MiB) and nothing
 * else: no poll, no statistics, no budget. With -w (the --fadvise floor) it starts write-back
 * of each WINDOW with sync_file_range(WRITE), waits for the window before and drops it with
 * POSIX_FADV_DONTNEED; at the end fdatasync and a last DONTNEED. -b: buffered, write-behind
 * only (no wait, no drop). -p raises the pipe (F_SETPIPE_SZ); -m passes SPLICE_F_MORE; -d opens
 * FILE with O_DIRECT (the pipe's pages written by DMA: works only while every pipe buffer is
 * a multiple of the block size, as benchmarks/producer's 1 MiB writes make them).
 * Only libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int
drop_behind(int fd, long long done, long long win, long long *started, long long *dropped)
{
    while (done - *started >= win) {
        if (sync_file_range(fd, *started, win, SYNC_FILE_RANGE_WRITE) < 0) {
            return -1;
        }
        *started += win;
        if (*started - *dropped > win) {
            long long len = *started - win - *dropped;
            if (sync_file_range(fd, *dropped, len, SYNC_FILE_RANGE_WAIT_BEFORE |
                                SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
                return -1;
            }
            posix_fadvise(fd, *dropped, len, POSIX_FADV_DONTNEED);
            *dropped += len;
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    long long chunk = 1 << 20, win = 0, done = 0, started = 0, dropped = 0;
    int opt, fd, flags = SPLICE_F_MOVE, buffered = 0, oflags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;

    while ((opt = getopt(argc, argv, "p:c:w:mbd")) != -1) {
        switch (opt) {
        case 'p': fcntl(0, F_SETPIPE_SZ, atoi(optarg)); break;
        case 'c': chunk = atoll(optarg); break;
        case 'w': win = atoll(optarg); break;
        case 'm': flags |= SPLICE_F_MORE; break;
        case 'b': buffered = 1; break;
        case 'd': oflags |= O_DIRECT; break;
        default: return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: splicefloor [-p PIPE_SIZE] [-c CHUNK] [-w WINDOW] [-m] [-b] [-d] FILE\n");
        return 2;
    }
    fd = open(argv[optind], oflags, 0600);
    if (fd < 0) {
        perror(argv[optind]);
        return 1;
    }
    for (;;) {
        ssize_t n = splice(0, NULL, fd, NULL, (size_t)chunk, flags);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "splicefloor: splice at byte %lld: %m\n", done);
            return 1;
        }
        if (n == 0) {
            break;
        }
        done += n;
        if (win > 0 && buffered) {
            while (done - started >= win) {
                sync_file_range(fd, started, win, SYNC_FILE_RANGE_WRITE);
                started += win;
            }
        } else if (win > 0 && drop_behind(fd, done, win, &started, &dropped) < 0) {
            perror("sync_file_range");
            return 1;
        }
    }
    if (fdatasync(fd) < 0) {
        perror("fdatasync");
        return 1;
    }
    if (win > 0 && !buffered) {
        posix_fadvise(fd, 0, done, POSIX_FADV_DONTNEED);
    }
    return close(fd) < 0;
}
