#ifndef STATS_H
#define STATS_H

#include <stddef.h>

struct stats {
    size_t count;
    double min;
    double max;
    double sum;
    double sumsq;
};

void stats_init(struct stats *s);
void stats_add(struct stats *s, double x);
double stats_mean(const struct stats *s);

#endif
