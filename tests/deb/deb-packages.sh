#!/bin/bash
# deb-packages.sh SOURCE_DIR BUILD_ROOT - the Debian packages, for real, on this machine.
# Prints TAP.
#
#  1. builds the packages from a copy of the tree in a folder of mode 0700, as a clone
#     under /root or in a Debian 12 home is (dpkg-buildpackage -us -uc -b, running the
#     suites debian/rules runs: those that run the helper as another user must cope with
#     a tree that user cannot reach), and runs lintian;
#  2. installs iohelper, libiohwrap0, libiohwrap-dev and qemu-iohelper, builds libwrap's
#     example against the installed -dev package and saves through the installed helper,
#     and saves/restores a real QEMU with the installed qemu-iohelper;
#  3. installs iohelper-libvirt (the stock libvirt_iohelper diverted, ours in its place),
#     reinstalls libvirt-daemon and checks that the diversion survived, then runs the
#     libvirt suite's save/restore cases against the installed helper (a private
#     libvirtd, nothing bound over the helper: tests/libvirt with IOH_LV_INSTALLED);
#  4. purges iohelper-libvirt and checks that the stock helper is back byte for byte with
#     no diversion left, purges the rest, and checks that dpkg's list of installed
#     packages is what it was.
#
# This changes host-wide state (packages, a dpkg diversion of libvirt's helper): meson runs
# it alone (is_parallel: false), the diversion lasts only for step 3, and a trap plus a
# guard process (tests/deb/deb-restore.sh, which outlives a SIGKILL) put everything back,
# pass or fail. Skips (with the reason) when not root, when a build tool or libvirt is
# missing, or when packages of ours or a diversion of libvirt_iohelper are already here.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$1" && pwd)
BUILD_ROOT=$(cd "$2" && pwd)
. "$HERE/../libvirt/libvirt-lib.sh"

PACKAGES="iohelper libiohwrap0 libiohwrap-dev qemu-iohelper iohelper-libvirt"
TARGET=/usr/lib/libvirt/libvirt_iohelper
LIBEXEC_HELPER=/usr/libexec/iohelper
declare -A DEB     # package name -> the .deb built

. "$HERE/../common/tap.sh"
# check DESCRIPTION COMMAND...: one TAP line from a command's status; its output as comments
check() {
    local desc=$1
    shift
    if "$@" >"$STATE/out" 2>&1; then
        ok "$desc"
    else
        not_ok "$desc"
    fi
    sed 's/^/# /' "$STATE/out"
}
# In a session of its own: meson's kill of the suite (a timeout) does not cut dpkg short;
# the guard waits for the dpkg lock and undoes what it did.
apt_get() {
    DEBIAN_FRONTEND=noninteractive setsid -w apt-get -y -q -o DPkg::Lock::Timeout=300 "$@" </dev/null
}

# Why this machine cannot run us, or nothing.
deb_missing() {
    local c p
    [ "$(id -u)" = 0 ] || { echo "needs root (installs packages)"; return; }
    for c in dpkg-buildpackage dh lintian apt-get dpkg-divert cc pkg-config; do
        command -v "$c" >/dev/null 2>&1 ||
            { echo "$c not installed (see scripts/deps/deb.txt)"; return; }
    done
    c=$(lv_missing)
    [ -z "$c" ] || { echo "$c"; return; }
    for p in $PACKAGES; do
        case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) in
        "" | ?n*) ;;   # not installed (whatever was wanted)
        *) echo "package $p is installed here already: this suite would replace it"; return ;;
        esac
    done
    p=$(dpkg-divert --listpackage "$TARGET")
    [ -z "$p" ] || { echo "$TARGET is diverted already (by $p)"; return; }
    [ -f "$TARGET" ] && [ ! -L "$TARGET" ] || echo "$TARGET is not a regular file"
}

dpkg_state() {
    dpkg-query -W -f='${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n' | sort
}

finish() {
    local rc=$?
    trap - EXIT INT TERM HUP PIPE
    if "$HERE/deb-restore.sh" "$STATE"; then
        rm -rf "$STATE"
    else
        echo "# the machine could not be put back: see above; $STATE kept"
        rc=1
    fi
    exit "$rc"
}

why=$(deb_missing)
[ -z "$why" ] || skip_all "$why"
base=${IOH_TEST_DIR:-/tmp}
mkdir -p "$base" || bail "cannot create $base"
STATE=$(mktemp -d "$base/deb.XXXXXX") || bail "mktemp in $base failed"
cp -p "$TARGET" "$STATE/stock-helper" || bail "cannot copy $TARGET"
dpkg_state >"$STATE/dpkg-before"
LIBVIRT_VERSION=$(dpkg-query -W -f='${Version}' libvirt-daemon)
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE
# The guard: its own session, so meson's kill of our process group does not reach it.
setsid "$HERE/deb-restore.sh" --after $$ "$STATE" </dev/null >>"$base/deb-guard.log" 2>&1 &
t_start=$SECONDS

# --- 1. build and lintian -------------------------------------------------------------

# A copy of the tree (what git knows of, with uncommitted changes), so that
# dpkg-buildpackage writes nothing into the source tree; in $STATE, which only root may
# enter (mktemp made it so; said again here, as the build depends on it).
copy_tree() {
    chmod 0700 "$STATE" && mkdir -p "$STATE/src" || return 1
    if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$SRC" ls-files -z --cached --others --exclude-standard |
            (cd "$SRC" && tar --null -T - -cf - 2>/dev/null) | tar -x -C "$STATE/src"
    else
        tar -C "$SRC" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -x -C "$STATE/src"
    fi
}

# What failed inside dpkg-buildpackage: the last lines of its log and, when a suite of
# debian/rules failed, the whole record of each failing test (meson's testlog).
build_failure_report() {
    local log
    tail -n 40 "$STATE/build.log"
    for log in "$STATE"/src/obj-*/meson-logs/testlog.txt; do
        [ -f "$log" ] || continue
        awk '/^=+ [0-9]+\/[0-9]+ =+$/ { show = 0; buf = "" }
             { buf = buf $0 "\n" }
             /^result: / && !/exit status 0|^result: +skipped/ { show = 1 }
             show { printf "%s", buf; buf = "" }' "$log" | head -n 200
    done
}

build_packages() {
    local t=$SECONDS
    if ! copy_tree || [ ! -f "$STATE/src/debian/control" ]; then
        bail "copying $SRC to $STATE/src failed"
    fi
    ok "copy of the tree in $STATE/src ($(find "$STATE/src" -type f | wc -l) files)"
    if (cd "$STATE/src" && unset MALLOC_PERTURB_ IOHELPER_PATH IOH_TEST_DIR &&
        DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
        >"$STATE/build.log" 2>&1; then
        ok "dpkg-buildpackage -us -uc -b under a folder of mode $(stat -c %a "$STATE"), its suites run ($((SECONDS - t)) s)"
        grep -E '^ *[0-9]+/[0-9]+ .* (OK|SKIP|FAIL|TIMEOUT) ' "$STATE/build.log" |
            sed 's/^/# build: /'
    else
        # On stderr too: a CI log shows a failing test's stderr, not its TAP comments.
        build_failure_report | tee /dev/stderr | sed 's/^/# build: /'
        bail "dpkg-buildpackage failed"
    fi
    CHANGES=$(ls "$STATE"/iohelper_*.changes)
    local p f missing=
    for p in $PACKAGES; do
        f=$(ls "$STATE/${p}"_*.deb 2>/dev/null)
        [ -n "$f" ] || missing="$missing $p"
        DEB[$p]=$f
    done
    check "it built the five packages:${missing:+ missing$missing}" test -z "$missing"
    for f in "$STATE"/*.deb; do
        dpkg-deb --show --showformat='# ${Package} ${Version} ${Architecture}: ' "$f"
        echo "$(stat -c %s "$f") bytes, installed $(dpkg-deb --show --showformat='${Installed-Size}' "$f") KiB"
    done
}

# lintian: no error and no warning (each accepted tag is overridden, with a reason, in
# debian/*.lintian-overrides); the summary is printed.
run_lintian() {
    local t=$SECONDS rc=0 e w i p o
    lintian --fail-on error,warning --pedantic --display-info --show-overrides \
        "$CHANGES" >"$STATE/lintian.out" 2>&1 || rc=$?
    sed 's/^/# lintian: /' "$STATE/lintian.out"
    e=$(grep -c '^E:' "$STATE/lintian.out")
    w=$(grep -c '^W:' "$STATE/lintian.out")
    i=$(grep -c '^I:' "$STATE/lintian.out")
    p=$(grep -c '^P:' "$STATE/lintian.out")
    o=$(grep -c '^O:' "$STATE/lintian.out")
    local summary="$e errors, $w warnings, $i info, $p pedantic, $o overridden"
    if [ "$rc" = 0 ] && [ "$e" = 0 ] && [ "$w" = 0 ]; then
        ok "lintian: $summary ($((SECONDS - t)) s)"
    else
        not_ok "lintian: $summary (exit $rc)"
    fi
}

# The symbols file lists exactly what the library exports, each under a version node of
# libwrap/iohwrap.map (the build checks the first half too: DPKG_GENSYMBOLS_CHECK_LEVEL=4).
check_symbols() {
    local nodes lib node
    nodes=$(sed -n 's/^\([A-Z0-9_.]*\) *{.*/\1/p' "$SRC/libwrap/iohwrap.map" | paste -sd '|')
    mkdir -p "$STATE/x" && dpkg-deb -x "${DEB[libiohwrap0]}" "$STATE/x" || return 1
    lib=$(find "$STATE/x" -name 'libiohwrap.so.0.*' | head -n 1)
    # nm: "A IOHWRAP_0.1" for the node, "T name@@IOHWRAP_0.1"; the symbols file: name@node
    nm -D --defined-only "$lib" |
        awk '$2 == "A" { print $3 "@" $3; next } { sub(/@@/, "@", $3); print $3 }' |
        sort >"$STATE/exported"
    sed -n 's/^ \([^ ]*\) .*/\1/p' "$SRC/debian/libiohwrap0.symbols" | sort >"$STATE/listed"
    echo "# version nodes of iohwrap.map: $nodes"
    diff "$STATE/listed" "$STATE/exported" | sed 's/^/# symbols vs exported: /'
    for node in ${nodes//|/ }; do
        grep -qx "$node@$node" "$STATE/listed" || return 1
    done
    cmp -s "$STATE/listed" "$STATE/exported" &&
        ! grep -Ev "@($nodes)\$" "$STATE/listed" &&
        grep -Ev "^($nodes)@" "$STATE/listed" | grep -q "^ioh_wrap_" &&
        ! grep -Ev "^($nodes)@" "$STATE/listed" | grep -v "^ioh_wrap_"
}

build_packages
run_lintian
check "debian/libiohwrap0.symbols lists exactly the exports of libiohwrap.so.0 (iohwrap.map)" \
    check_symbols

# --- 2. the tools, installed -------------------------------------------------------------

install_tools() {
    touch "$STATE/dirty"
    # The postinst (dh_installtmpfiles) must set the mode of a lease directory already
    # here (left by a helper run as root before), not only make a new one.
    [ -d /run/iohelper ] && [ "$(stat -c %u /run/iohelper)" = 0 ] && chmod 0755 /run/iohelper
    if apt_get install --no-install-recommends "${DEB[iohelper]}" "${DEB[libiohwrap0]}" \
        "${DEB[libiohwrap-dev]}" "${DEB[qemu-iohelper]}" >"$STATE/out" 2>&1; then
        ok "apt-get install ./iohelper_*.deb ./libiohwrap0_*.deb ./libiohwrap-dev_*.deb ./qemu-iohelper_*.deb"
    else
        sed 's/^/# /' "$STATE/out"
        bail "installing the packages failed"
    fi
    check "iohelper in $LIBEXEC_HELPER, /usr/bin/iohelper leads to it, both man pages" \
        eval '[ -x $LIBEXEC_HELPER ] && [ "$(readlink -f /usr/bin/iohelper)" = $LIBEXEC_HELPER ] &&
              iohelper --version | grep -q "^iohelper " &&
              [ -f /usr/share/man/man1/iohelper.1.gz ] && [ -f /usr/share/man/man1/qemu-iohelper.1.gz ]'
}

# The lease directory of the memory budget: the tmpfiles.d entry installed, applied by
# the postinst (sticky, world-writable, root's: helper/iohelper-tmpfiles.conf says why).
check_tmpfiles() {
    cat /usr/lib/tmpfiles.d/iohelper.conf &&
        dpkg -S /usr/lib/tmpfiles.d/iohelper.conf | grep -q '^iohelper:' &&
        grep -qx 'd /run/iohelper 1777 root root -' /usr/lib/tmpfiles.d/iohelper.conf &&
        grep -q 'systemd-tmpfiles.*--create iohelper.conf' /var/lib/dpkg/info/iohelper.postinst &&
        stat -c '%a %U %G' /run/iohelper | tee /dev/stderr | grep -qx '1777 root root'
}

# The installed helper run as nobody in libvirt's form (the O_DIRECT image opened for it
# as fd 1, the budget from a config file), fed 16 MiB, a pause of 0.8 s (a stall of 1 s
# would give the buffers back), 16 MiB more: meanwhile it holds a lease in /run/iohelper,
# owned by nobody; none is left at the end.
check_unprivileged_lease() {
    local img=$base/deb-nobody.save conf=$base/deb-nobody.conf runstat=$BUILD_ROOT/benchmarks/runstat
    local lease='' pid i rc
    [ -x "$runstat" ] || { echo "$runstat not built"; return 1; }
    printf '[iohelper]\nmemory-budget=64M\n' >"$conf" && chmod 644 "$conf" || return 1
    { head -c 16M /dev/urandom; sleep 0.8; head -c 16M /dev/urandom; } |
        "$runstat" -o /dev/null -1 "$img:wd" -- setpriv --reuid=nobody --regid=nogroup --clear-groups \
            env IOHELPER_CONF="$conf" $LIBEXEC_HELPER "$img" 1 &
    for ((i = 0; i < 150; i++)); do
        [ -z "$lease" ] || break
        sleep 0.02
        for lease in /run/iohelper/*.lease; do    # names of digits only
            pid=$(basename "$lease" .lease)
            [ "$(stat -c %u "$lease" 2>/dev/null)" = 65534 ] &&
                tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$img" && break
            lease=''
        done
    done
    [ -n "$lease" ] && echo "lease $lease ($(stat -c %U "$lease")): $(cat "$lease")"
    wait $!
    rc=$?
    echo "helper as nobody: exit $rc, $(stat -c %s "$img") bytes"
    [ -n "$lease" ] && [ "$rc" = 0 ] && [ "$(stat -c %s "$img")" = $((32 << 20)) ] &&
        [ ! -e "$lease" ] && rm -f "$img" "$conf"
}

# tests/libwrap's outside program, built against the installed -dev package as its users
# build (pkg-config), saves through the helper that the installed libiohwrap finds in
# /usr/libexec (IOHELPER_PATH unset).
check_libwrap() {
    local prog=$STATE/outside img=$base/deb-outside.save flags rc
    flags=$(pkg-config --cflags --libs iohwrap) || return 1
    echo "pkg-config --cflags --libs iohwrap: $flags"
    # shellcheck disable=SC2086
    cc -Wall -Wextra -Werror "$SRC/tests/libwrap/outside.c" $flags -o "$prog" || return 1
    ldd "$prog" | grep -E ' /(usr/)?lib/[^ ]*/libiohwrap\.so\.0 ' || { ldd "$prog"; return 1; }
    env -u IOHELPER_PATH "$prog" "$img" >"$STATE/outside.out" 2>&1
    rc=$?
    cat "$STATE/outside.out"
    [ "$rc" = 0 ] && grep -q "saved through helper: yes" "$STATE/outside.out" &&
        [ "$(cat "$img")" = "hello, libwrap" ] && rm -f "$img"
}

# qemu-glue's round trip test against the installed qemu-iohelper: a real QEMU saved and
# restored, its RAM checked, the helper found by the installed libiohwrap.
check_qemu_iohelper() {
    local rt=$BUILD_ROOT/tests/qemu-glue/test-qg-roundtrip
    [ -x "$rt" ] || { echo "$rt not built"; return 1; }
    command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing"; return 1; }
    env -u IOHELPER_PATH "$rt" /usr/bin/qemu-iohelper \
        -p /qemu/roundtrip/direct/paused -p /qemu/roundtrip/fadvise/live
}

install_tools
check "/usr/lib/tmpfiles.d/iohelper.conf installed and applied: /run/iohelper is 1777 root root" \
    check_tmpfiles
check "the installed helper run as nobody (libvirt's form) takes a lease in /run/iohelper" \
    check_unprivileged_lease
check "a program built with the installed libiohwrap-dev saves through $LIBEXEC_HELPER" \
    check_libwrap
t=$SECONDS
check "installed qemu-iohelper saves and restores a real QEMU (direct, fadvise live)" \
    check_qemu_iohelper
echo "# ($((SECONDS - t)) s)"

# --- 3. iohelper-libvirt: the diversion --------------------------------------------------

diverted_to_ours() {
    [ "$(dpkg-divert --listpackage $TARGET)" = iohelper-libvirt ] &&
        dpkg-divert --list $TARGET | grep -q "diversion of $TARGET to $TARGET.distrib by iohelper-libvirt" &&
        [ -L $TARGET ] && [ "$(readlink -f $TARGET)" = $LIBEXEC_HELPER ] &&
        cmp $TARGET.distrib "$STATE/stock-helper"
}

# The hand-made route (scripts/libvirt-use-iohelper: a local diversion) and the package
# leave each other alone: the package refuses to install over it.
check_local_route() {
    local use=$SRC/scripts/libvirt-use-iohelper
    touch "$STATE/local-diversion"
    check "libvirt-use-iohelper install (a local diversion)" \
        "$use" install --helper $LIBEXEC_HELPER
    apt_get install "${DEB[iohelper-libvirt]}" >"$STATE/apt.out" 2>&1
    check "iohelper-libvirt refuses to install over it, and says why" \
        eval 'case $(dpkg-query -W -f="\${db:Status-Status}" iohelper-libvirt 2>/dev/null) in
              "" | not-installed) ;; *) false ;; esac &&
              grep "diverted locally" "$STATE/apt.out" &&
              [ "$(dpkg-divert --listpackage $TARGET)" = LOCAL ]'
    check "libvirt-use-iohelper uninstall: the stock helper is back" \
        eval '"$use" uninstall && cmp $TARGET "$STATE/stock-helper" && [ -z "$(dpkg-divert --list $TARGET)" ]'
    rm -f "$STATE/local-diversion"
    # The failed install leaves it wanted but not installed ("in"): forget it.
    dpkg --purge iohelper-libvirt >/dev/null 2>&1
}

# ...and the script leaves the package's diversion alone.
check_script_refuses() {
    local use=$SRC/scripts/libvirt-use-iohelper
    check "libvirt-use-iohelper install/uninstall refuse the package's diversion; status names it" \
        eval '! "$use" install && ! "$use" uninstall && "$use" status | grep "package iohelper-libvirt" &&
              diverted_to_ours'
}

install_libvirt_package() {
    t_divert=$SECONDS
    if apt_get install "${DEB[iohelper-libvirt]}" >"$STATE/out" 2>&1; then
        ok "apt-get install ./iohelper-libvirt_*.deb"
    else
        sed 's/^/# /' "$STATE/out"
        bail "installing iohelper-libvirt failed"
    fi
    check "$TARGET is diverted to $TARGET.distrib (the stock helper) and leads to $LIBEXEC_HELPER" \
        diverted_to_ours
    dpkg-divert --list $TARGET | sed 's/^/# /'
}

# An upgrade of libvirt-daemon writes the stock helper to the diverted name, not over ours.
reinstall_libvirt() {
    local inode
    inode=$(stat -c %i $TARGET.distrib)
    if apt_get install --reinstall "libvirt-daemon=$LIBVIRT_VERSION" >"$STATE/out" 2>&1; then
        ok "apt-get install --reinstall libvirt-daemon=$LIBVIRT_VERSION"
    else
        sed 's/^/# /' "$STATE/out"
        not_ok "apt-get install --reinstall libvirt-daemon=$LIBVIRT_VERSION"
        return
    fi
    check "libvirt-daemon's reinstall wrote its helper to $TARGET.distrib (inode $inode -> $(stat -c %i $TARGET.distrib))" \
        test "$(stat -c %i $TARGET.distrib)" != "$inode"
    check "the diversion survived the reinstall: $TARGET still leads to $LIBEXEC_HELPER" \
        diverted_to_ours
}

# tests/libvirt's cases, against the helper the system's libvirt_iohelper now is. Its TAP
# lines are numbered into ours.
run_libvirt_cases() {
    local line t=$SECONDS
    IOH_LV_INSTALLED=$LIBEXEC_HELPER bash "$SRC/tests/libvirt/libvirt-save-restore.sh" \
        >"$STATE/libvirt.tap" 2>&1
    echo "# tests/libvirt in the installed mode: exit $?, $((SECONDS - t)) s"
    while IFS= read -r line; do
        case $line in
        "ok "*" # SKIP"*) echo "ok $((ntest += 1)) # SKIP libvirt: ${line#* # SKIP }" ;;
        "ok "*) ok "libvirt: ${line#*- }" ;;
        "not ok "*) not_ok "libvirt: ${line#*- }" ;;
        "1..0"*) not_ok "libvirt: skipped: $line" ;;
        "Bail out!"*) not_ok "libvirt: $line" ;;
        1..*) ;;
        *) echo "# $line" ;;
        esac
    done <"$STATE/libvirt.tap"
    grep -q '^1\.\.[1-9]' "$STATE/libvirt.tap" || not_ok "libvirt: the cases ran to the end"
}

purge_libvirt_package() {
    if apt_get purge iohelper-libvirt >"$STATE/out" 2>&1; then
        ok "apt-get purge iohelper-libvirt (the diversion lasted $((SECONDS - t_divert)) s)"
    else
        sed 's/^/# /' "$STATE/out"
        not_ok "apt-get purge iohelper-libvirt"
    fi
    check "the stock helper is back byte for byte, no diversion and no .distrib left" \
        eval '[ -f $TARGET ] && [ ! -L $TARGET ] && cmp $TARGET "$STATE/stock-helper" &&
              [ ! -e $TARGET.distrib ] && [ -z "$(dpkg-divert --list $TARGET)" ] &&
              [ -z "$(dpkg-divert --listpackage $TARGET)" ]'
}

check_local_route
install_libvirt_package
check_script_refuses
reinstall_libvirt
run_libvirt_cases
purge_libvirt_package

# --- 4. back as it was -------------------------------------------------------------------

if apt_get purge iohelper libiohwrap0 libiohwrap-dev qemu-iohelper >"$STATE/out" 2>&1; then
    ok "apt-get purge iohelper libiohwrap0 libiohwrap-dev qemu-iohelper"
else
    sed 's/^/# /' "$STATE/out"
    not_ok "apt-get purge iohelper libiohwrap0 libiohwrap-dev qemu-iohelper"
fi
"$HERE/deb-restore.sh" "$STATE" >"$STATE/restore.out" 2>&1
check "nothing was left for the restore to do" \
    eval 'cat "$STATE/restore.out"; [ ! -e "$STATE/dirty" ] && ! [ -s "$STATE/restore.out" ]'
check "dpkg's list of installed packages and versions is what it was before the suite" \
    diff "$STATE/dpkg-before" <(dpkg_state)
echo "# deb suite: $((SECONDS - t_start)) s"
echo "1..$ntest"
[ "$nfail" = 0 ]
