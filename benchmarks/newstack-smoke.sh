#!/bin/bash
# newstack-smoke.sh NEWSTACK BUILDDIR - TAP: benchmarks/newstack runs (64 MiB half-zero
# guest, 1 round, one libvirt raw case with our helper, one sparse case, one qemu-iohelper
# case) inside scripts/newstack's root and prints its table and plot data. Speed is never
# asserted. Skips where the benchmark cannot run: not root, no debootstrap, no cgroup v1
# cpuacct hierarchy, a sanitized build (the root has no ASan runtime).
run=$1 build=$2
out=$build/bench-newstack-smoke
log=$out.log
skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}
. "$(dirname "${BASH_SOURCE[0]}")/../tests/newstack/newstack-lib.sh"
why=$(ns_missing "$build/helper/iohelper")
[ -z "$why" ] || skip_all "$why"
[ -w /sys/fs/cgroup/cpuacct ] || skip_all "no cgroup v1 cpuacct hierarchy to count CPU with"
rm -rf "$out"
echo "1..4"
if IOHELPER_RESULTS=$out/results bash "$run" --ram-mib 64 --rounds 1 --fills halfzero --configs "raw-ours sparse-p2 qg-direct" \
        --build "$build" --out "$out" --dir "${IOH_TEST_DIR:-$build/test-tmp}/bench-newstack" \
        >"$log" 2>&1; then
    echo "ok 1 benchmarks/newstack exits 0"
else
    echo "not ok 1 benchmarks/newstack exits 0"
    sed 's/^/# /' "$log"
fi
if grep -q '^| raw-ours | ' "$log" && grep -q '^| sparse-p2 | ' "$log" && grep -q '^| qg-direct | ' "$log"; then
    echo "ok 2 table printed, a row per configuration"
else
    echo "not ok 2 table printed, a row per configuration"
fi
if [ "$(wc -l <"$out/raw.tsv" 2>/dev/null)" = 4 ] && [ "$(wc -l <"$out/plot-halfzero.dat" 2>/dev/null)" = 3 ]; then
    echo "ok 3 raw data and plot data written"
else
    echo "not ok 3 raw data and plot data written"
fi
if grep -q '^Command: `benchmarks/newstack --ram-mib 64 ' "$out/results/newstack.md" 2>/dev/null &&
        grep -q '^| raw-ours | ' "$out/results/newstack.md"; then
    echo "ok 4 results file written where IOHELPER_RESULTS says"
else
    echo "not ok 4 results file written where IOHELPER_RESULTS says"
fi
