#ifndef LEXER_H
#define LEXER_H

enum tok_kind { TOK_NUM, TOK_OP, TOK_BAD, TOK_END };

struct token {
    enum tok_kind kind;
    long long value; /* for TOK_NUM */
    char op;         /* for TOK_OP */
};

/* Read the next token from *P (advancing it). */
struct token lex_next(const char **p);

#endif
