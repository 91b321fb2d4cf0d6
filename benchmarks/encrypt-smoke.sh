#!/bin/bash
# encrypt-smoke.sh ENCRYPT BUILDDIR - TAP: benchmarks/encrypt runs one small round (8 MiB,
# no guest), prints its tables and writes its results file (to the build tree, never to
# benchmarks/results). Speed is never asserted. Skips without age.
enc=$1 build=$2
out=$build/bench-encrypt-smoke
log=$out.log
command -v age-keygen >/dev/null || { echo "1..0 # SKIP age is not installed"; exit 0; }
rm -rf "$out"
mkdir -p "$out"
echo "1..3"
if IOHELPER_RESULTS=$out python3 "$enc" "$build" --runs 1 --size 8M --guest none \
        --dir "${IOH_TEST_DIR:-$build/test-tmp}" > "$log" 2>&1; then
    echo "ok 1 benchmarks/encrypt exits 0"
else
    echo "not ok 1 benchmarks/encrypt exits 0"
    sed 's/^/# /' "$log"
fi
if grep -q '^| direct-age |' "$log" && grep -q '^| restore >= 1.0x age -d |' "$log"; then
    echo "ok 2 tables printed"
else
    echo "not ok 2 tables printed"
    sed 's/^/# /' "$log"
fi
if grep -q '^Command: `benchmarks/encrypt ' "$out/encrypt.md" 2>/dev/null &&
        [ -s "$out/encrypt.png" ]; then
    echo "ok 3 results file and plot written"
else
    echo "not ok 3 results file and plot written"
fi
