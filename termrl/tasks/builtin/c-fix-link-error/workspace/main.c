#include <stdio.h>
#include <string.h>

#include "common.h"
#include "eval.h"

int main(int argc, char **argv)
{
    char line[4096];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            debug_level++;
        } else {
            fprintf(stderr, "usage: %s [-v]\n", argv[0]);
            return 2;
        }
    }

    while (fgets(line, sizeof line, stdin)) {
        long long result;
        int rc = eval_line(line, &result);
        if (rc == 1)
            continue;
        if (rc == 0)
            printf("%lld\n", result);
        else
            printf("error\n");
    }
    return 0;
}
