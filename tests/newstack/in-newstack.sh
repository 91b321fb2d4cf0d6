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

[ "$(id -u)" = 0 ] || skip_all "needs root (debootstrap, chroot, mount namespaces)"
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] ||
    skip_all "debootstrap not installed (scripts/deps/newstack.txt)"
unshare -m --propagation private true 2>/dev/null ||
    skip_all "cannot create a mount namespace here (unshare -m failed)"
[ -n "${IOHELPER_PATH:-}" ] && [ -x "$IOHELPER_PATH" ] ||
    skip_all "IOHELPER_PATH is not set to the built iohelper"

# A sanitized build needs the host's ASan runtime, which the root lacks; the suite runs in
# the main build (as the qemu and libvirt suites, .ci/run leaves it out of the ASan pass).
if ldd "$IOHELPER_PATH" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    skip_all "sanitized build: the newstack root has no ASan/UBSan runtime (run it in the main build)"
fi
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
