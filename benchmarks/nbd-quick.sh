#!/usr/bin/env bash
# benchmarks/nbd-quick.sh - a short NBD comparison (issue 13); the full one is benchmarks/nbd:
#   pipe -> nbdkit file (unix socket): iohelper vs nbdcopy vs iohelper --fadvise to a
#   local file on the same disk; nbdkit file -> pipe: iohelper vs nbdcopy; nbdkit memory:
#   --connections 1 vs 4, --requests 1/4/16/64, --request-size 64K/256K/1M/4M. nbdcopy
#   gets --flush (iohelper always flushes) and its defaults otherwise.
# Interleaved rounds, median wall seconds and MB/s of each. Run it under the bench lock:
#   flock /work/bench.lock benchmarks/nbd-quick.sh BUILDDIR [SIZE_MIB] [ROUNDS]
set -u
build=$(cd "${1:?usage: nbd-quick.sh BUILDDIR [SIZE_MIB] [ROUNDS]}" && pwd)
mib=${2:-1024}
rounds=${3:-3}
ioh=$build/helper/iohelper
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prod=$build/benchmarks/producer
cons=$build/benchmarks/consumer
dir=$(mktemp -d /var/tmp/nbd-quick.XXXXXX)
stop_all() {
    for p in "$dir"/*.pid; do
        [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
    done
    sleep 0.5
    rm -rf "$dir"
}
trap stop_all EXIT
declare -A times

serve() { # serve NAME nbdkit-args...
    local name=$1
    shift
    nbdkit --unix "$dir/$name.sock" -P "$dir/$name.pid" "$@"
    while [ ! -s "$dir/$name.pid" ]; do sleep 0.05; done
}
uri() { echo "nbd+unix:///?socket=$dir/$1.sock"; }

# run LABEL CMD: wall seconds of CMD (a shell line) into times[LABEL]
run() {
    local label=$1 t0 t1
    sync
    t0=$(date +%s.%N)
    bash -c "$2" || echo "# $label failed" >&2
    t1=$(date +%s.%N)
    times[$label]="${times[$label]:-} $(echo "$t1 - $t0" | bc)"
}

report() {
    for label in "$@"; do
        local med
        med=$(echo "${times[$label]}" | python3 "$here/stats.py" median %.9f)
        printf '%-34s %7.2f s %8.0f MB/s   (runs:%s)\n' "$label" "$med" \
            "$(echo "$mib * 1048576 / $med / 1000000" | bc -l)" "${times[$label]}"
    done
}

# exactly the stream: nbdcopy restores a whole export
truncate -s "${mib}M" "$dir/disk.img"
serve file file "$dir/disk.img"
serve mem memory "${mib}M"
for _ in $(seq "$rounds"); do
    run "save iohelper -> file" "$prod ${mib}M | $ioh - '$(uri file)'"
    run "save nbdcopy -> file" "$prod ${mib}M | nbdcopy --flush - '$(uri file)'"
    run "save iohelper --fadvise local" "$prod ${mib}M | $ioh --fadvise - $dir/local.img"
    rm -f "$dir/local.img"
    run "restore iohelper <- file" "$ioh --length=${mib}M '$(uri file)' - | $cons"
    run "restore nbdcopy <- file" "nbdcopy '$(uri file)' - | $cons"
    for k in 1 4; do
        run "save mem --connections=$k" "$prod ${mib}M | $ioh --connections=$k - '$(uri mem)'"
    done
    for r in 1 4 16 64; do
        run "save mem --requests=$r" "$prod ${mib}M | $ioh --requests=$r - '$(uri mem)'"
    done
    for s in 64K 256K 1M 4M; do
        run "save mem --request-size=$s" "$prod ${mib}M | $ioh --request-size=$s - '$(uri mem)'"
    done
    run "save nbdcopy -> mem" "$prod ${mib}M | nbdcopy --flush - '$(uri mem)'"
done
echo "# ${mib} MiB, $rounds rounds, median; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
report "save iohelper -> file" "save nbdcopy -> file" "save iohelper --fadvise local" \
    "restore iohelper <- file" "restore nbdcopy <- file" \
    "save mem --connections=1" "save mem --connections=4" \
    "save mem --requests=1" "save mem --requests=4" "save mem --requests=16" \
    "save mem --requests=64" "save mem --request-size=64K" "save mem --request-size=256K" \
    "save mem --request-size=1M" "save mem --request-size=4M" "save nbdcopy -> mem"
