#!/usr/bin/env bash
# tests/rbd/test-rbd-files.sh - the ceph.conf and keyring an RBD name makes the helper
# read, planted by another local user (helper/core/ioh-rbd-files.h): a conf= FIFO is
# refused at once (librados' own open blocked for ever), a conf or keyring that others
# may write is refused, and without conf= a ceph.conf in the working directory is never
# read (librados' default search read it: its log_file was written). scripts/ceph-cluster
# refuses a DIR another user could write. No cluster: every case ends before a monitor
# is reached (a start refused at once). TAP on stdout.
set -u

IOH=${IOHELPER_PATH:?IOHELPER_PATH not set}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../common/tap.sh
. "$top/tests/common/tap.sh"

work=$(mktemp -d "${IOH_TEST_DIR:-/var/tmp}/rbd-files.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
printf '[global]\nmon_host = 127.0.0.1:1\n' >"$work/ok.conf"
chmod 0644 "$work/ok.conf"

timeout 30 "$IOH" --stall-timeout=1 "rbd:p/i:conf=$work/ok.conf" /dev/null 2>"$work/err"
grep -q "cannot load librbd" "$work/err" && skip_all "librbd not installed (scripts/deps/rbd.txt)"

# refused NAME CAUSE: the helper ends within its timeout, exit 1, one line naming CAUSE
refused() {
    local rc
    timeout 30 "$IOH" --stall-timeout=1 "$1" /dev/null 2>"$work/err"
    rc=$?
    [ "$rc" = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && grep -q -- "$2" "$work/err" ||
        { echo "# exit $rc: $(head -3 "$work/err")"; return 1; }
}

mkfifo "$work/fifo.conf"
check "conf= a FIFO: refused, not opened blocking" \
    refused "rbd:p/i:conf=$work/fifo.conf" "a pipe, not a regular file"

cp "$work/ok.conf" "$work/open.conf" && chmod 0666 "$work/open.conf"
check "conf= writable by others: refused" \
    refused "rbd:p/i:conf=$work/open.conf" "writable by group or others"

printf '[client.admin]\n\tkey = AQBzbm90YXJlYWxrZXlub3RhcmVhbGtleQ==\n' >"$work/keyring"
chmod 0666 "$work/keyring"
check "keyring= writable by others: refused, the key never quoted" \
    refused "rbd:p/i:conf=$work/ok.conf:keyring=$work/keyring" "writable by group or others"
check "the refusal quotes no key" bash -c "! grep -q AQB '$work/err'"

if [ -e /etc/ceph/ceph.conf ]; then
    ok "# SKIP the working directory's ceph.conf: /etc/ceph/ceph.conf exists (read first)"
else
    mkdir "$work/cwd" "$work/home"
    printf '[global]\nmon_host = 127.0.0.1:1\nlog_to_file = true\nlog_file = %s\n' \
        "$work/planted.log" >"$work/cwd/ceph.conf"
    (cd "$work/cwd" && env -u CEPH_CONF -u CEPH_ARGS HOME="$work/home" \
        timeout 60 "$IOH" --stall-timeout=2 "rbd:p/i" /dev/null 2>"$work/err")
    check "without conf=: the working directory's ceph.conf is not read" \
        test ! -e "$work/planted.log"
fi

# --no-truncate (a region of a multi-channel image, docs/channels.md) never resizes the
# image: with --grow it is a usage error, before any cluster is reached
region_grow() {
    local rc
    timeout 30 "$IOH" --grow --no-truncate - "rbd:p/i:conf=$work/ok.conf" </dev/null \
        2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] &&
        grep -q -- "--grow and --no-truncate: a region of an RBD image never resizes" \
            "$work/err" || { echo "# exit $rc: $(head -3 "$work/err")"; return 1; }
}
check "--no-truncate with --grow: a usage error" region_grow

# --region bounds a save into an export or image; a file's region is bounded by the
# file-size limit: into a file, or on a restore, it is a usage error
region_file() {
    local rc
    timeout 30 "$IOH" --region=4M - "$work/region.img" </dev/null 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] && [ ! -e "$work/region.img" ] &&
        grep -q -- "--region is for a save into an NBD export or an RBD image" "$work/err" &&
        timeout 30 "$IOH" --region=4M "rbd:p/i:conf=$work/ok.conf" - >/dev/null 2>"$work/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q -- "--region is for a save" "$work/err" ||
        { echo "# exit $rc: $(head -3 "$work/err")"; return 1; }
}
check "--region into a file or on a restore: a usage error" region_file

# cluster_refused DIR WHY: scripts/ceph-cluster start refuses DIR at once, writing nothing
cluster_refused() {
    CEPH_CLUSTER_TIMEOUT=5 timeout 120 "$top/scripts/ceph-cluster" start "$1" \
        >/dev/null 2>"$work/err"
    [ "$?" = 1 ] && grep -q -- "$2" "$work/err" && [ -z "$(ls -A "$1")" ] ||
        { echo "# $(head -3 "$work/err")"; "$top/scripts/ceph-cluster" stop "$1" 2>/dev/null
          mkdir -p "$1"; return 1; }
}
mkdir -m 0777 "$work/open-dir"
check "ceph-cluster start: a DIR others can write is refused" \
    cluster_refused "$work/open-dir" "writable by group or others"
if [ "$(id -u)" = 0 ]; then
    mkdir "$work/their-dir" && chown nobody "$work/their-dir"
    check "ceph-cluster start: a DIR of another user is refused" \
        cluster_refused "$work/their-dir" "not a directory of ours"
fi

echo "1..$ntest"
[ "$nfail" = 0 ]
