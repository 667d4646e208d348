#ifndef TEXTKIT_H
#define TEXTKIT_H

#include <stddef.h>

/* Reverse the bytes of S in place; returns S. */
char *tk_reverse(char *s);

/* Number of words in S: maximal runs of characters other than ' ', '\t', '\n', '\r'. */
size_t tk_word_count(const char *s);

/* Convert ASCII lowercase letters of S to uppercase in place; returns S. */
char *tk_upper(char *s);

/* Parse S as a signed decimal integer, optionally surrounded by spaces/tabs/newlines.
   Returns 0 and stores the value in *OUT on success, -1 if S is not such an integer
   or does not fit in a long. */
int tk_parse_int(const char *s, long *out);

/* Sum of the decimal digits of |N|. */
int tk_digit_sum(long n);

/* Greatest common divisor of |A| and |B| (tk_gcd(0, 0) == 0). */
long tk_gcd(long a, long b);

#endif
