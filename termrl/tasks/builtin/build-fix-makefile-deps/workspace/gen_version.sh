#!/bin/sh
# usage: gen_version.sh VERSION_FILE  -- prints a C header defining TABULATE_VERSION
v=$(tr -d ' \t\r\n' < "$1")
printf '#ifndef VERSION_H\n#define VERSION_H\n#define TABULATE_VERSION "%s"\n#endif\n' "$v"
