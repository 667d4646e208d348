#!/bin/bash
# usage: tests/run.sh PATH/TO/caesar
set -u
bin="$1"
fail=0
check() {  # check SHIFT INPUT EXPECTED
    local got
    got=$(printf '%s' "$2" | "$bin" "$1")
    if [ "$got" != "$3" ]; then
        echo "FAIL: shift $1 of '$2': got '$got', want '$3'"
        fail=1
    fi
}
check 3 "abc XYZ" "def ABC"
check -1 "Hello, World!" "Gdkkn, Vnqkc!"
check 52 "same" "same"
"$bin" --version | grep -q '^caesar ' || { echo "FAIL: --version"; fail=1; }
[ $fail -eq 0 ] && echo "all tests passed"
exit $fail
