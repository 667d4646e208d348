#!/bin/bash
# usage: check.sh SHAPECALC INPUT EXPECTED  -- succeeds when the output matches exactly
[ $# -eq 3 ] || { echo "usage: $0 SHAPECALC INPUT EXPECTED" >&2; exit 2; }
out=$("$1" < "$2") || exit 1
if [ "$out" == "$(cat "$3")" ]; then
    echo "smoke test passed"
else
    echo "smoke test FAILED"; diff <(echo "$out") "$3"; exit 1
fi
