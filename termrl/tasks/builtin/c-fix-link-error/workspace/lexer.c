#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "lexer.h"

struct token lex_next(const char **p)
{
    struct token t = { TOK_END, 0, 0 };
    const char *s = *p;
    const char *start;
    size_t len;

    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
        s++;
    if (*s == '\0') {
        *p = s;
        return t;
    }
    start = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
        s++;
    len = (size_t)(s - start);
    *p = s;

    if (len == 1 && strchr("+-*/%", *start)) {
        t.kind = TOK_OP;
        t.op = *start;
    } else {
        char buf[64];
        char *end;
        if (len >= sizeof buf) {
            t.kind = TOK_BAD;
            return t;
        }
        memcpy(buf, start, len);
        buf[len] = '\0';
        errno = 0;
        t.value = strtoll(buf, &end, 10);
        t.kind = (*end == '\0' && errno == 0 && isdigit((unsigned char)buf[len - 1])) ? TOK_NUM : TOK_BAD;
    }
    if (debug_level > 0)
        fprintf(stderr, "lex: %.*s -> kind %d\n", (int)len, start, (int)t.kind);
    return t;
}
