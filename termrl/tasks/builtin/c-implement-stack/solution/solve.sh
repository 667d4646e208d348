#!/bin/bash
set -e
cat > stack.c <<'C'
#include <stdlib.h>
#include <string.h>

#include "stack.h"

struct Stack {
    long *vals; /* the values */
    long *mins; /* mins[i] = min(vals[0..i]) */
    size_t len;
    size_t cap;
};

Stack *stack_new(void)
{
    Stack *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->vals = NULL;
    s->mins = NULL;
    s->len = 0;
    s->cap = 0;
    return s;
}

void stack_free(Stack *s)
{
    if (!s)
        return;
    free(s->vals);
    free(s->mins);
    free(s);
}

static int grow(Stack *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 16;
    long *nv, *nm;

    if (ncap > (size_t)-1 / sizeof(long))
        return -1;
    nv = realloc(s->vals, ncap * sizeof *nv);
    if (!nv)
        return -1;
    s->vals = nv; /* old block may have moved; capacity stays until both succeed */
    nm = realloc(s->mins, ncap * sizeof *nm);
    if (!nm)
        return -1;
    s->mins = nm;
    s->cap = ncap;
    return 0;
}

int stack_push(Stack *s, long value)
{
    if (s->len == s->cap && grow(s) != 0)
        return -1;
    s->vals[s->len] = value;
    s->mins[s->len] = (s->len == 0 || value < s->mins[s->len - 1]) ? value : s->mins[s->len - 1];
    s->len++;
    return 0;
}

int stack_pop(Stack *s, long *out)
{
    if (s->len == 0)
        return -1;
    s->len--;
    if (out)
        *out = s->vals[s->len];
    return 0;
}

int stack_peek(const Stack *s, long *out)
{
    if (s->len == 0)
        return -1;
    *out = s->vals[s->len - 1];
    return 0;
}

size_t stack_size(const Stack *s)
{
    return s->len;
}

int stack_min(const Stack *s, long *out)
{
    if (s->len == 0)
        return -1;
    *out = s->mins[s->len - 1];
    return 0;
}

void stack_clear(Stack *s)
{
    s->len = 0;
}

Stack *stack_clone(const Stack *s)
{
    Stack *c = stack_new();
    if (!c)
        return NULL;
    if (s->len > 0) {
        c->vals = malloc(s->len * sizeof(long));
        c->mins = malloc(s->len * sizeof(long));
        if (!c->vals || !c->mins) {
            stack_free(c);
            return NULL;
        }
        memcpy(c->vals, s->vals, s->len * sizeof(long));
        memcpy(c->mins, s->mins, s->len * sizeof(long));
        c->len = c->cap = s->len;
    }
    return c;
}
C
make
