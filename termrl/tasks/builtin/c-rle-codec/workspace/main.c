#include <stdio.h>

#include "rle.h"

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* TODO: implement `rle encode IN OUT` and `rle decode IN OUT` */
    return 0;
}
