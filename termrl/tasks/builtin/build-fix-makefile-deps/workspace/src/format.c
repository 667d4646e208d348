#include <string.h>

#include "config.h"
#include "format.h"

void format_row(FILE *out, char **fields, int n)
{
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(fields[i]);
        if (len > COL_WIDTH)
            len = COL_WIDTH;
        if (i > 0)
            fputs(SEP, out);
        if (ALIGN_RIGHT)
            fprintf(out, "%*.*s", COL_WIDTH, len, fields[i]);
        else
            fprintf(out, "%-*.*s", COL_WIDTH, len, fields[i]);
    }
    fputc('\n', out);
}
