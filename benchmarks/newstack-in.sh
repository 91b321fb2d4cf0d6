#!/bin/bash
# newstack-in.sh - the measuring half of benchmarks/newstack, run by it inside the libvirt
# 11 / QEMU 10 root of scripts/newstack (scripts/newstack run). Not meant to be run by hand.
#
#   newstack-in.sh WORK OUT CGROUP RAM_MIB ROUNDS "FILLS" "CONFIGS"
#
# WORK: images, fills, libvirtd's private dirs (bound in by the caller); OUT: raw.tsv is
# appended there; CGROUP: the cpuacct cgroup this script (and so libvirtd, QEMU, every
# helper and zstd, all its descendants) runs in: the CPU of a step is the growth of its
# cpuacct.usage. A private libvirtd (tests/libvirt/libvirt-lib.sh) spawns the stock
# libvirt_iohelper or ours; qemu-iohelper drives QEMUs started here. Every case starts a
# fresh guest (QEMU 10.0.2 crashes on a sparse save after a --bypass-cache sparse
# restore: tests/newstack/libvirt-formats.sh), saves it, drops the image from the page
# cache, restores it, and destroys the guest.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
. "$TOP/tests/libvirt/libvirt-lib.sh"

[ $# = 7 ] || { sed -n '5s/^# \{0,1\}//p' "$0" >&2; exit 2; }
WORK=$1 OUT=$2 CG=$3 RAM_MIB=$4 ROUNDS=$5 FILLS=$6 CONFIGS=$7
BUILD=$(cd "$(dirname "$IOHELPER_PATH")/.." && pwd)
HELPER=$BUILD/helper/iohelper
QTOOL=$BUILD/qemu-glue/qemu-iohelper
PAGECACHE=$BUILD/benchmarks/pagecache
BLOB_MIB=$((RAM_MIB - 24))   # RAM [16 MiB, RAM - 8 MiB) holds the fill

die() {
    echo "newstack-in: $*" >&2
    exit 1
}
why=$(lv_missing)
[ -z "$why" ] || die "$why"
lv_enter_namespace "$0" "$@"

RECORD=$WORK/record.jsonl
DOM=iohns-$$
IMG=$WORK/image
SOCKS=$(mktemp -d /tmp/iohns.XXXXXX) || exit 1
QPIDS=()
finish() {
    local rc=$? p
    trap - EXIT INT TERM HUP PIPE
    for p in "${QPIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [ "$rc" != 0 ] && [ -f "$WORK/lv/log/libvirtd.log" ] && tail -n 20 "$WORK/lv/log/libvirtd.log" >&2
    lv_cleanup
    rm -rf "$SOCKS" "$IMG"
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

lv_setup "$WORK/lv" "$HELPER" "$RECORD" || die "setting up libvirtd's private directories failed"
lv_start 120 || die "libvirtd did not start"

# The fills: random (nothing to gain from holes or compression), and halfzero (1 MiB of
# random data, 1 MiB of zeros, and so on: half the pages are zero).
make_fill() {
    local f=$WORK/fill-$1.bin i
    case $1 in
    random) head -c "$((BLOB_MIB << 20))" /dev/urandom >"$f" ;;
    halfzero)
        for ((i = 0; i < BLOB_MIB; i += 2)); do
            head -c 1M /dev/urandom
            head -c 1M /dev/zero
        done | head -c "$((BLOB_MIB << 20))" >"$f"
        ;;
    *) die "unknown fill $1" ;;
    esac
    lv_domain_xml "$DOM" "$RAM_MIB" "$f" >"$WORK/domain-$1.xml"
}
for f in $FILLS; do make_fill "$f" || die "cannot write the $f fill"; done

cpu_ns() {
    cat "$CG/cpuacct.usage"
}
# timed VAR_S VAR_CPU CMD...: wall seconds and CPU seconds of the cgroup while CMD runs
# shellcheck disable=SC2034   # s and c are namerefs to the caller's variables
timed() {
    local -n s=$1 c=$2
    local c0 t0 t1 c1
    shift 2
    c0=$(cpu_ns)
    t0=$EPOCHREALTIME
    "$@" >"$WORK/out" 2>&1 || { sed 's/^/#   /' "$WORK/out" >&2; return 1; }
    t1=$EPOCHREALTIME
    c1=$(cpu_ns)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    c=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
}
records() {
    if [ -f "$RECORD" ]; then wc -l <"$RECORD"; else echo 0; fi
}

# --- libvirt: virsh save / restore; the config names the helper and the flags ---
lv_flags() {   # CONFIG -> helper, then the flags of save and restore
    case $1 in
    raw-stock) echo "stock|" ;;
    raw-ours) echo "ours|" ;;
    raw-bypass-stock) echo "stock|--bypass-cache" ;;
    raw-bypass-ours) echo "ours|--bypass-cache" ;;
    zstd-ours) echo "ours|--image-format zstd" ;;
    sparse-p1) echo "none|--image-format sparse --parallel-channels 1" ;;
    sparse-p2) echo "none|--image-format sparse --parallel-channels 2" ;;
    sparse-p1-bypass) echo "none|--image-format sparse --parallel-channels 1 --bypass-cache" ;;
    sparse-p2-bypass) echo "none|--image-format sparse --parallel-channels 2 --bypass-cache" ;;
    *) return 1 ;;
    esac
}
restore_flags() {   # libvirt's restore takes the cache and channel flags, not the format
    echo "$1" | sed 's/--image-format [a-z]*//'
}

lv_save() {
    local flags=$2
    lv_virsh create "$WORK/domain-$1.xml" >/dev/null || return 1
    # shellcheck disable=SC2086
    timed SAVE_S SAVE_CPU lv_virsh save $flags "$DOM" "$IMG"
}
lv_restore() {
    # shellcheck disable=SC2046   # the flags are words
    timed RESTORE_S RESTORE_CPU lv_virsh restore $(restore_flags "$1") "$IMG" &&
        lv_virsh destroy "$DOM" >/dev/null
}

# --- qemu-iohelper: QEMU 10 started here, the same machine as libvirt's guest ---
start_qemu() {   # NAME FILL [incoming]
    local sock=$SOCKS/$1.sock t
    rm -f "$sock"
    qemu-system-x86_64 -machine pc,accel=tcg -m "${RAM_MIB}M" -nodefaults -display none \
        -qmp "unix:$sock,server=on,wait=off" \
        -device "loader,file=$WORK/fill-$2.bin,addr=0x1000000,force-raw=on" \
        ${3:+-S -incoming defer} </dev/null >"$WORK/qemu-$1.log" 2>&1 &
    QPIDS+=($!)
    for ((t = 0; t < 600; t++)); do
        [ -S "$sock" ] && return 0
        kill -0 "${QPIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    cat "$WORK/qemu-$1.log" >&2
    return 1
}
stop_qemus() {
    local p
    for p in "${QPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    QPIDS=()
}
qg_restore() {   # FILL MODEFLAG...: the destination QEMU's start counts, as in virsh restore
    start_qemu dst "$1" incoming &&
        "$QTOOL" restore --qmp "$SOCKS/dst.sock" "$IMG" "${@:2}"
}
qg_case() {   # FILL MODE [SAVE-OPTION...] (--channels=N: the restore reads it from the image)
    local m=()
    [ "$2" = buffered ] || m=(--bypass-cache="$2")
    start_qemu src "$1" || return 1
    timed SAVE_S SAVE_CPU "$QTOOL" save --qmp "$SOCKS/src.sock" "$IMG" "${m[@]}" "${@:3}" ||
        return 1
    stop_qemus
    measure_image
    timed RESTORE_S RESTORE_CPU qg_restore "$1" "${m[@]}" || return 1
    stop_qemus
}

# After a save: page cache the image holds, write-back left (fsync of the image), sizes;
# then the image leaves the page cache, so every restore reads from the disk.
measure_image() {
    CACHE=$("$PAGECACHE" count "$IMG")
    timed SYNC_S SYNC_CPU sync "$IMG"
    ALLOC=$(du -B1 "$IMG" | cut -f1)
    APPARENT=$(stat -c %s "$IMG")
    "$PAGECACHE" drop "$IMG"
    sync -f "$WORK"
}

one_case() {   # FILL CONFIG ROUND
    local fill=$1 cfg=$2 r=$3 spec helper flags n0 n1 want=0
    rm -f "$IMG"
    sync -f "$WORK"
    n0=$(records)
    case $cfg in
    qg-buffered | qg-fadvise | qg-direct) qg_case "$fill" "${cfg#qg-}" || return 1 ;;
    qg-direct-ch[0-9]*) qg_case "$fill" direct --channels="${cfg#qg-direct-ch}" || return 1 ;;
    *)
        spec=$(lv_flags "$cfg") || die "unknown configuration $cfg"
        helper=${spec%%|*} flags=${spec#*|}
        lv_use_helper "$helper" || return 1
        lv_save "$fill" "$flags" || return 1
        measure_image
        lv_restore "$flags" || return 1
        # ours notes each copy: the save, and a --bypass-cache restore; the others none
        case $cfg in raw-ours | zstd-ours) want=1 ;; raw-bypass-ours) want=2 ;; esac
        n1=$(records)
        [ $((n1 - n0)) = "$want" ] ||
            die "$cfg: $((n1 - n0)) copies in our helper's record, expected $want"
        ;;
    esac
    rm -f "$IMG"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fill" "$cfg" "$r" "$SAVE_S" \
        "$SYNC_S" "$RESTORE_S" "$ALLOC" "$APPARENT" "$SAVE_CPU" "$RESTORE_CPU" "$CACHE" \
        >>"$OUT/raw.tsv"
    printf '# round %s %-8s %-17s save %6.2f s sync %5.2f s restore %6.2f s  %5d MiB on disk  cpu %5.1f+%4.1f s  cache %4d MiB\n' \
        "$r" "$fill" "$cfg" "$SAVE_S" "$SYNC_S" "$RESTORE_S" $((ALLOC >> 20)) "$SAVE_CPU" \
        "$RESTORE_CPU" $((CACHE >> 20)) >&2
}

read -r -a cfgs <<<"$CONFIGS"
n=${#cfgs[@]}
for ((r = 1; r <= ROUNDS; r++)); do
    for f in $FILLS; do
        # round r starts at the (r-1)th configuration: no case is always first or last
        for ((i = 0; i < n; i++)); do
            c=${cfgs[$(((i + r - 1) % n))]}
            one_case "$f" "$c" "$r" || die "round $r, $f, $c failed"
        done
    done
done
