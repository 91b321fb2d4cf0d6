# shellcheck shell=bash
# newstack-lib.sh - sourced (bash) by what runs things in scripts/newstack's root:
# tests/newstack/in-newstack.sh, benchmarks/newstack and its smoke test.
#
#   ns_missing HELPER   prints why this machine cannot run the build of HELPER (the built
#                       iohelper) inside the root (empty: it can)

ns_missing() {
    local helper=$1
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (debootstrap, chroot, mount namespaces)"
    elif ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
        echo "debootstrap not installed (scripts/deps/newstack.txt)"
    elif ! unshare -m --propagation private true 2>/dev/null; then
        echo "cannot create a mount namespace here (unshare -m failed)"
    elif [ -z "$helper" ] || [ ! -x "$helper" ]; then
        echo "IOHELPER_PATH is not set to the built iohelper"
    # A sanitized build needs the host's ASan runtime, which the root lacks; the suite runs
    # in the main build (as the qemu and libvirt suites, .ci/run leaves it out of the ASan
    # pass).
    elif ldd "$helper" 2>/dev/null | grep -q 'libasan\|libubsan'; then
        echo "sanitized build: the newstack root has no ASan/UBSan runtime (run it in the main build)"
    fi
}
