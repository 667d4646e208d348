#ifndef CONFIG_H
#define CONFIG_H

/* Width of every cell in characters; longer fields are cut to this width. */
#define COL_WIDTH 10

/* Printed between two cells. */
#define SEP " | "

#endif
