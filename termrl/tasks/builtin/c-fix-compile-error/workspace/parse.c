#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "parse.h"

int parse_number(const char *tok, double *out)
{
    char *end;
    double v;

    if (*tok == '\0')
        return 0;
    errno = 0;
    v = strtod(tok, &end);
    if (*end != '\0' || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}
