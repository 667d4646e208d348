#!/bin/bash
set -e
# the helper is defined in both library sources: make it file-local
sed -i 's/^int is_space(int c)$/static int is_space(int c)/' lib/strutil.c lib/numutil.c
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -std=c11 -Wall -O2
CPPFLAGS = -Iinclude
AR = ar

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(patsubst lib/%.c,build/obj/%.o,$(LIB_SRCS))

all: build/libtextkit.a build/demo

build/obj/%.o: lib/%.c include/textkit.h | build/obj
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

build/libtextkit.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

build/demo.o: demo/demo.c include/textkit.h | build/obj
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

build/demo: build/demo.o build/libtextkit.a
	$(CC) $(CFLAGS) -o $@ build/demo.o -Lbuild -ltextkit

build/obj:
	mkdir -p $@

clean:
	rm -rf build

.PHONY: all clean
MK
make
