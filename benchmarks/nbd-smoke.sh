#!/bin/bash
# nbd-smoke.sh NBD BUILDDIR - TAP: benchmarks/nbd works in its quick mode (64 MiB, one
# run) and prints its tables. Speed is never asserted.
nbd=$1 build=$2
out=$build/bench-nbd-smoke
log=$out.log
for t in nbdkit nbdcopy qemu-nbd; do
    command -v "$t" >/dev/null || { echo "1..0 # SKIP $t not installed"; exit 0; }
done
rm -rf "$out"
echo "1..3"
if bash "$nbd" --quick --build "$build" --out "$out" --dir "${IOH_TEST_DIR:-$build/test-tmp}" \
        > "$log" 2>&1; then
    echo "ok 1 benchmarks/nbd --quick exits 0"
else
    echo "not ok 1 benchmarks/nbd --quick exits 0"
    sed 's/^/# /' "$log"
fi
if grep -q '^| file | ours | [0-9]' "$log" && grep -q '^| file | save | ours / nbdcopy |' "$log" &&
        grep -q '^| slow-comp | ours-compress | [0-9]' "$log"; then
    echo "ok 2 tables printed"
else
    echo "not ok 2 tables printed"
    sed 's/^/# /' "$log"
fi
if [ -s "$out/raw.tsv" ] && [ "$(wc -l < "$out/raw.tsv")" -gt 40 ]; then
    echo "ok 3 raw data written"
else
    echo "not ok 3 raw data written"
fi
