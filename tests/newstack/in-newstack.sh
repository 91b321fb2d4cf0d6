#!/bin/bash
# in-newstack.sh CMD [ARG...] - run a TAP test inside the libvirt 11 / QEMU 10 root of
# scripts/newstack: makes (or reuses) the root first, then runs CMD there, in a private
# mount namespace, with the source tree and the build tree bound at their own paths.
#
# Skips (TAP "1..0 # SKIP") when this machine cannot make the root: not root, no
# debootstrap, no unshare. A root that cannot be made otherwise (mirror unreachable and
# nothing cached) is a failure, not a skip: CI installs everything this needs.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}

. "$HERE/newstack-lib.sh"
why=$(ns_missing "${IOHELPER_PATH:-}")
[ -z "$why" ] || skip_all "$why"
BUILD=$(cd "$(dirname "$IOHELPER_PATH")/.." && pwd)
t0=$SECONDS
if ! out=$("$TOP/scripts/newstack" setup 2>&1); then
    echo "$out" | sed 's/^/# /'
    echo "Bail out! scripts/newstack setup failed"
    exit 1
fi
echo "$out" | sed 's/^/# /'
echo "# newstack setup: $((SECONDS - t0)) s"

binds=()
case $BUILD/ in "$TOP"/*) ;; *) binds+=(--bind "$BUILD") ;; esac
exec "$TOP/scripts/newstack" run "${binds[@]}" -- "$@"
