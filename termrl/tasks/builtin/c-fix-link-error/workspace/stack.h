#ifndef STACK_H
#define STACK_H

#include <stddef.h>

struct stack {
    long long *items;
    size_t len;
    size_t cap;
};

void stack_init(struct stack *st);
void stack_free(struct stack *st);
int stack_push(struct stack *st, long long v); /* 0 on success, -1 on out of memory */
int stack_pop(struct stack *st, long long *out); /* 0 on success, -1 when empty */
size_t stack_size(const struct stack *st);

#endif
