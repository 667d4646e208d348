#!/bin/bash
set -e
# 1. the header must only declare the global; define it once in main.c
sed -i 's/^int debug_level = 0;/extern int debug_level;/' common.h
grep -q '^int debug_level = 0;' main.c || sed -i 's/^#include "eval.h"$/#include "eval.h"\n\nint debug_level = 0;/' main.c
# 2. stack.c defines stack_length but the header (and eval.c) use stack_size
sed -i 's/^size_t stack_length(/size_t stack_size(/' stack.c
# 3. stack.o was missing from the link
sed -i 's/^OBJS = main.o lexer.o eval.o$/OBJS = main.o lexer.o eval.o stack.o/' Makefile
make clean
make
