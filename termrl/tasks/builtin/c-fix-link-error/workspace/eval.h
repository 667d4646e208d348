#ifndef EVAL_H
#define EVAL_H

/* Evaluate one RPN expression. Returns 0 and stores the result in *OUT on success,
   1 when the line holds no tokens at all, -1 when the expression is invalid. */
int eval_line(const char *line, long long *out);

#endif
