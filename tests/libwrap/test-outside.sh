#!/bin/sh
# test-outside.sh BUILD_ROOT SOURCE_DIR EXAMPLE - TAP: libwrap as its users see it.
#  - the example program saves in each mode and reports the right bytes;
#  - `meson install --destdir` installs header, versioned .so and iohwrap.pc;
#  - an outside program compiles with `pkg-config --cflags --libs iohwrap` and runs.
set -u
build=$1
srcdir=$2
example=$3
work=$(mktemp -d "${IOH_TEST_DIR:-/tmp}/outside-XXXXXX")
trap 'rm -rf "$work"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
check() { what=$1; shift; if "$@" >"$work/out" 2>&1; then ok "$what"; else notok "$what"; sed 's/^/# /' "$work/out"; fi; }

echo "1..13"

for mode in none --direct --fadvise --pollable; do
    flag=$mode
    [ "$mode" = none ] && flag=
    if "$example" $flag --size=8 "$work/ex.save" >"$work/ex.out" 2>&1 &&
        grep -q "^example-save: saved 8388608 bytes to $work/ex.save in .*, 8388608 durable$" "$work/ex.out" &&
        [ "$(stat -c %s "$work/ex.save")" = 8388608 ]; then
        ok "example-save $mode"
    else
        notok "example-save $mode"
    fi
    sed 's/^/# /' "$work/ex.out"
done
if grep -q "no helper needed" "$work/ex.out"; then notok "example-save --pollable spawned a helper"; else ok "example-save --pollable spawned a helper"; fi

dest=$work/dest
check "meson install --destdir" meson install -C "$build" --no-rebuild --destdir "$dest" --quiet
pc=$(find "$dest" -name iohwrap.pc | head -n1)
lib=$(find "$dest" -name 'libiohwrap.so.0.*' | head -n1)
hdr=$(find "$dest" -path '*/iohwrap/iohwrap.h' | head -n1)
if [ -n "$pc" ] && [ -n "$lib" ] && [ -n "$hdr" ] && [ -L "$(dirname "$lib")/libiohwrap.so.0" ] &&
    [ -L "$(dirname "$lib")/libiohwrap.so" ]; then
    ok "installed $(echo "$pc" "$lib" "$hdr" | sed "s|$dest||g")"
else
    notok "installed header, versioned .so and .pc (got pc='$pc' lib='$lib' hdr='$hdr')"
fi
soname=$(objdump -p "$lib" 2>/dev/null | awk '/SONAME/ {print $2}')
if [ "$soname" = libiohwrap.so.0 ]; then ok "SONAME $soname"; else notok "SONAME is '$soname'"; fi

# The private core: in the directory the installed library's RUNPATH names, no header.
runpath=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
core=$(find "$dest$runpath" -maxdepth 1 -name 'libiohcore-*.so' 2>/dev/null | head -n1)
if [ -n "$runpath" ] && [ -n "$core" ] && [ -z "$(find "$dest" -name 'ioh-*.h')" ]; then
    ok "private core ${core#"$dest"} in libiohwrap's RUNPATH $runpath"
else
    notok "private core in libiohwrap's RUNPATH (RUNPATH '$runpath', core '$core')"
fi

# The installed .pc names the real prefix; a copy pointing into the destdir stands in
# for the installed tree (glib's own .pc stays the system's).
mkdir -p "$work/pc"
sed "s|^prefix=\(.*\)|prefix=$dest\1|" "$pc" >"$work/pc/iohwrap.pc"
sed 's/^/# iohwrap.pc: /' "$pc"
export PKG_CONFIG_PATH="$work/pc"
flags=$(pkg-config --cflags --libs iohwrap 2>"$work/pc.err")
if [ $? -eq 0 ] && echo "$flags" | grep -q -- "-liohwrap"; then
    ok "pkg-config --cflags --libs iohwrap: $flags"
else
    notok "pkg-config --cflags --libs iohwrap"; sed 's/^/# /' "$work/pc.err"
fi
# The installed libiohwrap finds the core (libiohcore-*.so, private) through its RUNPATH,
# the real prefix's: in the destdir, the loader and the linker are told where it is.
libpath="$(dirname "$lib"):$(dirname "$lib")/iohelper"
# A sanitized build (CI's second pass) installs a sanitized library: match it.
san=
if ldd "$lib" | grep -q libasan; then
    san="-fsanitize=address,undefined"
fi
# shellcheck disable=SC2086
check "cc outside.c \$(pkg-config --cflags --libs iohwrap)" \
    env LD_LIBRARY_PATH="$libpath" cc -Wall -Wextra -Werror $san "$srcdir/outside.c" $flags -o "$work/outside"
LD_LIBRARY_PATH="$libpath" "$work/outside" "$work/o.save" >"$work/o.out" 2>&1
if [ $? -eq 0 ] && grep -q "saved through helper: yes" "$work/o.out" &&
    [ "$(cat "$work/o.save")" = "hello, libwrap" ]; then
    ok "outside program runs against the installed library"
else
    notok "outside program runs against the installed library"
fi
sed 's/^/# /' "$work/o.out"
# The outside program must have loaded the installed copy, not the build tree's.
if LD_LIBRARY_PATH="$libpath" ldd "$work/outside" | grep -q "$dest"; then
    ok "outside program links the installed libiohwrap"
else
    notok "outside program links the installed libiohwrap"
fi
exit $fail
