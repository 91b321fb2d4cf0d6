#!/bin/bash
# test-core-once.sh CORE PROGRAM... - TAP: each PROGRAM (an executable or a shared library)
# holds the core (helper/core, CORE: the library built from it) exactly once at run time.
#
# The objects a program loads are the program and what the loader resolves for it (ldd).
# One line per program: the loaded objects that define a function of the core, counting
# local (hidden) definitions too, as a static core inside libiohwrap.so was. Two such
# objects mean two copies of the core's statics in one process: two registrations of one
# error domain, two of every once-only. Needs binutils (nm) and unstripped objects (the
# build tree's).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../common/tap.sh"
core=$1
shift

command -v nm >/dev/null && command -v ldd >/dev/null || skip_all "nm or ldd not installed"
work=$(mktemp -d "${TMPDIR:-/tmp}/core-once-XXXXXX") || bail "mktemp failed"
trap 'rm -rf "$work"' EXIT

# The core's functions: what its library defines and exports (a static archive's members
# or a shared library's dynamic symbols).
if [ "${core%.a}" != "$core" ]; then
    nm --defined-only --extern-only "$core"
else
    nm -D --defined-only "$core"
fi | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$work/core"
[ -s "$work/core" ] || bail "no function of the core found in $core"

# loaded OBJECT: OBJECT and the libraries the loader gives it, one path a line.
loaded() {
    echo "$1"
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
}

# holders OBJECT: the loaded objects of OBJECT that define a function of the core.
holders() {
    local o
    loaded "$1" | while read -r o; do
        nm --defined-only "$o" 2>/dev/null | awk '$2 ~ /^[Tt]$/ { print $3 }' | sort -u |
            comm -12 - "$work/core" | grep -q . && echo "$o"
    done
}

for prog in "$@"; do
    if ! nm "$prog" >/dev/null 2>&1 || nm "$prog" 2>&1 | grep -q "no symbols"; then
        not_ok "$(basename "$prog"): no symbol table (stripped?): cannot tell"
        continue
    fi
    h=$(holders "$prog")
    n=$(printf '%s' "$h" | grep -c .)
    names=$(printf '%s\n' "$h" | xargs -r -n1 basename | paste -sd, -)
    if [ "$n" = 1 ]; then
        ok "$(basename "$prog") holds the core once: in ${names}"
    else
        not_ok "$(basename "$prog") holds the core in $n loaded objects: ${names:-none}"
    fi
done
echo "1..$ntest"
[ "$nfail" = 0 ]
