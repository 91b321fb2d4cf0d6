#!/bin/bash
# zstd-helper.sh - iohelper --compress=zstd:LEVEL against the zstd CLI (zstd -T2) on the
# same data, both fed by a pipe and writing a file made durable (the helper's fdatasync;
# `sync -d` after the CLI), and random data: compressed save vs raw save.
#   flock /work/bench.lock benchmarks/zstd-helper.sh BUILD_DIR COMPRESSIBLE RANDOM OUTDIR [RUNS]
# Prints one line per run: what, level, seconds, image bytes, CPU seconds of the
# compressing process (user + sys), CPU seconds per GiB of stream; the lines also go to
# benchmarks/results/zstd-helper.md (the latest run: benchmarks/results-write).
set -euo pipefail
argv=("$@")
H=$1/helper/iohelper; C=$2; R=$3; O=$4; RUNS=${5:-3}
W=$(dirname "$0")/results-write
rstate=$("$W" start)
t() { /usr/bin/time -f "%e %U %S" -o "$O/time" "$@"; }
row() {   # what level data image
    local s u y n bytes
    read -r s u y < "$O/time"
    n=$(stat -c %s "$4"); bytes=$(stat -c %s "$3")
    awk -v w="$1" -v l="$2" -v s="$s" -v c="$(echo "$u + $y" | bc)" -v n="$n" -v b="$bytes" \
        'BEGIN { printf "%-8s %4s %6.2f s %11d bytes (%.3f) cpu %5.2f s = %5.2f s/GiB\n",
                 w, l, s, n, n / b, c, c / (b / 2^30) }'
}
cat "$C" "$R" > /dev/null    # cached
for run in $(seq "$RUNS"); do
    for l in -1 1 3; do
        cli=$([ "$l" -lt 0 ] && echo "--fast=${l#-}" || echo "-$l")
        rm -f "$O/img"
        cat "$C" | t "$H" --compress=zstd:"$l" - "$O/img"
        row helper "$l" "$C" "$O/img"
        rm -f "$O/img"
        cat "$C" | t sh -c "zstd -q -T2 $cli -c > '$O/img' && sync -d '$O/img'"
        row cli "$l" "$C" "$O/img"
    done
    rm -f "$O/img"
    cat "$R" | t "$H" --compress=zstd:1 - "$O/img"
    row rnd-z1 1 "$R" "$O/img"
    rm -f "$O/img"
    cat "$R" | t "$H" - "$O/img"
    row rnd-raw - "$R" "$O/img"
    rm -f "$O/img"
    cat "$R" | t "$H" --direct --compress=zstd:1 - "$O/img"
    row rnd-z1-d 1 "$R" "$O/img"
    rm -f "$O/img"
    cat "$R" | t "$H" --direct - "$O/img"
    row rnd-raw-d - "$R" "$O/img"
done | tee "$O/zstd-helper.txt"
rm -f "$O/img" "$O/time"
"$W" zstd-helper "$rstate" "$O/zstd-helper.txt" "" benchmarks/zstd-helper.sh "${argv[@]}"
