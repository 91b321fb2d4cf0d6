#!/bin/bash
# virsh-save.sh - virsh save/restore timings with our iohelper vs libvirt's stock
# libvirt_iohelper, same guest, interleaved runs (ours, stock, ours, stock, ...), medians.
#
#   benchmarks/virsh-save.sh [--runs N] [--ram-mib MIB] [--blob-mib MIB] [--helper PATH]
#                            [--dir DIR]
#
# Defaults: 3 runs each, a 1280 MiB guest holding 1024 MiB of random data (so the stream
# is ~1 GiB whatever QEMU's zero-page skipping), the helper in build/helper/iohelper, the
# images in build/bench-tmp. Root only. A private libvirtd in a private mount namespace
# (tests/libvirt/libvirt-lib.sh) spawns one helper or the other through a bind mount over
# /usr/lib/libvirt/libvirt_iohelper; the system's libvirt is not touched. Each run times,
# with the guest running: virsh save, virsh restore (libvirt reads that one itself: no
# helper, a reference), virsh save --bypass-cache, virsh restore --bypass-cache. Every
# timing is the whole virsh command (wall clock), after a sync; beside it, how long the
# helper process lived (same timing wrapper around both). Prints a table on stdout, also
# written to benchmarks/results/virsh-save.md (the latest run: benchmarks/results-write).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
. "$TOP/tests/libvirt/libvirt-lib.sh"

RUNS=3
RAM_MIB=1280
BLOB_MIB=1024
HELPER=${IOHELPER_PATH:-$TOP/build/helper/iohelper}
DIR=$TOP/build/bench-tmp
while [ $# -gt 0 ]; do
    case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --ram-mib) RAM_MIB=$2; shift 2 ;;
    --blob-mib) BLOB_MIB=$2; shift 2 ;;
    --helper) HELPER=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    *) sed -n '5,6s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    esac
done
[ -x "$HELPER" ] || { echo "virsh-save: $HELPER: not built (ninja -C build)" >&2; exit 1; }
HELPER=$(cd "$(dirname "$HELPER")" && pwd)/$(basename "$HELPER")
why=$(lv_missing)
[ -z "$why" ] || { echo "virsh-save: $why" >&2; exit 1; }

lv_enter_namespace "$0" --runs "$RUNS" --ram-mib "$RAM_MIB" --blob-mib "$BLOB_MIB" \
    --helper "$HELPER" --dir "$DIR"

mkdir -p "$DIR" || exit 1
WORK=$(mktemp -d "$(cd "$DIR" && pwd)/virsh-save.XXXXXX") || exit 1
RECORD=$WORK/record.jsonl
DOM=iohbench-$$
finish() {
    local rc=$?
    trap - EXIT INT TERM HUP PIPE
    lv_cleanup
    rm -rf "$WORK"
    exit "$rc"
}
lv_on_exit finish

lv_setup "$WORK" "$HELPER" "$RECORD" || exit 1
lv_start 120 || exit 1
head -c "$((BLOB_MIB << 20))" /dev/urandom >"$WORK/blob.bin" || exit 1
lv_domain_xml "$DOM" "$RAM_MIB" "$WORK/blob.bin" >"$WORK/domain.xml"
lv_virsh create "$WORK/domain.xml" >/dev/null || exit 1

# Both helpers run under the same timing wrapper: how long the helper process lived (it
# lives as long as the stream flows, plus its final sync). libvirt clears the
# environment, hence absolute paths and bash's own clock.
HMS=$WORK/helper-ms
mkwrap() {
    cat >"$WORK/timed-$1" <<EOF
#!/bin/bash
t0=\${EPOCHREALTIME/./}
$2 "\$@"
rc=\$?
t1=\${EPOCHREALTIME/./}
echo \$(( (t1 - t0) / 1000 )) >>'$HMS'
exit \$rc
EOF
    chmod 755 "$WORK/timed-$1"
}
mkwrap ours "'$HELPER' --record='$RECORD'"
mkwrap stock "'$WORK/stock-iohelper'"
use_helper() {
    lv_use_helper none && mount --bind "$WORK/timed-$1" "$LV_STOCK_HELPER"
}

OPS=(save restore save-bypass restore-bypass)
declare -A T               # T[helper,op] = "t1 t2 ..." virsh wall seconds
declare -A H               # H[helper,op] = "t1 t2 ..." helper process seconds
IMG=$WORK/$DOM.save

timed() {
    local t0 t1
    sync
    t0=$(date +%s.%N)
    lv_virsh "$@" >"$WORK/out" 2>&1 || { sed 's/^/# /' "$WORK/out" >&2; return 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

helper_runs() {
    if [ -f "$HMS" ]; then wc -l <"$HMS"; else echo 0; fi
}
record_lines() {
    if [ -f "$RECORD" ]; then wc -l <"$RECORD"; else echo 0; fi
}

one_run() {
    local h=$1 r=$2 n0 t op hn hs
    use_helper "$h" || return 1
    n0=$(record_lines)
    for op in "${OPS[@]}"; do
        hn=$(helper_runs)
        case $op in
        save) t=$(timed save "$DOM" "$IMG") ;;
        restore) t=$(timed restore "$IMG") ;;
        save-bypass) t=$(timed save --bypass-cache "$DOM" "$IMG") ;;
        restore-bypass) t=$(timed restore --bypass-cache "$IMG") ;;
        esac || { echo "virsh-save: $h $op failed" >&2; return 1; }
        case $op in restore*) rm -f "$IMG" ;; esac
        T[$h,$op]="${T[$h,$op]:-} $t"
        hs=-
        if [ "$(helper_runs)" -gt "$hn" ]; then
            hs=$(tail -n 1 "$HMS" | awk '{ printf "%.2f", $1 / 1000 }')
            H[$h,$op]="${H[$h,$op]:-} $hs"
        fi
        printf '# run %d %-5s %-15s virsh %6.2f s  helper %5s s\n' "$r" "$h" "$op" "$t" "$hs" >&2
    done
    # ours writes a record line per copy (3: two saves, one bypass restore), stock none
    local n1 want=0
    n1=$(record_lines)
    [ "$h" = ours ] && want=3
    if [ $((n1 - n0)) != $want ]; then
        echo "virsh-save: run $r $h: $((n1 - n0)) record lines, expected $want" >&2
        return 1
    fi
}

# median FORMAT: of the numbers on stdin; nothing when there are none
median() { python3 "$HERE/stats.py" median "$1"; }

rstate=$("$HERE/results-write" start)
stream=0
for r in $(seq "$RUNS"); do
    for h in ours stock; do
        one_run "$h" "$r" || exit 1
    done
done
stream=$(jq -s 'map(select(.direction == "save" and .ok)) | .[0].bytes' "$RECORD")

{
echo "virsh save/restore, ${RAM_MIB} MiB guest with ${BLOB_MIB} MiB random RAM," \
     "stream $((stream / 1048576)) MiB, $RUNS interleaved runs each, median wall seconds"
echo "images in $DIR ($(df -PT "$DIR" | awk 'NR == 2 { print $2 }'))," \
     "libvirt $(libvirtd --version | awk '{ print $NF }'), $(qemu-system-x86_64 --version | head -n 1 | awk '{ print "QEMU " $4 }')"
printf '%-29s %21s %10s %21s\n' "" "virsh wall s" "" "helper process s"
printf '%-29s %10s %10s %10s %10s %10s\n' "operation" "iohelper" "stock" "ours/stock" \
    "iohelper" "stock"
for op in "${OPS[@]}"; do
    a=$(echo "${T[ours,$op]}" | median %.9f)
    b=$(echo "${T[stock,$op]}" | median %.9f)
    ha=$(echo "${H[ours,$op]:-}" | median %.2f)
    hb=$(echo "${H[stock,$op]:-}" | median %.2f)
    case $op in
    save) name="virsh save" ;;
    restore) name="virsh restore (no helper)" ;;
    save-bypass) name="virsh save --bypass-cache" ;;
    restore-bypass) name="virsh restore --bypass-cache" ;;
    esac
    printf '%-29s %10.2f %10.2f %10.2f %10s %10s\n' "$name" "$a" "$b" \
        "$(echo "$a / $b" | bc -l)" "${ha:--}" "${hb:--}"
done
} | tee "$WORK/table.txt"
"$HERE/results-write" virsh-save "$rstate" "$WORK/table.txt" "" benchmarks/virsh-save.sh \
    --runs "$RUNS" --ram-mib "$RAM_MIB" --blob-mib "$BLOB_MIB"
