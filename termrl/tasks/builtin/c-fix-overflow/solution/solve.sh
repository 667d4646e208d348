#!/bin/bash
set -e
cat > numtool.c <<'C'
/* numtool: isqrt, binom and mean of integers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;
typedef unsigned __int128 u128;
typedef __int128 i128;

static void usage(void)
{
    fprintf(stderr, "usage: numtool isqrt N | binom N K | mean\n");
    exit(2);
}

static u64 parse_u64(const char *s)
{
    u64 v = 0;
    if (*s == '\0')
        usage();
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            usage();
        d = (unsigned)(*s - '0');
        if (v > (~0ULL - d) / 10)
            usage();
        v = v * 10 + d;
    }
    return v;
}

static u64 isqrt(u64 n)
{
    /* answer is < 2^32, so search in [0, 2^32) with 128-bit squares */
    u64 lo = 0, hi = 4294967295ULL;
    while (lo < hi) {
        u64 mid = lo + (hi - lo + 1) / 2;
        if ((u128)mid * mid <= n)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static void binom(u64 n, u64 k)
{
    u128 r = 1;
    if (k > n) {
        printf("0\n");
        return;
    }
    if (k > n - k)
        k = n - k;
    for (u64 i = 0; i < k; i++) {
        /* r = C(n, i) <= 2^64-1 here, so the product fits in 128 bits */
        r = r * (u128)(n - i) / (u128)(i + 1);
        if (r > (u128)~0ULL) {
            printf("overflow\n");
            return;
        }
    }
    printf("%llu\n", (u64)r);
}

static void print_i128(i128 v)
{
    char buf[64];
    int i = 63;
    int neg = v < 0;
    u128 u = neg ? (u128)0 - (u128)v : (u128)v;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (neg)
        buf[--i] = '-';
    printf("%s\n", buf + i);
}

static void mean(void)
{
    long long x;
    i128 sum = 0, count = 0, q;
    while (scanf("%lld", &x) == 1) {
        sum += x;
        count++;
    }
    if (count == 0) {
        printf("empty\n");
        return;
    }
    q = sum / count;
    if (sum % count != 0 && sum < 0)
        q -= 1;
    print_i128(q);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "isqrt") == 0 && argc == 3) {
        printf("%llu\n", isqrt(parse_u64(argv[2])));
    } else if (strcmp(argv[1], "binom") == 0 && argc == 4) {
        u64 n = parse_u64(argv[2]);
        u64 k = parse_u64(argv[3]);
        binom(n, k);
    } else if (strcmp(argv[1], "mean") == 0 && argc == 2) {
        mean();
    } else {
        usage();
    }
    return 0;
}
C
make
