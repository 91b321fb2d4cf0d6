#!/bin/bash
# deb-restore.sh - put the machine back as tests/deb/deb-packages.sh found it.
#
#   deb-restore.sh STATE            restore now (the suite's trap)
#   deb-restore.sh --after PID STATE   wait until PID is gone, then restore (the guard:
#                                   started with setsid, it outlives a suite killed by
#                                   meson's timeout or SIGKILL, which no trap survives)
#
# STATE is the suite's folder: it holds `dirty` while packages of ours may be installed,
# `stock-helper` (a copy of libvirt's stock libvirt_iohelper taken before anything was
# installed) and `lock`. Restoring purges every package of ours, removes a diversion of
# libvirt_iohelper left by iohelper-libvirt (or by the suite's libvirt-use-iohelper run),
# and checks the stock helper byte for byte (putting the copy back only if something went
# wrong). Idempotent; the two callers serialise on STATE/lock. Exits 0 when the machine
# is as it was.
set -u
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
export PATH

PACKAGES="iohelper-libvirt qemu-iohelper libiohwrap-dev libiohwrap0 iohelper"
TARGET=/usr/lib/libvirt/libvirt_iohelper

say() {
    echo "# deb-restore: $*" >&2
}

installed_packages() {
    local p
    for p in $PACKAGES; do
        case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) in
        "" | ?n*) ;;   # not installed (whatever was wanted)
        *) echo "$p" ;;
        esac
    done
}

purge_ours() {
    local left
    left=$(installed_packages | tr "\n" " ")
    [ -z "$left" ] && return 0
    say "purging $left"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 $left \
        >"$STATE/purge.log" 2>&1 ||
        dpkg --purge $left >>"$STATE/purge.log" 2>&1
    left=$(installed_packages | tr "\n" " ")
    [ -z "$left" ] && return 0
    sed 's/^/#   /' "$STATE/purge.log" >&2
    say "FAILED: still installed: $left"
    return 1
}

undivert() {
    [ "$(dpkg-divert --listpackage "$TARGET")" = iohelper-libvirt ] || return 0
    say "removing iohelper-libvirt's diversion of $TARGET, left by its postrm"
    [ -L "$TARGET" ] && rm -f "$TARGET"
    dpkg-divert --package iohelper-libvirt --rename --remove "$TARGET" >&2
}

# The suite's own scripts/libvirt-use-iohelper install (STATE/local-diversion says so).
undivert_local() {
    [ -e "$STATE/local-diversion" ] || return 0
    if [ "$(dpkg-divert --listpackage "$TARGET")" = LOCAL ] && [ -L "$TARGET" ]; then
        say "removing the local diversion of $TARGET the suite made"
        rm -f "$TARGET"
        dpkg-divert --local --rename --remove "$TARGET" >&2 || return 1
    fi
    rm -f "$STATE/local-diversion"
}

check_stock() {
    if [ -n "$(dpkg-divert --listpackage "$TARGET")" ]; then
        say "FAILED: $TARGET is still diverted: $(dpkg-divert --list "$TARGET")"
        return 1
    fi
    if [ ! -L "$TARGET" ] && cmp -s "$TARGET" "$STATE/stock-helper"; then
        return 0
    fi
    say "$TARGET is not the stock helper any more: putting the copy taken before back"
    rm -f "$TARGET" && cp -p "$STATE/stock-helper" "$TARGET" && cmp -s "$TARGET" "$STATE/stock-helper"
}

restore() {
    local rc=0
    [ -e "$STATE/dirty" ] || return 0
    purge_ours || rc=1
    undivert || rc=1
    undivert_local || rc=1
    check_stock || rc=1
    [ "$rc" = 0 ] && rm -f "$STATE/dirty"
    return "$rc"
}

if [ "${1:-}" = --after ]; then
    PID=$2
    STATE=$3
    while kill -0 "$PID" 2>/dev/null; do
        sleep 1
    done
else
    STATE=$1
fi
[ -d "$STATE" ] || exit 0
exec 9>>"$STATE/lock"
flock 9
restore || exit 1
# The guard cleans up after a suite that could not: its folder goes too.
[ "${1:-}" = --after ] && rm -rf "$STATE"
exit 0
