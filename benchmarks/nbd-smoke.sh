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
bash "$nbd" --quick --build "$build" --out "$out" --dir "${IOH_TEST_DIR:-$build/test-tmp}" \
    > "$log" 2>&1
rc=$?
i=0
tap() {    # DESCRIPTION TEST...: one TAP line; the log as diagnostics when it fails
    local desc=$1
    shift
    i=$((i + 1))
    if "$@"; then echo "ok $i $desc"; else echo "not ok $i $desc"; sed 's/^/# /' "$log"; fi
}
echo "1..7"
tap "benchmarks/nbd --quick exits 0" [ "$rc" = 0 ]
tap "tables printed" grep -q '^| file | save | ours / nbdcopy |' "$log"
tap "every case measured" [ "$(grep -c '^| [a-z-]* | [a-z].* | [0-9]' "$log")" -ge 30 ]
tap "bottleneck table: CPU of server, client and pipe end per case" \
    grep -Eq '^\| memory \| ours \| save \| [0-9]+ \| [0-9]+ / [0-9]+ / [0-9]+ \|' "$log"
tap "results file: the command, the machine, the tables (--quick: in --out)" \
    grep -q '^| file | save | ours / nbdcopy |' "$out/nbd.md"
tap "the memory servers filled before the runs (a first write allocates nbdkit memory's pages)" \
    grep -q '^# nbdkit memory filled: ' "$log"
tap "the pairs: the default against --connections=1 adjacent, round by round, with its choice" \
    grep -Eq '^\| file \| save \| [0-9.]+ [0-9.]+ \| .* \| 1x[0-9]+: ' "$log"
