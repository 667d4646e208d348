#ifndef PARSE_H
#define PARSE_H

/* Parse TOK as a finite number. Returns 1 and stores the value in *OUT on success,
   returns 0 (and leaves *OUT alone) when TOK is not a complete, finite number. */
int parse_number(const char *tok, double *out);

#endif
