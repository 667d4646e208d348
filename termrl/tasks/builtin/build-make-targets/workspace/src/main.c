#include <stdio.h>

#include "cipher.h"
#include "cli.h"

int main(int argc, char **argv)
{
    long shift;
    int c, s, rc;

    rc = cli_parse(argc, argv, &shift);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    s = cipher_normalise(shift);
    while ((c = getchar()) != EOF)
        putchar(cipher_shift(c, s));
    return 0;
}
