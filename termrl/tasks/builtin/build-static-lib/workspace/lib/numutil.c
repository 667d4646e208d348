#include <errno.h>
#include <stdlib.h>

#include "textkit.h"

int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

int tk_parse_int(const char *s, long *out)
{
    char *end;
    long v;

    while (is_space((unsigned char)*s))
        s++;
    if (*s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || errno == ERANGE)
        return -1;
    while (is_space((unsigned char)*end))
        end++;
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

int tk_digit_sum(long n)
{
    unsigned long u = n < 0 ? 0UL - (unsigned long)n : (unsigned long)n;
    int sum = 0;
    while (u) {
        sum += (int)(u % 10);
        u /= 10;
    }
    return sum;
}

long tk_gcd(long a, long b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}
