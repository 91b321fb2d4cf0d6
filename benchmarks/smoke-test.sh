#!/bin/bash
# smoke-test.sh RUN BUILDDIR - TAP: benchmarks/run works in its quick mode and prints its
# tables. Speed is never asserted.
run=$1 build=$2
out=$build/bench-smoke
log=$out.log
rm -rf "$out"
echo "1..4"
if bash "$run" --quick --build "$build" --out "$out" --dir "${IOH_TEST_DIR:-$build/test-tmp}" \
        > "$log" 2>&1; then
    echo "ok 1 benchmarks/run --quick exits 0"
else
    echo "not ok 1 benchmarks/run --quick exits 0"
    sed 's/^/# /' "$log"
fi
if grep -q '^| save | ours-direct |' "$log" && grep -q '^| restore | ours-direct |' "$log" &&
        grep -q '^## Ratios' "$log"; then
    echo "ok 2 tables printed"
else
    echo "not ok 2 tables printed"
    sed 's/^/# /' "$log"
fi
if [ -s "$out/raw.tsv" ] && [ "$(wc -l < "$out/raw.tsv")" -gt 10 ]; then
    echo "ok 3 raw data written"
else
    echo "not ok 3 raw data written"
fi
if head -n 5 "$out/run.md" 2>/dev/null | grep -q '^Command: `benchmarks/run --quick ' &&
        grep -q '^Machine: .* cores; load .* before, .* after: \(quiet\|busy\)\.$' "$out/run.md" &&
        grep -q '^| save | ours-direct |' "$out/run.md"; then
    echo "ok 4 results file: the command, the machine, the tables (--quick: in --out)"
else
    echo "not ok 4 results file: the command, the machine, the tables (--quick: in --out)"
    sed 's/^/# /' "$out/run.md"
fi
