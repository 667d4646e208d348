#!/bin/bash
set -e
cat > rle.c <<'C'
#include <string.h>

#include "rle.h"

size_t rle_max_encoded(size_t n)
{
    /* Every literal packet but the last is followed by a repeat packet (>= 2 bytes) or
       holds 128 bytes, so there are at most ceil(n/3) literal headers; repeat packets
       never expand. */
    return n + (n + 2) / 3;
}

size_t rle_encode(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t i = 0, o = 0;

    while (i < n) {
        size_t r = 1;
        while (i + r < n && r < 129 && in[i + r] == in[i])
            r++;
        if (r >= 2) {
            out[o++] = (unsigned char)(r + 126);
            out[o++] = in[i];
            i += r;
        } else {
            size_t j = i;
            while (j < n && j - i < 128 && !(j + 1 < n && in[j] == in[j + 1]))
                j++;
            out[o++] = (unsigned char)(j - i - 1);
            memcpy(out + o, in + i, j - i);
            o += j - i;
            i = j;
        }
    }
    return o;
}

long rle_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
    size_t i = 0, o = 0;

    while (i < n) {
        unsigned h = in[i++];
        if (h < 128) {
            size_t len = (size_t)h + 1;
            if (n - i < len)
                return -1;
            if (cap - o < len)
                return -2;
            memcpy(out + o, in + i, len);
            i += len;
            o += len;
        } else {
            size_t len = (size_t)h - 126;
            if (i >= n)
                return -1;
            if (cap - o < len)
                return -2;
            memset(out + o, in[i++], len);
            o += len;
        }
    }
    return (long)o;
}
C
cat > main.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rle.h"

static int usage(void)
{
    fprintf(stderr, "usage: rle encode|decode IN OUT   (- for stdin/stdout)\n");
    return 2;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t cap = 1 << 16, n = 0, got;
    unsigned char *buf;

    if (!f)
        return NULL;
    buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static int write_all(const char *path, const unsigned char *data, size_t n)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
    int ok;
    if (!f)
        return -1;
    ok = fwrite(data, 1, n, f) == n;
    ok = (f == stdout ? fflush(f) : fclose(f)) == 0 && ok;
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    unsigned char *in, *out;
    size_t n, outlen;
    int encode;

    if (argc != 4)
        return usage();
    if (strcmp(argv[1], "encode") == 0)
        encode = 1;
    else if (strcmp(argv[1], "decode") == 0)
        encode = 0;
    else
        return usage();

    in = read_all(argv[2], &n);
    if (!in) {
        fprintf(stderr, "rle: cannot read %s\n", argv[2]);
        return 1;
    }
    if (encode) {
        out = malloc(rle_max_encoded(n) + 1);
        if (!out) {
            fprintf(stderr, "rle: out of memory\n");
            return 1;
        }
        outlen = rle_encode(in, n, out);
    } else {
        size_t cap = n * 2 + 64;
        long r;
        for (;;) {
            out = malloc(cap);
            if (!out) {
                fprintf(stderr, "rle: out of memory\n");
                return 1;
            }
            r = rle_decode(in, n, out, cap);
            if (r != -2)
                break;
            free(out);
            cap *= 2;
        }
        if (r < 0) {
            fprintf(stderr, "rle: malformed input\n");
            return 1;
        }
        outlen = (size_t)r;
    }
    if (write_all(argv[3], out, outlen) != 0) {
        fprintf(stderr, "rle: cannot write %s\n", argv[3]);
        return 1;
    }
    free(in);
    free(out);
    return 0;
}
C
make
