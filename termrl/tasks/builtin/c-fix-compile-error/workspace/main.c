#include <stdio.h>

#include "parse.h"
#include "stats.h"

int main(void)
{
    struct stats s;
    char tok[256];
    unsigned long skipped = 0;

    stats_init(&s);
    while (scanf("%255s", tok) == 1) {
        float value;
        if (parse_number(tok, &value))
            stats_add(&s, value);
        else
            skipped++;
    }

    printf("count %zu\n", s.cnt);
    if (s.count > 0) {
        printf("min %.4f\n", s.min);
        printf("max %.4f\n", s.max);
        printf("mean %.4f\n", stats_mean(&s));
        printf("stddev %.4f\n", stats_stddev(&s));
    }
    printf("skipped %lu\n", skipped);
    return 0;
}
