#!/bin/bash
# libvirt-formats.sh - what libvirt 11 adds around its helper, through a real private
# libvirtd (tests/libvirt/libvirt-lib.sh) that spawns our iohelper. Prints TAP.
#
#   managedsave / start, with and without --bypass-cache: our helper copies (record)
#   --image-format sparse (QEMU mapped-ram), with --bypass-cache (QEMU's direct-io) and
#     --parallel-channels 2 (multifd): no helper runs at all, the image has holes
#   save_image_format = "zstd" in qemu.conf: QEMU -> zstd -> our helper -> file; proven by
#     the pipe between the zstd program and the helper, and by the image's zstd frame
#
# Run inside scripts/newstack's root (tests/newstack/in-newstack.sh); it needs libvirt 11.
# Each save/restore compares the paused guest's RAM before and after, byte for byte.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../libvirt/libvirt-lib.sh"

RAM_MIB=${IOH_LV_RAM_MIB:-128}
BLOB_MIB=${IOH_LV_BLOB_MIB:-64}

. "$HERE/../common/tap.sh"

HELPER=${IOHELPER_PATH:-}
[ -n "$HELPER" ] && [ -x "$HELPER" ] || skip_all "IOHELPER_PATH is not set to the built iohelper"
why=$(lv_missing)
[ -z "$why" ] || skip_all "$why"
command -v zstd >/dev/null || skip_all "zstd not installed"
major=$(libvirtd --version | sed -n 's/.* \([0-9]*\)\.[0-9.]*$/\1/p')
[ "${major:-0}" -ge 11 ] || skip_all "libvirt $(libvirtd --version | awk '{print $NF}') has no sparse format (needs 11.2)"

lv_enter_namespace "$0" "$@"

base=${IOH_TEST_DIR:-$(dirname "$HELPER")/../test-tmp}
mkdir -p "$base" || bail "cannot create $base"
WORK=$(mktemp -d "$base/formats.XXXXXX") || bail "mktemp in $base failed"
WORK=$(cd "$WORK" && pwd)
RECORD=$WORK/record.jsonl
SPAWNED=$WORK/spawned       # one line per program libvirt spawned: NAME FD0 FD1 ARGS
DOM=iohfmt-$$

finish() {
    local rc=$?
    trap - EXIT INT TERM HUP PIPE
    [ -n "$LV_PID" ] && timeout 20 virsh -q -c "$LV_URI" undefine --managed-save "$DOM" >/dev/null 2>&1
    lv_cleanup
    if [ "$rc" != 0 ] || [ "$nfail" != 0 ]; then
        lv_log_tail
    fi
    rm -rf "$WORK"
    exit "$rc"
}
lv_on_exit finish

lv_setup "$WORK" "$HELPER" "$RECORD" || bail "setting up libvirtd's private directories failed"
# Every helper libvirtd spawns notes its stdin and stdout first (the same file bound over
# libvirt_iohelper by lv_setup, rewritten in place).
cat >"$WORK/iohelper-wrapper" <<EOF
#!/bin/sh
echo "iohelper \$(readlink /proc/\$\$/fd/0) \$(readlink /proc/\$\$/fd/1) \$*" >>'$SPAWNED'
exec '$HELPER' --record='$RECORD' "\$@"
EOF
# libvirt finds the compressor in its PATH: the real zstd, noting its stdin and stdout.
mkdir -p "$WORK/bin"
cat >"$WORK/bin/zstd" <<EOF
#!/bin/sh
echo "zstd \$(readlink /proc/\$\$/fd/0) \$(readlink /proc/\$\$/fd/1) \$*" >>'$SPAWNED'
exec $(command -v zstd) "\$@"
EOF
chmod 755 "$WORK/bin/zstd"
: >"$SPAWNED"

start_libvirtd() {
    PATH=$WORK/bin:$PATH lv_start 120 || bail "libvirtd did not start"
}
stop_libvirtd() {
    kill -TERM "$LV_PID" && wait "$LV_PID" 2>/dev/null
    LV_PID=
}
start_libvirtd
ok "private libvirtd $(libvirtd --version | awk '{print $NF}') answers"

head -c "$((BLOB_MIB << 20))" /dev/urandom >"$WORK/blob.bin" || bail "cannot write random data"
lv_domain_xml "$DOM" "$RAM_MIB" "$WORK/blob.bin" >"$WORK/domain.xml"
if lv_virsh define "$WORK/domain.xml" >"$WORK/out" 2>&1 && lv_virsh start "$DOM" >>"$WORK/out" 2>&1; then
    ok "persistent domain with $RAM_MIB MiB RAM ($BLOB_MIB MiB random) runs"
else
    sed 's/^/# /' "$WORK/out"
    bail "virsh define/start failed"
fi

state() {
    lv_virsh domstate "$DOM" 2>/dev/null | head -n 1
}
count() {
    if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi
}
# record_is N DIRECTION MODE PATH: line N of the record is a successful copy of ours
record_is() {
    local line
    line=$(sed -n "${1}p" "$RECORD" 2>/dev/null)
    echo "$line" | jq -e --arg d "$2" --arg m "$3" --arg p "$4" \
        '.form == "libvirt" and .direction == $d and .mode == $m and .path == $p and .ok' \
        >/dev/null || { echo "# record line $1: '$line' (wanted $2 $3 $4)" >&2; return 1; }
}
spawned_since() {
    tail -n "+$(($1 + 1))" "$SPAWNED"
}
before() {
    case $(state) in
    running) ;;
    "shut off") lv_virsh start "$DOM" >/dev/null ;;
    *) lv_virsh resume "$DOM" >/dev/null 2>&1 ;;
    esac
    lv_virsh suspend "$DOM" >/dev/null && lv_pmemsave "$DOM" "$WORK/before.ram" "$((RAM_MIB << 20))"
}
# after TAG: the restored guest is paused with the RAM it had; then it runs on.
after() {
    local tag=$1
    check "$tag: restored domain is paused as saved" test "$(state)" = paused
    if lv_pmemsave "$DOM" "$WORK/after.ram" "$((RAM_MIB << 20))"; then
        check "$tag: guest RAM after restore equals RAM before save, byte for byte" \
            cmp "$WORK/before.ram" "$WORK/after.ram"
    else
        not_ok "$tag: read guest RAM after restore"
    fi
    rm -f "$WORK/before.ram" "$WORK/after.ram"
    lv_virsh resume "$DOM" >/dev/null 2>&1
}
# run_ok TAG CMD...: one TAP line for a virsh command
run_ok() {
    local tag=$1
    shift
    if lv_virsh "$@" >"$WORK/out" 2>&1; then
        ok "$tag: virsh $*"
    else
        sed 's/^/# /' "$WORK/out"
        tail -n 5 "$WORK/log/qemu/$DOM.log" 2>/dev/null | sed 's/^/# qemu: /'
        not_ok "$tag: virsh $*"
        return 1
    fi
}

# managedsave [--bypass-cache], then start [--bypass-cache]: libvirt's own image path.
managed() {
    local flag=$1 tag="managedsave${1:+ $1}" mode=buffered n0 s0 img
    [ -n "$flag" ] && mode=direct
    img=/var/lib/libvirt/qemu/save/$DOM.save
    before || { not_ok "$tag: suspend and read guest RAM"; return; }
    n0=$(count "$RECORD")
    run_ok "$tag" managedsave $flag "$DOM" || return
    check "$tag: domain is shut off with a managed save image" \
        eval '[ "$(state)" = "shut off" ] && lv_virsh dominfo "$DOM" | grep -q "Managed save: *yes"'
    check "$tag: our helper wrote $img, $mode (record)" \
        eval '[ "$(count "$RECORD")" = $((n0 + 1)) ] && record_is $((n0 + 1)) save $mode "$img"'
    n0=$(count "$RECORD")
    s0=$(count "$SPAWNED")
    run_ok "$tag" start $flag "$DOM" || return
    if [ -n "$flag" ]; then
        check "$tag: our helper read it back for start $flag, direct (record)" \
            eval '[ "$(count "$RECORD")" = $((n0 + 1)) ] && record_is $((n0 + 1)) restore direct "$img"'
    else
        check "$tag: start reads the image without a helper" test "$(count "$SPAWNED")" = "$s0"
    fi
    after "$tag"
}

# sparse SAVE_FLAGS RESTORE_FLAGS: QEMU writes and reads the file itself, no helper.
sparse() {
    local sflags=$1 rflags=$2 img=$WORK/$DOM.sparse s0 size used
    local tag="sparse${sflags:+ $sflags} / restore${rflags:+ $rflags}"
    before || { not_ok "$tag: suspend and read guest RAM"; return; }
    s0=$(count "$SPAWNED")
    run_ok "$tag" save --image-format sparse $sflags "$DOM" "$img" || return
    check "$tag: no helper ran for the save" \
        eval '[ "$(count "$SPAWNED")" = "$s0" ] || { spawned_since $s0 | sed "s/^/# spawned: /"; false; }'
    size=$(stat -c %s "$img")
    used=$(($(stat -c %b "$img") * $(stat -c %B "$img")))
    echo "# $img: $size bytes, $used allocated" >&2
    check "$tag: the image has holes (zero pages not written): $used of $size bytes allocated" \
        test "$used" -lt $((size * 3 / 4))
    run_ok "$tag" restore $rflags "$img" || { rm -f "$img"; return; }
    check "$tag: no helper ran for the restore" \
        eval '[ "$(count "$SPAWNED")" = "$s0" ] || { spawned_since $s0 | sed "s/^/# spawned: /"; false; }'
    rm -f "$img"
    after "$tag"
}

managed ""
managed --bypass-cache
sparse "" ""
sparse "--parallel-channels 2" "--parallel-channels 2"
sparse --bypass-cache --bypass-cache
sparse "--bypass-cache --parallel-channels 2" "--bypass-cache --parallel-channels 2"

# Found here (libvirt 11.3.0 + QEMU 10.0.2): once a QEMU was restored from a sparse image
# with --bypass-cache (QEMU's direct-io), a sparse save WITHOUT --bypass-cache kills it
# (segfault; the guest is lost). A raw save (our helper) or a sparse save with
# --bypass-cache from the same QEMU works (above). Kept as a TAP TODO: it turns into an
# unexpected pass, failing this test, when a fixed stack lands, so the docs get updated.
before >/dev/null 2>&1
if lv_virsh save --image-format sparse "$DOM" "$WORK/$DOM.sparse" >"$WORK/out" 2>&1; then
    ntest=$((ntest + 1))
    echo "ok $ntest - sparse save after a --bypass-cache sparse restore # TODO fixed? update docs/libvirt.md"
    lv_virsh restore "$WORK/$DOM.sparse" >/dev/null 2>&1
else
    sed 's/^/# /' "$WORK/out"
    ntest=$((ntest + 1))
    echo "not ok $ntest - sparse save after a --bypass-cache sparse restore: QEMU $(state) # TODO QEMU 10.0.2 crashes"
fi
rm -f "$WORK/$DOM.sparse" "$WORK/before.ram"

# zstd: save_image_format in qemu.conf, which needs a libvirtd restart to take effect.
stop_libvirtd
echo 'save_image_format = "zstd"' >>"$WORK/etc/qemu.conf"
start_libvirtd
ok "libvirtd restarted with save_image_format = \"zstd\""

# pipe_between A B DIRECTION: A's stdout is B's stdin (one line each in SPAWNED since s0)
pipe_between() {
    local a b
    a=$(spawned_since "$s0" | awk -v p="$1" '$1 == p { print $3; exit }')
    b=$(spawned_since "$s0" | awk -v p="$2" '$1 == p { print $2; exit }')
    spawned_since "$s0" | sed 's/^/# spawned: /' >&2
    case $a in pipe:*) [ "$a" = "$b" ] ;; *) false ;; esac
}

zstd_cycle() {
    local flag=$1 img=$WORK/$DOM.zst mode=buffered n0 s0 off tag="zstd${1:+ $1}"
    [ -n "$flag" ] && mode=direct
    before || { not_ok "$tag: suspend and read guest RAM"; return; }
    n0=$(count "$RECORD")
    s0=$(count "$SPAWNED")
    run_ok "$tag" save $flag "$DOM" "$img" || return
    check "$tag: our helper wrote the image, $mode (record)" \
        eval '[ "$(count "$RECORD")" = $((n0 + 1)) ] && record_is $((n0 + 1)) save $mode "$img"'
    check "$tag: QEMU -> zstd -c -> our helper: zstd's stdout is the helper's stdin" \
        eval 'spawned_since $s0 | grep -q "^zstd .* -c$" && pipe_between zstd iohelper'
    off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$img" | head -n 1 | cut -d: -f1)
    check "$tag: after libvirt's header the image is a zstd stream of QEMU's (QEVM...)" \
        eval '[ -n "$off" ] && [ "$(tail -c +$((off + 1)) "$img" | zstd -dc 2>/dev/null | head -c 4)" = QEVM ]'
    check "$tag: our helper copied every byte of the image ($(stat -c %s "$img"))" \
        test "$(sed -n "$((n0 + 1))p" "$RECORD" | jq -r .bytes)" = "$(stat -c %s "$img")"
    n0=$(count "$RECORD")
    s0=$(count "$SPAWNED")
    run_ok "$tag" restore $flag "$img" || { rm -f "$img"; return; }
    if [ -n "$flag" ]; then
        check "$tag: our helper read it, direct (record)" \
            eval '[ "$(count "$RECORD")" = $((n0 + 1)) ] && record_is $((n0 + 1)) restore direct "$img"'
        check "$tag: file -> our helper -> zstd -dc -> QEMU: the helper's stdout is zstd's stdin" \
            eval 'spawned_since $s0 | grep -q "^zstd .* -dc$" && pipe_between iohelper zstd'
    else
        check "$tag: zstd -dc reads the file itself, no helper" \
            eval '! spawned_since $s0 | grep -q "^iohelper" && spawned_since $s0 | grep -q "^zstd .* -dc$"'
    fi
    rm -f "$img"
    after "$tag"
}

zstd_cycle ""
zstd_cycle --bypass-cache
lv_log "record of our helper:"
sed 's/^/#   /' "$RECORD" >&2
echo "1..$ntest"
[ "$nfail" = 0 ]
