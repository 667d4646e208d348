#!/bin/bash
set -e
cat > wordfreq.c <<'C'
/* wordfreq: print the most frequent words of a text file. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 4096

struct entry {
    char *word;
    long count;
    struct entry *next;
};

static struct entry *buckets[NBUCKETS];
static size_t nwords;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "wordfreq: out of memory\n");
        exit(1);
    }
    return p;
}

static size_t hash(const char *s)
{
    size_t h = 0;
    while (*s)
        h = h * 31 + (unsigned char)*s++;
    return h % NBUCKETS;
}

static void add_word(const char *w, size_t len)
{
    size_t h = hash(w);
    struct entry *e;

    for (e = buckets[h]; e; e = e->next) {
        if (strcmp(e->word, w) == 0) {
            e->count++;
            return;
        }
    }
    e = xmalloc(sizeof *e);
    e->word = xmalloc(len + 1);
    memcpy(e->word, w, len + 1);
    e->count = 1;
    e->next = buckets[h];
    buckets[h] = e;
    nwords++;
}

static int cmp(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *)a;
    const struct entry *y = *(const struct entry *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

static int parse_n(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (*end != '\0' || v == 0)
        return -1;
    if (errno == ERANGE)
        v = (unsigned long long)-1;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    FILE *f;
    char *word;
    size_t cap = 64, len = 0;
    int c;
    size_t n = 10;
    struct entry **all;
    size_t i, k;

    if (argc < 2 || argc > 3 || (argc == 3 && parse_n(argv[2], &n) != 0)) {
        fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
        return 2;
    }

    f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "wordfreq: cannot open %s\n", argv[1]);
        return 1;
    }
    word = xmalloc(cap);
    for (;;) {
        c = fgetc(f);
        if (c != EOF && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
            if (len + 1 >= cap) {
                char *nw;
                cap *= 2;
                nw = realloc(word, cap);
                if (!nw) {
                    fprintf(stderr, "wordfreq: out of memory\n");
                    return 1;
                }
                word = nw;
            }
            word[len++] = (char)tolower(c);
        } else {
            if (len > 0) {
                word[len] = '\0';
                add_word(word, len);
                len = 0;
            }
            if (c == EOF)
                break;
        }
    }
    fclose(f);
    free(word);

    all = xmalloc(nwords * sizeof *all);
    k = 0;
    for (i = 0; i < NBUCKETS; i++)
        for (struct entry *e = buckets[i]; e; e = e->next)
            all[k++] = e;
    qsort(all, nwords, sizeof *all, cmp);

    if (n > nwords)
        n = nwords;
    for (i = 0; i < n; i++)
        printf("%ld %s\n", all[i]->count, all[i]->word);
    free(all);
    return 0;
}
C
make
