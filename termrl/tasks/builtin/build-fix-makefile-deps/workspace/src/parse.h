#ifndef PARSE_H
#define PARSE_H

#define MAX_FIELDS 64

/* Split LINE in place at commas (the trailing newline is removed). Stores up to MAX_FIELDS
   pointers in FIELDS and returns how many fields there are. */
int parse_line(char *line, char **fields);

#endif
