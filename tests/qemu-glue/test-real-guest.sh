#!/usr/bin/env bash
# tests/qemu-glue/test-real-guest.sh - a real Linux guest (scripts/guest/build-guest, test
# variant: Debian's cloud kernel, a busybox initramfs filling RAM with host files, random
# data and a gzip archive) saved with qemu-iohelper and restored into a fresh QEMU, once per
# row of the table below, in a chain: each restored copy is the source of the next row.
# Each row: pmemsave of the paused source and of its restored copy are identical, and the
# restored guest answers "ping N" with "pong N" on its serial console once resumed.
#
#   test-real-guest.sh QEMU-IOHELPER        (TAP; IOH_TEST_DIR: where the images go)
set -euo pipefail
export LC_ALL=C

# name | save options | needs (an option qemu-iohelper --help must mention)
variants=(
    "raw-direct|--bypass-cache=direct|"
    "zstd-default-direct|--bypass-cache=direct --compress|--compress"
    "zstd3-fadvise|--bypass-cache=fadvise --compress=zstd:3|--compress"
)

tool=${1:?usage: test-real-guest.sh QEMU-IOHELPER}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
n=0
pids=()
work=""

cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -KILL "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ -z "$work" ] || rm -rf "$work"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
bail() {
    echo "Bail out! $*"
    for f in "$work"/*.console "$work"/*.qemu.log "$work"/*.err; do
        [ -s "$f" ] || continue
        echo "# --- $f"; tail -n 20 "$f" | sed 's/^/# /'
    done
    exit 1
}

command -v qemu-system-x86_64 >/dev/null || { echo "1..0 # SKIP qemu-system-x86_64 not found"; exit 0; }
[ -x "$tool" ] || bail "$tool is not executable"
mkdir -p "${IOH_TEST_DIR:-/var/tmp}"
work=$(mktemp -d "${IOH_TEST_DIR:-/var/tmp}/real-guest-XXXXXX")

if ! gdir=$("$repo/scripts/guest/build-guest" test 2>"$work/build.err"); then
    # no package archive (offline machine) or no busybox-static: nothing to boot
    echo "1..0 # SKIP no real guest: $(tail -n1 "$work/build.err")"
    exit 0
fi
# shellcheck source=/dev/null
. "$gdir/guest.env"
echo "1..$((2 + 4 * ${#variants[@]}))"
ok "guest built: $gdir ($GUEST_KERNEL_VERSION)"

qmp() {  # NAME COMMAND [ARGS-JSON]
    local name=$1; shift
    "$tool" qmp --qmp "$work/$name.qmp" "$@" >/dev/null 2>>"$work/$name.err"
}

# start_qemu NAME [QEMU ARGS...]: a guest with its serial console on the FIFOs NAME.con.in
# (to it) and NAME.con.out (copied to NAME.console), its QMP monitor on NAME.qmp
start_qemu() {
    local name=$1 i; shift
    mkfifo "$work/$name.con.in" "$work/$name.con.out"
    qemu-system-x86_64 -machine pc,accel=tcg -m "${GUEST_MEM_MIB}M" -nodefaults \
        -display none -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
        -append "$GUEST_APPEND" -chardev "pipe,id=con,path=$work/$name.con" \
        -serial chardev:con -qmp "unix:$work/$name.qmp,server=on,wait=off" "$@" \
        >"$work/$name.qemu.log" 2>&1 &
    pids+=($!)
    eval "pid_$name=$!"
    cat "$work/$name.con.out" >"$work/$name.console" &
    pids+=($!)
    for i in $(seq 200); do
        qmp "$name" query-status && return 0
        sleep 0.1
    done
    bail "$name: QEMU's QMP socket never answered"
}

wait_console() {  # NAME REGEX SECONDS
    local name=$1 re=$2 secs=$3 i pid
    pid=$(eval echo "\$pid_$name")
    for ((i = 0; i < secs * 5; i++)); do
        tr -d '\r' <"$work/$name.console" | grep -qE "$re" && return 0
        kill -0 "$pid" 2>/dev/null || bail "$name: QEMU exited waiting for '$re'"
        sleep 0.2
    done
    bail "$name: no '$re' on the serial console after $secs s"
}

ping_guest() {  # NAME N
    echo "ping $2" >"$work/$1.con.in"
    wait_console "$1" "^pong $2\$" 60
}

start=$(date +%s)
start_qemu g0
wait_console g0 "^$GUEST_READY" 300
ping_guest g0 0
ok "source guest ready after $(($(date +%s) - start)) s, answers on ttyS0"

help=$("$tool" --help 2>&1 || true)
cur=g0
k=0
for row in "${variants[@]}"; do
    IFS='|' read -r vname opts needs <<<"$row"
    if [ -n "$needs" ] && ! grep -q -- "$needs" <<<"$help"; then
        for what in save restore pmemsave ping; do
            skip "$vname $what: qemu-iohelper --help does not mention $needs"
        done
        continue
    fi
    k=$((k + 1))
    dst=g$k
    img=$work/$vname.img
    qmp "$cur" stop || bail "$cur: stop"
    qmp "$cur" pmemsave "{\"val\": 0, \"size\": $((GUEST_MEM_MIB << 20)), \"filename\": \"$work/$cur.mem\"}" ||
        bail "$cur: pmemsave"
    # shellcheck disable=SC2086
    "$tool" save --qmp "$work/$cur.qmp" "$img" $opts --stats >"$work/$vname.stats" \
        2>"$work/$vname.err" || bail "$vname: save $opts failed: $(cat "$work/$vname.err")"
    ok "$vname: save $opts ($(stat -c %s "$img") bytes, $(tr '\n' ' ' <"$work/$vname.stats"))"

    start_qemu "$dst" -incoming defer
    "$tool" restore --qmp "$work/$dst.qmp" "$img" 2>"$work/$vname.restore.err" ||
        bail "$vname: restore failed: $(cat "$work/$vname.restore.err")"
    ok "$vname: restore into a fresh QEMU"

    qmp "$dst" pmemsave "{\"val\": 0, \"size\": $((GUEST_MEM_MIB << 20)), \"filename\": \"$work/$dst.mem\"}" ||
        bail "$dst: pmemsave"
    cmp "$work/$cur.mem" "$work/$dst.mem" >&2 || bail "$vname: RAM of source and restored copy differ"
    ok "$vname: pmemsave of paused source and restored copy identical ($GUEST_MEM_MIB MiB)"

    qmp "$dst" cont || bail "$dst: cont"
    ping_guest "$dst" "$k"
    ok "$vname: the restored guest resumes and answers 'pong $k'"

    pid=$(eval echo "\$pid_$cur")
    { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
    rm -f "$work/$cur.mem" "$img"
    cur=$dst
done
