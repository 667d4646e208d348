#include "stats.h"

int stats_init(struct stats s)
{
    s.count = 0;
    s.min = 0.0;
    s.max = 0.0;
    s.sum = 0.0;
    s.sumsq = 0.0;
}

void stats_add(struct stats *s, double x)
{
    if (s->count == 0 || x < s->min)
        s->min = x;
    if (s->count == 0 || x > s->max)
        s->max = x;
    s->count++;
    s->sum += x;
    s->sumsq += x * x;
}

double stats_mean(const struct stats *s)
{
    return s->sum / s->count;
}

double stats_stddev(const struct stats *s)
{
    double mean = stats_mean(s);
    double var = s->sumsq / s->count - mean * mean;
    if (var < 0.0)
        var = 0.0;
    return sqrt(var);
}
