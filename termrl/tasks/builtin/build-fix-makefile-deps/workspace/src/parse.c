#include <string.h>

#include "parse.h"

int parse_line(char *line, char **fields)
{
    int n = 0;
    char *p = line;

    line[strcspn(line, "\r\n")] = '\0';
    fields[n++] = p;
    while ((p = strchr(p, ',')) != NULL && n < MAX_FIELDS) {
        *p++ = '\0';
        fields[n++] = p;
    }
    return n;
}
