#!/bin/bash
# libvirt-encrypt.sh - the host's age recipients (/etc/iohelper.conf) against a real
# libvirtd that spawns our iohelper as its libvirt_iohelper. Prints TAP.
#
# libvirt 9.0 and 11.3 restore an image without any helper unless --bypass-cache is
# given, and rewrite the image's first bytes after every save: an image our helper
# encrypted would be one libvirt cannot restore. So libvirt's own saves refuse the
# setting (docs/libvirt.md, "Encrypted saves and libvirt"). Checked here, for real:
# `virsh save` (plain and --bypass-cache) with recipients= or recipients-file= in the
# config fails with our one line, the domain keeps running, no image is left; restores are
# not concerned (an image saved without the setting restores with it in place, plain and
# --bypass-cache, RAM compared byte for byte). The private libvirtd and mount namespace of
# libvirt-lib.sh; libvirt clears the helper's environment, so the wrapper bound over
# libvirt_iohelper sets IOHELPER_CONF (a file in the test's folder: the host's
# /etc/iohelper.conf is never touched).

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/libvirt-lib.sh"
. "$HERE/../common/tap.sh"

RAM_MIB=64
BLOB_MIB=16
HELPER=${IOHELPER_PATH:-}
[ -n "$HELPER" ] && [ -x "$HELPER" ] || skip_all "IOHELPER_PATH is not set to the built iohelper"
why=$(lv_missing)
[ -z "$why" ] || skip_all "$why"

lv_enter_namespace "$0" "$@"

base=${IOH_TEST_DIR:-$(dirname "$HELPER")/../test-tmp}
mkdir -p "$base" || bail "cannot create $base"
WORK=$(mktemp -d "$base/libvirt-enc.XXXXXX") || bail "mktemp in $base failed"
WORK=$(cd "$WORK" && pwd)
RECORD=$WORK/record.jsonl
CONF=$WORK/iohelper.conf
DOM=iohenc-$$
IMG=$WORK/vm.save

finish() {
    local rc=$?
    trap - EXIT INT TERM HUP PIPE
    lv_cleanup
    if [ "$rc" != 0 ] || [ "$nfail" != 0 ]; then
        lv_log_tail
    fi
    rm -rf "$WORK"
    exit "$rc"
}
lv_on_exit finish

lv_setup "$WORK" "$HELPER" "$RECORD" || bail "setting up libvirtd's private directories failed"
# The wrapper libvirt spawns (bound over libvirt_iohelper): our config file, our record.
# Rewritten in place: the bind mount holds its inode.
cat >"$WORK/iohelper-wrapper" <<EOF
#!/bin/sh
exec env IOHELPER_CONF='$CONF' '$HELPER' --record='$RECORD' "\$@"
EOF
# A valid recipient (age's specification's example key): the save is refused before any
# key is used, so no age-keygen is needed (the newstack root has none).
RCP=age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p
echo "$RCP" >"$WORK/recipients"

# conf TEXT: the config file libvirt's helper reads from now on (0644: not group-writable)
conf() {
    printf '[iohelper]\n%s\n' "$1" >"$CONF" && chmod 0644 "$CONF"
}

lv_start 120 || bail "libvirtd did not start"
ok "private libvirtd answers"
head -c "$((BLOB_MIB << 20))" /dev/urandom >"$WORK/blob.bin" || bail "cannot write random data"
lv_domain_xml "$DOM" "$RAM_MIB" "$WORK/blob.bin" >"$WORK/domain.xml"
lv_virsh create "$WORK/domain.xml" >"$WORK/out" 2>&1 || { sed 's/^/# /' "$WORK/out"; bail "virsh create failed"; }
ok "transient domain runs"

state_is() {
    [ "$(lv_virsh domstate "$DOM" 2>/dev/null)" = "$1" ]
}

# refused DESC KEYLINE [VIRSH-FLAG]: the save fails with our line, nothing is left, the
# domain still runs.
refused() {
    local desc=$1 key=$2 flag=${3:-}
    conf "$key"
    rm -f "$IMG"
    if lv_virsh save $flag "$DOM" "$IMG" >"$WORK/out" 2>&1; then
        not_ok "$desc: virsh save succeeded"
        return
    fi
    sed 's/^/# virsh: /' "$WORK/out"
    check "$desc: virsh shows our one line naming the image, the config and why" \
        grep -q "iohelper: failure with $IMG: config file $CONF: ${key%%=*} is refused for libvirt's saves" "$WORK/out"
    check "$desc: no image left" test ! -e "$IMG"
    check "$desc: the domain keeps running" state_is running
}

refused "recipients=" "recipients=$RCP"
refused "recipients= --bypass-cache" "recipients=$RCP" --bypass-cache
refused "recipients-file=" "recipients-file=$WORK/recipients"

# A save without the setting; restores with it in place are not concerned.
conf "# no recipients"
lv_virsh qemu-monitor-command "$DOM" '{"execute":"stop"}' >/dev/null
lv_pmemsave "$DOM" "$WORK/before.ram" "$((RAM_MIB << 20))"
check "without recipients in the config, virsh save (of the paused domain) works" \
    lv_virsh save "$DOM" "$IMG"
conf "recipients=$RCP"
for flag in "" --bypass-cache; do
    if lv_virsh restore $flag --paused "$IMG" >"$WORK/out" 2>&1; then
        lv_pmemsave "$DOM" "$WORK/after.ram" "$((RAM_MIB << 20))"
        check "restore ${flag:-(no helper)} with recipients in the config: RAM byte-exact" \
            cmp -s "$WORK/before.ram" "$WORK/after.ram"
        lv_virsh destroy "$DOM" >/dev/null 2>&1
    else
        sed 's/^/# virsh: /' "$WORK/out"
        not_ok "restore ${flag:-(no helper)} with recipients in the config"
    fi
done
# a refused save is a usage error: nothing opened, nothing recorded
check "the record: one save, one restore (--bypass-cache), nothing encrypted" \
    eval '[ "$(jq -s "map(.direction) | join(\" \")" "$RECORD")" = "\"save restore\"" ] &&
          ! grep -q "\"encryption\"" "$RECORD"'

echo "1..$ntest"
[ "$nfail" = 0 ]
