#!/bin/bash
set -e
cat > Makefile <<'MK'
CC ?= gcc
ifeq ($(origin CC),default)
CC = gcc
endif
CFLAGS ?= -std=c11 -Wall -O2
PREFIX ?= /usr/local
DESTDIR ?=
VERSION ?= 1.0.0

SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,build/%.o,$(SRCS))
DEPS := $(OBJS:.o=.d)
BIN  := bin/caesar

all: $(BIN)

$(BIN): $(OBJS) | bin
	$(CC) $(CFLAGS) -o $@ $(OBJS)

build/%.o: src/%.c | build
	$(CC) $(CFLAGS) -DVERSION='"$(VERSION)"' -MMD -MP -c $< -o $@

build bin:
	mkdir -p $@

test: $(BIN)
	tests/run.sh $(BIN)

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/caesar

clean:
	rm -rf build bin

-include $(DEPS)

.PHONY: all test install clean
MK
make
