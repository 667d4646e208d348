/* wordfreq: print the most frequent words of a text file. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 4096
#define MAXWORD 32

struct entry {
    char *word;
    long count;
    struct entry *next;
};

static struct entry *buckets[NBUCKETS];
static size_t nwords;

static int hash(const char *s)
{
    int h = 0;
    while (*s)
        h = h * 31 + *s++;
    return h % NBUCKETS;
}

static void add_word(const char *w)
{
    int h = hash(w);
    struct entry *e;

    for (e = buckets[h]; e; e = e->next) {
        if (strcmp(e->word, w) == 0) {
            e->count++;
            return;
        }
    }
    e = malloc(sizeof *e);
    e->word = strdup(w);
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

int main(int argc, char **argv)
{
    FILE *f;
    char word[MAXWORD];
    int len = 0;
    int c;
    long n = 10;
    struct entry **all;
    size_t i, k;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
        return 2;
    }
    if (argc == 3)
        n = atol(argv[2]);

    f = fopen(argv[1], "rb");
    while ((c = fgetc(f)) != EOF) {
        if (isalpha(c)) {
            word[len++] = tolower(c);
        } else if (len > 0) {
            word[len] = '\0';
            add_word(word);
            len = 0;
        }
    }
    fclose(f);

    all = malloc(nwords * sizeof *all);
    k = 0;
    for (i = 0; i < NBUCKETS; i++)
        for (struct entry *e = buckets[i]; e; e = e->next)
            all[k++] = e;
    qsort(all, nwords, sizeof *all, cmp);

    for (i = 0; i < (size_t)n; i++)
        printf("%ld %s\n", all[i]->count, all[i]->word);
    return 0;
}
