#ifndef COMMON_H
#define COMMON_H

/* Debug verbosity, set by the -v option in main.c. */
int debug_level = 0;

#endif
