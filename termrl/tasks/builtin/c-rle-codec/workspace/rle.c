#include "rle.h"

/* TODO: implement the functions declared in rle.h */
