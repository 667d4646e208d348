/* numtool: isqrt, binom and mean of integers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "usage: numtool isqrt N | binom N K | mean\n");
    exit(2);
}

static unsigned long long parse_u64(const char *s)
{
    return strtoull(s, NULL, 10);
}

static unsigned long long isqrt(unsigned long long n)
{
    unsigned long long lo = 0, hi = n, ans = 0;
    while (lo <= hi) {
        unsigned long long mid = (lo + hi) / 2;
        if (mid * mid <= n) {
            ans = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return ans;
}

static unsigned long long factorial(unsigned long long n)
{
    unsigned long long r = 1;
    for (unsigned long long i = 2; i <= n; i++)
        r *= i;
    return r;
}

static void binom(unsigned long long n, unsigned long long k)
{
    if (k > n) {
        printf("0\n");
        return;
    }
    printf("%llu\n", factorial(n) / (factorial(k) * factorial(n - k)));
}

static void mean(void)
{
    long long x, sum = 0;
    int count = 0;
    while (scanf("%lld", &x) == 1) {
        sum += x;
        count++;
    }
    printf("%lld\n", sum / count);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "isqrt") == 0 && argc == 3) {
        printf("%llu\n", isqrt(parse_u64(argv[2])));
    } else if (strcmp(argv[1], "binom") == 0 && argc == 4) {
        binom(parse_u64(argv[2]), parse_u64(argv[3]));
    } else if (strcmp(argv[1], "mean") == 0 && argc == 2) {
        mean();
    } else {
        usage();
    }
    return 0;
}
