/* outside.c - a program built outside the tree against the installed libiohwrap, with
 * nothing but `pkg-config --cflags --libs iohwrap`. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <iohwrap.h>

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(IohWrap) wrap = NULL;
    int fd;

    if (argc != 2) {
        fprintf(stderr, "usage: outside FILE\n");
        return 2;
    }
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    wrap = ioh_wrap_new(&fd, argv[1], IOH_WRAP_POLLABLE, NULL, &error);
    if (!wrap) {
        fprintf(stderr, "outside: %s\n", error->message);
        return 1;
    }
    if (write(fd, "hello, libwrap\n", 15) != 15) {
        perror("write");
        return 1;
    }
    if (!ioh_wrap_finish(wrap, &error)) {
        fprintf(stderr, "outside: %s\n", error->message);
        return 1;
    }
    printf("outside: saved through helper: %s\n", ioh_wrap_is_spawned(wrap) ? "yes" : "no");
    return 0;
}
