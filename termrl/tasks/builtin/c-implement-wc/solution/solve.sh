#!/bin/bash
set -e
cat > mywc.c <<'C'
/* mywc: a simplified wc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct counts {
    unsigned long long lines, words, bytes;
};

static int show_l, show_w, show_c;

static void count_stream(FILE *f, struct counts *c)
{
    static unsigned char buf[1 << 16];
    int in_word = 0;
    size_t n;

    memset(c, 0, sizeof *c);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        c->bytes += n;
        for (size_t i = 0; i < n; i++) {
            unsigned char b = buf[i];
            int ws = b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
            if (b == '\n')
                c->lines++;
            if (ws) {
                in_word = 0;
            } else if (!in_word) {
                in_word = 1;
                c->words++;
            }
        }
    }
}

static void print_counts(const struct counts *c, const char *name)
{
    const char *sep = "";
    if (show_l) { printf("%s%llu", sep, c->lines); sep = " "; }
    if (show_w) { printf("%s%llu", sep, c->words); sep = " "; }
    if (show_c) { printf("%s%llu", sep, c->bytes); sep = " "; }
    if (name)
        printf(" %s", name);
    putchar('\n');
}

int main(int argc, char **argv)
{
    int i = 1, status = 0, nfiles;
    struct counts c, total = {0, 0, 0};

    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "-l") == 0) show_l = 1;
        else if (strcmp(argv[i], "-w") == 0) show_w = 1;
        else if (strcmp(argv[i], "-c") == 0) show_c = 1;
        else {
            fprintf(stderr, "usage: mywc [-l] [-w] [-c] [FILE...]\n");
            return 2;
        }
    }
    if (!show_l && !show_w && !show_c)
        show_l = show_w = show_c = 1;

    nfiles = argc - i;
    if (nfiles == 0) {
        count_stream(stdin, &c);
        print_counts(&c, NULL);
        return 0;
    }
    for (; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "mywc: %s: cannot open\n", argv[i]);
            status = 1;
            continue;
        }
        count_stream(f, &c);
        fclose(f);
        print_counts(&c, argv[i]);
        total.lines += c.lines;
        total.words += c.words;
        total.bytes += c.bytes;
    }
    if (nfiles > 1)
        print_counts(&total, "total");
    return status;
}
C
make
