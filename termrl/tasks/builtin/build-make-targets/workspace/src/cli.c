#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef VERSION
#error "VERSION must be defined by the build system"
#endif

int cli_parse(int argc, char **argv, long *shift)
{
    char *end;

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("caesar %s\n", VERSION);
        return 1;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: caesar SHIFT < input > output\n       caesar --version\n");
        return -1;
    }
    errno = 0;
    *shift = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end != '\0' || errno != 0) {
        fprintf(stderr, "caesar: invalid shift '%s'\n", argv[1]);
        return -1;
    }
    return 0;
}
