#include <stdlib.h>

#include "stack.h"

void stack_init(struct stack *st)
{
    st->items = NULL;
    st->len = 0;
    st->cap = 0;
}

void stack_free(struct stack *st)
{
    free(st->items);
    stack_init(st);
}

int stack_push(struct stack *st, long long v)
{
    if (st->len == st->cap) {
        size_t ncap = st->cap ? st->cap * 2 : 16;
        long long *n = realloc(st->items, ncap * sizeof *n);
        if (!n)
            return -1;
        st->items = n;
        st->cap = ncap;
    }
    st->items[st->len++] = v;
    return 0;
}

int stack_pop(struct stack *st, long long *out)
{
    if (st->len == 0)
        return -1;
    *out = st->items[--st->len];
    return 0;
}

size_t stack_length(const struct stack *st)
{
    return st->len;
}
