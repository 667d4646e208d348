#ifndef CLI_H
#define CLI_H

/* Parse the command line. Returns 0 and sets *SHIFT, 1 if the version was printed,
   or -1 on a usage error (a message has been printed). */
int cli_parse(int argc, char **argv, long *shift);

#endif
