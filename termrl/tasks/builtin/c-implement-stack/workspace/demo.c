#include <stdio.h>

#include "stack.h"

int main(void)
{
    Stack *s = stack_new();
    long v;

    if (!s)
        return 1;
    for (long i = 5; i > 0; i--)
        stack_push(s, i * 10);
    stack_min(s, &v);
    printf("size %zu, min %ld\n", stack_size(s), v);
    while (stack_pop(s, &v) == 0)
        printf("%ld\n", v);
    stack_free(s);
    return 0;
}
