#include <stdio.h>

#include "common.h"
#include "eval.h"
#include "lexer.h"
#include "stack.h"

static int apply(char op, long long a, long long b, long long *r)
{
    switch (op) {
    case '+': *r = a + b; return 0;
    case '-': *r = a - b; return 0;
    case '*': *r = a * b; return 0;
    case '/': if (b == 0) return -1; *r = a / b; return 0;
    case '%': if (b == 0) return -1; *r = a % b; return 0;
    }
    return -1;
}

int eval_line(const char *line, long long *out)
{
    struct stack st;
    const char *p = line;
    int ntok = 0;
    int rc = 0;

    stack_init(&st);
    for (;;) {
        struct token t = lex_next(&p);
        long long a, b, r;
        if (t.kind == TOK_END)
            break;
        ntok++;
        if (t.kind == TOK_BAD) {
            rc = -1;
            break;
        }
        if (t.kind == TOK_NUM) {
            if (stack_push(&st, t.value) != 0) {
                rc = -1;
                break;
            }
            continue;
        }
        if (stack_pop(&st, &b) != 0 || stack_pop(&st, &a) != 0 || apply(t.op, a, b, &r) != 0
            || stack_push(&st, r) != 0) {
            rc = -1;
            break;
        }
        if (debug_level > 0)
            fprintf(stderr, "eval: %lld %c %lld = %lld (depth %zu)\n", a, t.op, b, r, stack_size(&st));
    }
    if (rc == 0 && ntok == 0)
        rc = 1;
    else if (rc == 0 && (stack_size(&st) != 1 || stack_pop(&st, out) != 0))
        rc = -1;
    stack_free(&st);
    return rc;
}
