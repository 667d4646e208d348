#ifndef FORMAT_H
#define FORMAT_H

#include <stdio.h>

/* 1: cells are right-aligned, 0: left-aligned. */
#define ALIGN_RIGHT 1

/* Print one row of N fields. */
void format_row(FILE *out, char **fields, int n);

#endif
