#!/bin/bash
# libvirt-save-restore.sh - virsh save/restore through a real libvirtd that spawns OUR
# iohelper as its libvirt_iohelper. Prints TAP.
#
# A private mount namespace holds every change: our wrapper bound over
# /usr/lib/libvirt/libvirt_iohelper, our qemu.conf, and private /run/libvirt,
# /var/lib/libvirt, /var/cache/libvirt, /var/log/libvirt and /etc/libvirt. libvirtd
# listens on a socket in the test's own folder. A system libvirtd is neither used nor
# disturbed. Everything started here is stopped on exit, by a trap, pass or fail.
#
# Needs: root, libvirtd + QEMU driver, virsh, qemu-system-x86_64, jq, util-linux; for the
# direct ENOSPC case also mkfs.ext4 and a loop device. IOHELPER_PATH: the binary.
#
# IOH_LV_INSTALLED=PATH (tests/deb): the installed mode. Nothing is bound over the
# system's libvirt_iohelper: libvirtd spawns whatever it is, which must lead to PATH (the
# packaged iohelper, put there by a dpkg diversion). The save/restore and ENOSPC cases run;
# with no wrapper there is no record, so the ENOSPC cases show whose helper ran by its
# message. The libvirt-use-iohelper and meson install cases do not run.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/libvirt-lib.sh"

RAM_MIB=${IOH_LV_RAM_MIB:-128}
BLOB_MIB=${IOH_LV_BLOB_MIB:-64}         # random data at 16 MiB of guest RAM (SeaBIOS uses the top)
SMALL_MIB=32                            # the file system that runs out of space

. "$HERE/../common/tap.sh"

INSTALLED=${IOH_LV_INSTALLED:-}
HELPER=${INSTALLED:-${IOHELPER_PATH:-}}
[ -n "$HELPER" ] && [ -x "$HELPER" ] || skip_all "IOHELPER_PATH is not set to the built iohelper"
why=$(lv_missing)
[ -z "$why" ] || skip_all "$why"

lv_enter_namespace "$0" "$@"

base=${IOH_TEST_DIR:-$(dirname "$HELPER")/../test-tmp}
mkdir -p "$base" || bail "cannot create $base"
WORK=$(mktemp -d "$base/libvirt.XXXXXX") || bail "mktemp in $base failed"
WORK=$(cd "$WORK" && pwd)
RECORD=$WORK/record.jsonl
DOM=iohtest-$$
SMALL_TMPFS=$WORK/small-tmpfs
SMALL_EXT4=$WORK/small-ext4
LOOP_FILE=$WORK/small.ext4

finish() {
    local rc=$?
    trap - EXIT INT TERM HUP PIPE
    lv_cleanup
    umount "$SMALL_EXT4" 2>/dev/null
    umount "$SMALL_TMPFS" 2>/dev/null
    if [ "$rc" != 0 ] || [ "$nfail" != 0 ]; then
        lv_log_tail   # libvirtd's log in the test log when something went wrong
    fi
    rm -rf "$WORK"
    exit "$rc"
}
lv_on_exit finish

lv_setup "$WORK" "$HELPER" "$RECORD" || bail "setting up libvirtd's private directories failed"
lv_log "work dir $WORK, domain $DOM"
t0=$SECONDS
lv_start 120 || bail "libvirtd did not start"
ok "private libvirtd answers on $LV_SOCKDIR/libvirt-sock ($((SECONDS - t0)) s)"
if [ -n "$INSTALLED" ]; then
    lv_use_helper none || bail "cannot unmount our wrapper from $LV_STOCK_HELPER"
    check "installed: $LV_STOCK_HELPER leads to $INSTALLED, nothing mounted over it" \
        eval '[ "$(readlink -f $LV_STOCK_HELPER)" = "$INSTALLED" ] &&
              ! grep -q " $LV_STOCK_HELPER " /proc/self/mountinfo'
fi

head -c "$((BLOB_MIB << 20))" /dev/urandom >"$WORK/blob.bin" || bail "cannot write random data"
lv_domain_xml "$DOM" "$RAM_MIB" "$WORK/blob.bin" >"$WORK/domain.xml"
if lv_virsh create "$WORK/domain.xml" >"$WORK/out" 2>&1; then
    ok "transient domain with $RAM_MIB MiB RAM ($BLOB_MIB MiB random) runs"
else
    sed 's/^/# /' "$WORK/out"
    bail "virsh create failed"
fi

state() {
    lv_virsh domstate "$DOM" 2>/dev/null | head -n 1
}
record_lines() {
    if [ -f "$RECORD" ]; then
        wc -l <"$RECORD"
    else
        echo 0
    fi
}
# record_is N DIRECTION MODE PATH OK: line N of the record says our helper did that copy
record_is() {
    local line
    line=$(sed -n "${1}p" "$RECORD" 2>/dev/null)
    if [ -z "$line" ]; then
        echo "# no record line $1" >&2
        return 1
    fi
    echo "$line" | jq -e --arg d "$2" --arg m "$3" --arg p "$4" --argjson ok "$5" \
        --argjson min "$((BLOB_MIB << 20))" \
        '.form == "libvirt" and .direction == $d and .mode == $m and .path == $p and
         .ok == $ok and (if $ok then .bytes >= $min else true end)' >/dev/null ||
        { echo "# record line $1: $line (wanted $2 $3 ok=$5)" >&2; return 1; }
}

# Which helper libvirtd spawns: ours leaves a record line per copy, stock none.
EXPECT=ours
TAGPFX=
if [ -n "$INSTALLED" ]; then
    EXPECT=installed
    TAGPFX="installed: "
fi

# cycle SAVE_FLAG RESTORE_FLAG: suspend, dump RAM, save, restore, dump, compare, resume.
# The guest is paused across the cycle so its RAM before and after must be identical.
cycle() {
    local sflag=$1 rflag=$2 img=$WORK/$DOM.save n0 smode rdesc
    smode=buffered
    [ -n "$sflag" ] && smode=direct
    rdesc="restore${rflag:+ $rflag}"
    local tag="$TAGPFX""save${sflag:+ $sflag} / $rdesc"

    [ "$(state)" = running ] || lv_virsh resume "$DOM" >/dev/null 2>&1
    lv_virsh suspend "$DOM" >/dev/null &&
        lv_pmemsave "$DOM" "$WORK/before.ram" "$((RAM_MIB << 20))" ||
        { not_ok "$tag: suspend and read guest RAM"; return; }

    n0=$(record_lines)
    if lv_virsh save $sflag "$DOM" "$img" >"$WORK/out" 2>&1; then
        ok "$tag: virsh save${sflag:+ $sflag} succeeds"
    else
        sed 's/^/# /' "$WORK/out"
        not_ok "$tag: virsh save${sflag:+ $sflag} succeeds"
        rm -f "$WORK/before.ram"
        return
    fi
    check "$tag: domain is gone after save" test -z "$(state)"
    if [ "$EXPECT" = ours ]; then
        check "$tag: our helper did the save, $smode (record)" \
            eval '[ "$(record_lines)" = $((n0 + 1)) ] && record_is $((n0 + 1)) save $smode "$img" true'
    else
        check "$tag: the $EXPECT helper did the save (no record)" test "$(record_lines)" = "$n0"
    fi

    local saved_bytes
    saved_bytes=$(sed -n '$p' "$RECORD" 2>/dev/null | jq -r .bytes 2>/dev/null)
    n0=$(record_lines)
    if lv_virsh restore $rflag "$img" >"$WORK/out" 2>&1; then
        ok "$tag: virsh $rdesc succeeds"
    else
        sed 's/^/# /' "$WORK/out"
        not_ok "$tag: virsh $rdesc succeeds"
        rm -f "$WORK/before.ram" "$img"
        return
    fi
    if [ -n "$rflag" ] && [ "$EXPECT" != ours ]; then
        check "$tag: the $EXPECT helper did the restore (no record)" test "$(record_lines)" = "$n0"
    elif [ -n "$rflag" ]; then
        check "$tag: our helper did the restore, direct (record)" \
            eval '[ "$(record_lines)" = $((n0 + 1)) ] && record_is $((n0 + 1)) restore direct "$img" true'
        if [ "$EXPECT" = ours ]; then
            check "$tag: it restored as many bytes as were saved ($saved_bytes)" \
                eval '[ "$(sed -n "$((n0 + 1))p" "$RECORD" | jq -r .bytes)" = "$saved_bytes" ]'
        fi
    else
        # libvirt reads a plain restore itself: no helper runs, so no record.
        check "$tag: no helper runs for a plain restore" test "$(record_lines)" = "$n0"
    fi
    check "$tag: restored domain is paused as saved" test "$(state)" = paused
    if lv_pmemsave "$DOM" "$WORK/after.ram" "$((RAM_MIB << 20))"; then
        check "$tag: guest RAM after restore equals RAM before save, byte for byte" \
            cmp "$WORK/before.ram" "$WORK/after.ram"
        check "$tag: the random data is still at 16 MiB" \
            cmp -n "$((BLOB_MIB << 20))" -i "$((16 << 20)):0" "$WORK/after.ram" "$WORK/blob.bin"
    else
        not_ok "$tag: read guest RAM after restore"
    fi
    rm -f "$WORK/before.ram" "$WORK/after.ram" "$img"
    lv_virsh resume "$DOM" >/dev/null 2>&1
    sleep 0.5
    check "$tag: domain runs after resume" test "$(state)" = running
}

cycle "" ""
cycle --bypass-cache --bypass-cache
cycle "" --bypass-cache
cycle --bypass-cache ""

# fail_case SAVE_FLAG DIR DESC: a save into DIR, too small for the stream, must fail with
# our helper's message, leave the domain running and leave no partial file behind.
fail_case() {
    local sflag=$1 dir=$2 desc=$3 img=$2/$DOM.save n0 mode=buffered
    [ -n "$sflag" ] && mode=direct
    local tag="$TAGPFX""ENOSPC $desc, save${sflag:+ $sflag}"

    [ "$(state)" = running ] || lv_virsh resume "$DOM" >/dev/null 2>&1
    n0=$(record_lines)
    if lv_virsh save $sflag "$DOM" "$img" >"$WORK/out" 2>&1; then
        not_ok "$tag: virsh save fails"
    else
        ok "$tag: virsh save fails"
    fi
    sed 's/^/# virsh: /' "$WORK/out"
    # (the stock helper's message is "libvirt_iohelper: failure with ...")
    check "$tag: virsh shows our helper's message" \
        grep -q ": iohelper: failure with $img: .*No space left on device" "$WORK/out"
    if [ "$EXPECT" = ours ]; then
        check "$tag: our helper recorded the failed $mode save" \
            eval '[ "$(record_lines)" = $((n0 + 1)) ] && record_is $((n0 + 1)) save $mode "$img" false'
    fi
    check "$tag: domain keeps running" test "$(state)" = running
    check "$tag: the partial file was deleted" test ! -e "$img"
}

mkdir -p "$SMALL_TMPFS"
if mount -t tmpfs -o size=${SMALL_MIB}m,mode=0755 iohtest-small "$SMALL_TMPFS"; then
    fail_case "" "$SMALL_TMPFS" "on a ${SMALL_MIB} MiB tmpfs"
else
    not_ok "mount a ${SMALL_MIB} MiB tmpfs"
fi

# O_DIRECT wants a file system that takes it: a small ext4 on a loop device.
mkdir -p "$SMALL_EXT4"
if ! command -v mkfs.ext4 >/dev/null; then
    echo "ok $((ntest += 1)) # SKIP ENOSPC with --bypass-cache: mkfs.ext4 not installed (e2fsprogs)"
elif [ ! -e /dev/loop-control ]; then
    echo "ok $((ntest += 1)) # SKIP ENOSPC with --bypass-cache: no loop devices here"
elif truncate -s ${SMALL_MIB}M "$LOOP_FILE" && mkfs.ext4 -q -F -m 0 "$LOOP_FILE" &&
     mount -o loop "$LOOP_FILE" "$SMALL_EXT4"; then
    fail_case --bypass-cache "$SMALL_EXT4" "on a ${SMALL_MIB} MiB ext4"
else
    not_ok "make and mount a ${SMALL_MIB} MiB ext4 on a loop device"
fi

# After all that, the guest still saves and restores (nothing stuck in libvirtd).
cycle --bypass-cache --bypass-cache

finish_tap() {
    lv_log "record of our helper:"
    [ -f "$RECORD" ] && sed 's/^/#   /' "$RECORD" >&2
    lv_log "total $((SECONDS - t0)) s"
    echo "1..$ntest"
    [ "$nfail" = 0 ]
    exit
}
# The installed mode tests the system's helper as it is, not the routes below.
[ -z "$INSTALLED" ] || finish_tap

# The install path for users, for real: scripts/libvirt-use-iohelper (dpkg-divert and a
# symlink) on overlays of /var/lib/dpkg and /usr/lib/libvirt private to this namespace.
USE=$HERE/../../scripts/libvirt-use-iohelper
T=/usr/lib/libvirt/libvirt_iohelper
if ! command -v dpkg-divert >/dev/null; then
    echo "ok $((ntest += 1)) # SKIP libvirt-use-iohelper: no dpkg-divert (not Debian)"
elif ! lv_use_helper none || ! lv_overlay /var/lib/dpkg || ! lv_overlay /usr/lib/libvirt; then
    not_ok "overlay /var/lib/dpkg and /usr/lib/libvirt for libvirt-use-iohelper"
else
    TAGPFX="divert: "
    check "divert: libvirt-use-iohelper install" \
        "$USE" install --helper "$WORK/iohelper-wrapper"
    check "divert: libvirt_iohelper is a symlink to iohelper, stock one diverted" \
        eval '[ "$(readlink $T)" = "$WORK/iohelper-wrapper" ] &&
              cmp $T.distrib "$WORK/stock-iohelper" &&
              dpkg-divert --list $T | grep -q "diversion of $T to $T.distrib"'
    check "divert: install again changes nothing" \
        eval '"$USE" install --helper "$WORK/iohelper-wrapper" &&
              [ "$(readlink $T)" = "$WORK/iohelper-wrapper" ] && [ -e $T.distrib ]'
    check "divert: status reports it" eval '"$USE" status | grep -q -- "-> $WORK/iohelper-wrapper"'
    cycle --bypass-cache --bypass-cache
    check "divert: libvirt-use-iohelper uninstall" "$USE" uninstall
    check "divert: the stock helper is back, no diversion left" \
        eval '[ ! -L $T ] && cmp $T "$WORK/stock-iohelper" && [ ! -e $T.distrib ] &&
              [ -z "$(dpkg-divert --list $T)" ]'
    check "divert: uninstall again changes nothing" eval '"$USE" uninstall && cmp $T "$WORK/stock-iohelper"'

    # What a user does: meson install, then libvirt-use-iohelper install with no --helper
    # (it finds PREFIX/libexec/iohelper). The install goes to a DESTDIR, copied onto an
    # overlay of the prefix private to this namespace. No wrapper, so no record: the
    # message of a failed save shows whose helper ran (the stock one says
    # "libvirt_iohelper: failure with ...").
    BUILD=$(cd "$(dirname "$HELPER")/.." && pwd)
    PREFIX=$(meson introspect --buildoptions "$BUILD" 2>/dev/null |
             jq -r '.[] | select(.name == "prefix") | .value')
    LIBEXEC=$(meson introspect --buildoptions "$BUILD" 2>/dev/null |
              jq -r '.[] | select(.name == "libexecdir") | .value')
    case $LIBEXEC in /*) ;; *) LIBEXEC=$PREFIX/$LIBEXEC ;; esac
    if [ -z "$PREFIX" ] || [ ! -d "$PREFIX" ] || ! command -v meson >/dev/null; then
        echo "ok $((ntest += 1)) # SKIP meson install: no meson or no prefix '$PREFIX' here"
    elif ! meson install -C "$BUILD" --no-rebuild --quiet --destdir "$WORK/destdir" >"$WORK/out" 2>&1 ||
         ! lv_overlay "$PREFIX" || ! cp -a "$WORK/destdir$PREFIX/." "$PREFIX/"; then
        sed 's/^/# /' "$WORK/out"
        not_ok "installed: meson install into an overlay of $PREFIX"
    else
        TAGPFX="installed: "
        EXPECT=installed
        check "installed: meson install put iohelper into $LIBEXEC" \
            eval '[ -x "$LIBEXEC/iohelper" ] && "$LIBEXEC/iohelper" --version >/dev/null'
        if [ "$LIBEXEC" = /usr/local/libexec ] || [ "$LIBEXEC" = /usr/libexec ]; then
            check "installed: libvirt-use-iohelper install finds it" "$USE" install
        else
            check "installed: libvirt-use-iohelper install --helper $LIBEXEC/iohelper" \
                "$USE" install --helper "$LIBEXEC/iohelper"
        fi
        check "installed: libvirt_iohelper -> $LIBEXEC/iohelper" \
            test "$(readlink $T)" = "$LIBEXEC/iohelper"
        cycle --bypass-cache --bypass-cache
        img=$SMALL_TMPFS/$DOM.save
        [ "$(state)" = running ] || lv_virsh resume "$DOM" >/dev/null 2>&1
        lv_virsh save "$DOM" "$img" >"$WORK/out" 2>&1
        sed 's/^/# virsh: /' "$WORK/out"
        check "installed: a save that runs out of space shows the installed iohelper's message" \
            grep -q ": iohelper: failure with $img: .*No space left on device" "$WORK/out"
        check "installed: domain keeps running, no partial file" \
            eval '[ "$(state)" = running ] && [ ! -e "$img" ]'
        check "installed: libvirt-use-iohelper uninstall" \
            eval '"$USE" uninstall && cmp $T "$WORK/stock-iohelper"'
    fi

    TAGPFX="stock again: "
    EXPECT=stock
    cycle --bypass-cache --bypass-cache
    # ...and the message check above can tell: the stock helper's message differs.
    img=$SMALL_TMPFS/$DOM.save
    [ "$(state)" = running ] || lv_virsh resume "$DOM" >/dev/null 2>&1
    lv_virsh save "$DOM" "$img" >"$WORK/out" 2>&1
    sed 's/^/# virsh: /' "$WORK/out"
    check "stock again: out of space, virsh shows the stock helper's message, not ours" \
        eval 'grep -q "No space left on device" "$WORK/out" &&
              ! grep -q ": iohelper: failure with" "$WORK/out"'
fi

finish_tap
