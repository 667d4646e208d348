#include <stdio.h>
#include <string.h>

#include "config.h"
#include "format.h"
#include "parse.h"
#include "version.h"

int main(int argc, char **argv)
{
    char line[4096];
    char *fields[MAX_FIELDS];

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("tabulate %s\n", TABULATE_VERSION);
        return 0;
    }
    while (fgets(line, sizeof line, stdin)) {
        int n = parse_line(line, fields);
        format_row(stdout, fields, n);
    }
    return 0;
}
