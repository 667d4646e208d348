#!/bin/bash
set -e
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -std=c11 -Wall -O2
CPPFLAGS = -Isrc -Ibuild
SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,build/%.o,$(SRCS))
DEPS := $(OBJS:.o=.d)

all: tabulate

tabulate: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS)

# Every object may include the generated header, so it must exist before any compile;
# the exact header dependencies are recorded by -MMD in build/*.d.
build/%.o: src/%.c build/version.h | build
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

build/version.h: VERSION gen_version.sh | build
	./gen_version.sh VERSION > $@.tmp
	mv $@.tmp $@

build:
	mkdir -p build

clean:
	rm -rf tabulate build

-include $(DEPS)

.PHONY: all clean
MK
make clean
make
