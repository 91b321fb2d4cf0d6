#!/usr/bin/env bash
# tests/rbd/test-rbd.sh - iohelper with RBD images as IN or OUT, against a real Ceph
# cluster the test starts (scripts/ceph-cluster: one monitor, one manager, one BlueStore
# OSD, under the test's temporary directory) and tears down on any exit. Round trips are
# compared byte for byte; image sizes and the recorded length are read with the rbd CLI;
# every error case checks its one line, exit 1 (2 for a bad name: a usage error, as for a
# bad NBD URI) and that it ends within its timeout. The destructive cases (a full OSD, a
# killed OSD) run last. TAP on stdout.
set -u

IOH=${IOHELPER_PATH:?IOHELPER_PATH not set}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER=$top/scripts/ceph-cluster
tmp_root=${IOH_TEST_DIR:-/var/tmp}
# shellcheck source=../common/tap.sh
. "$top/tests/common/tap.sh"

for tool in ceph-mon ceph-mgr ceph-osd ceph rbd uuidgen; do
    command -v "$tool" >/dev/null || skip_all "$tool not installed (scripts/deps/rbd.txt)"
done

mkdir -p "$tmp_root"
work=$(mktemp -d "$tmp_root/rbd.XXXXXX")
cleanup() {
    "$CLUSTER" stop "$work/cluster" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

diag() { sed 's/^/# /' "$@"; }

conf=$("$CLUSTER" start "$work/cluster" 2>"$work/cluster.err") ||
    bail "the test cluster did not start: $(tail -1 "$work/cluster.err")"
C="conf=$conf"
ceph_() { timeout 60 ceph --conf "$conf" "$@"; }
rbd_() { timeout 60 rbd --conf "$conf" "$@"; }
img() { echo "rbd:$1:$C${2:+:$2}"; }

# save NAME FILE [OPTION...]: FILE through a pipe into rbd:rbd/NAME
save() {
    local name=$1 file=$2
    shift 2
    cat "$file" | "$IOH" "$@" - "$(img "rbd/$name")" 2>"$work/err" || { diag "$work/err"; return 1; }
}

# restore NAME OUT [OPTION...]: rbd:rbd/NAME through a pipe into OUT
restore() {
    local name=$1 out=$2
    shift 2
    "$IOH" "$@" "$(img "rbd/$name")" - 2>"$work/err" | cat >"$out"
    [ "${PIPESTATUS[0]}" = 0 ] || { diag "$work/err"; return 1; }
}

# roundtrip NAME SIZE [OPTION...]: SIZE random bytes saved and restored, compared; the
# created image holds exactly the stream, whose length the image records.
roundtrip() {
    local name=$1 size=$2
    shift 2
    head -c "$size" /dev/urandom >"$work/in"
    save "$name" "$work/in" "$@" && restore "$name" "$work/out" "$@" &&
        cmp -s "$work/in" "$work/out" &&
        [ "$(rbd_ image-meta get "rbd/$name" iohelper.length)" = "$size" ] &&
        [ "$(image_size "$name")" = "$size" ]
}

image_size() { rbd_ info "rbd/$1" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])'; }

# fails CODE PATTERN SECONDS CMD...: CMD exits CODE within SECONDS with one stderr line
# matching PATTERN.
fails() {
    local code=$1 pattern=$2 limit=$3 rc start=$SECONDS
    shift 3
    "$@" 2>"$work/err" >"$work/fail.out"
    rc=$?
    if [ "$rc" -ne "$code" ] || [ "$(wc -l <"$work/err")" -ne 1 ] ||
       ! grep -Eq -- "$pattern" "$work/err" || ((SECONDS - start > limit)); then
        echo "# exit $rc (expected $code) after $((SECONDS - start)) s (at most $limit), stderr:"
        diag "$work/err"
        return 1
    fi
}

# save_from FILE ARGS...: the helper reading FILE on stdin (for fails)
save_from() {
    local file=$1
    shift
    "$IOH" "$@" <"$file"
}

# ---- round trips --------------------------------------------------------------------
M=$((1 << 20))
for size in 0 1 $((4 * M - 1)) $((4 * M)) $((4 * M + 1)) $((9 * M + 7)); do
    check "round trip of $size bytes (object boundaries), created image of exactly that" \
        roundtrip "rt$size" "$size"
done
check "round trip with --requests=1 --request-size=1M" roundtrip rq1 $((6 * M + 3)) \
    --requests=1 --request-size=1M

# Zero-copy writes (helper/core/ioh-rbd-connect.c): librbd sends our buffers as they are,
# so a buffer refilled before its write completed would put the next object's bytes in
# the image. 2 requests over 12 objects of random bytes: each buffer is reused 6 times
# while the other is in flight.
check "round trip of 12 objects through 2 requests (zero-copy writes: no buffer reused in flight)" \
    roundtrip zc2 $((48 * M + 5)) --requests=2

# ... and they are on: librbd's own setting, read through the helper's admin socket
# (CEPH_ARGS) while it saves.
zero_copy_on() {
    local pid out
    mkfifo "$work/zc.fifo" || return 1
    CEPH_ARGS="--admin-socket=$work/zc.asok" "$IOH" - "$(img rbd/zcon)" <"$work/zc.fifo" 2>"$work/err" &
    pid=$!
    exec 7>"$work/zc.fifo"
    head -c "$M" /dev/urandom >&7
    for _ in $(seq 120); do [ -S "$work/zc.asok" ] && break; sleep 0.5; done
    out=$(timeout 30 ceph --admin-daemon "$work/zc.asok" config get rbd_disable_zero_copy_writes 2>&1)
    exec 7>&-
    wait "$pid" || { diag "$work/err"; return 1; }
    echo "$out" | grep -q '"rbd_disable_zero_copy_writes": "false"' || { echo "# $out"; return 1; }
}
check "writes are zero-copy (rbd_disable_zero_copy_writes=false on the helper's connection)" zero_copy_on

# --offset: the stream at an unaligned offset; the created image ends where it does
offset_rt() {
    head -c $((5 * M + 11)) /dev/urandom >"$work/in"
    save off "$work/in" --offset=1000001 && restore off "$work/out" --offset=1000001 &&
        cmp -s "$work/in" "$work/out" &&
        [ "$(image_size off)" = $((1000001 + 5 * M + 11)) ] &&
        [ "$(rbd_ image-meta get rbd/off iohelper.offset)" = 1000001 ]
}
check "--offset: saved and restored at an unaligned offset" offset_rt
check "--offset: a restore at another offset than the recorded one is refused" \
    fails 1 "read rbd:rbd/off: the stream recorded in the image starts at offset 1000001, not at 0" 30 \
    "$IOH" "$(img rbd/off)" -

compress_rt() {
    { head -c $((3 * M)) /dev/urandom; head -c $((8 * M)) /dev/zero; } >"$work/in"
    save cz "$work/in" --compress=zstd --checksum=xxh3 --stats=json &&
        grep -q "\"checksum\":\"$(xxhsum -H3 <"$work/in" | awk '{print $NF}' | sed 's/.*_//')" "$work/err" &&
        restore cz "$work/out" --decompress && cmp -s "$work/in" "$work/out" &&
        (($(rbd_ image-meta get rbd/cz iohelper.length) < 5 * M))
}
check "--compress and --checksum: the stored length recorded, the stream restored" compress_rt

# ---- sizes of existing images ---------------------------------------------------------
grow_cases() {
    head -c $((8 * M)) /dev/urandom >"$work/old"
    rbd_ import "$work/old" rbd/small >/dev/null 2>&1 || return 1
    head -c $((20 * M)) /dev/urandom >"$work/in"
    fails 1 "write rbd:rbd/small: the image is 8388608 bytes, the stream needs 20971520 \(--grow grows it\)" 30 \
        save_from "$work/in" --length=$((20 * M)) - "$(img rbd/small)" || return 1
    rbd_ export rbd/small - 2>/dev/null | cmp -s - "$work/old" || { echo "# image changed"; return 1; }
    fails 1 "write rbd:rbd/small: the image is 8388608 bytes, the stream needs .*--grow grows it" 30 \
        save_from "$work/in" - "$(img rbd/small)" || return 1
    save small "$work/in" --grow && [ "$(image_size small)" = $((20 * M)) ] &&
        restore small "$work/out" && cmp -s "$work/in" "$work/out"
}
check "an existing smaller image: refused before writing (--length), where it ends, grown with --grow" grow_cases

larger_case() {
    head -c $((32 * M)) /dev/urandom >"$work/old"
    rbd_ import "$work/old" rbd/large >/dev/null 2>&1 || return 1
    head -c $((5 * M + 3)) /dev/urandom >"$work/in"
    save large "$work/in" && [ "$(image_size large)" = $((32 * M)) ] &&
        restore large "$work/out" && cmp -s "$work/in" "$work/out"
}
check "an existing larger image keeps its size; a restore reads exactly the recorded stream" larger_case

# --region (one channel of a multi-channel image): a stream longer than its region fails
# before any byte past the region is sent; the image's bytes after it (the next
# region's) are exactly what they were, and so are its size and metadata.
region_overrun() {
    head -c $((16 * M)) /dev/urandom >"$work/old"
    rbd_ import "$work/old" rbd/regions >/dev/null 2>&1 || return 1
    head -c $((5 * M)) /dev/urandom >"$work/in"
    fails 1 "write rbd:rbd/regions: the stream passes the end of its region \(4194304 bytes from offset 4096\)" 30 \
        save_from "$work/in" --offset=4096 --region=$((4 * M)) - "$(img rbd/regions)" || return 1
    rbd_ export rbd/regions - 2>/dev/null >"$work/out"
    cmp -s <(tail -c +$((4096 + 4 * M + 1)) "$work/old") <(tail -c +$((4096 + 4 * M + 1)) "$work/out") ||
        { echo "# the bytes past the region changed"; return 1; }
    [ "$(image_size regions)" = $((16 * M)) ] && ! rbd_ image-meta get rbd/regions iohelper.length >/dev/null 2>&1
}
check "--region: a stream past its region fails before writing past it" region_overrun

check "an image without a recorded stream needs --length" \
    fails 1 "read rbd:rbd/plain: no stream recorded in the image .*give --length" 30 \
    bash -c "rbd --conf '$conf' create --size 4M rbd/plain && '$IOH' '$(img rbd/plain)' -"
check "... and is read with it" restore plain "$work/out" --length=4096

snapshot_case() {
    head -c $((2 * M)) /dev/urandom >"$work/v1"
    head -c $((3 * M)) /dev/urandom >"$work/v2"
    save snapimg "$work/v1" && rbd_ snap create rbd/snapimg@s1 >/dev/null 2>&1 &&
        save snapimg "$work/v2" --grow && restore snapimg@s1 "$work/out" --length=$((2 * M)) &&
        cmp -s "$work/v1" "$work/out" && restore snapimg "$work/out" &&
        cmp -s "$work/v2" "$work/out"
}
check "a snapshot restores the stream saved before it (--length)" snapshot_case
check "a snapshot without --length is refused (metadata is not snapshotted)" \
    fails 1 "read rbd:rbd/snapimg@s1: a snapshot does not keep the recorded length" 30 \
    "$IOH" "$(img rbd/snapimg@s1)" -
check "a snapshot as a save target is refused" \
    fails 1 "open rbd:rbd/snapimg@s1: a snapshot is read-only" 30 \
    save_from "$work/v1" - "$(img rbd/snapimg@s1)"

# ---- metadata another cluster user forged ---------------------------------------------
# iohelper.length/offset bound what a restore reads: any other value than a save's is
# refused in one line, never read past the image nor taken as another stream's bounds.
head -c $M /dev/urandom >"$work/fm" && save forged "$work/fm" ||
    not_ok "the image for the forged metadata cases"
forged() {   # forged KEY VALUE PATTERN: KEY set to VALUE, a restore refused with PATTERN
    rbd_ image-meta set -- rbd/forged "$1" "$2" >"$work/meta.err" 2>&1 &&
        fails 1 "$3" 30 "$IOH" "$(img rbd/forged)" - ||
        { diag "$work/meta.err"; return 1; }
}
check "a forged length past the image is refused" \
    forged iohelper.length $((M + 1)) "the image is $M bytes, the stream ends at $((M + 1))"
check "a forged huge length is refused" \
    forged iohelper.length 18446744073709551615 "the image is $M bytes"
for v in -1 12ab " 5" 99999999999999999999999; do
    check "a forged length '$v' is no recorded length" \
        forged iohelper.length "$v" "no stream recorded in the image"
done
check "the recorded length set back" bash -c 'rbd --conf "$0" image-meta set rbd/forged \
    iohelper.length "$1" >/dev/null 2>&1' "$conf" "$M"
check "a forged offset: the stream is not taken for one at another offset" \
    forged iohelper.offset 4096 "recorded in the image starts at offset 4096, not at 0"

# ---- names and permissions ----------------------------------------------------------
check "a missing image" fails 1 "open rbd:rbd/nosuch: the image does not exist in pool rbd" 30 \
    "$IOH" "$(img rbd/nosuch)" -
check "a missing pool" fails 1 "connect rbd:nopool/x: pool nopool does not exist" 30 \
    save_from /dev/null - "$(img nopool/x)"
check "a bad name is a usage error" fails 2 "not a valid RBD image name .*: empty image name" 5 \
    save_from /dev/null - "rbd:rbd/"
secret_refused() {
    fails 2 "key= would put the secret key on the command line" 5 \
        save_from /dev/null - "rbd:rbd/x:key=AQSECRETKEYSECRETKEY==" &&
        ! grep -q SECRETKEY "$work/err"
}
check "key= is refused and never printed" secret_refused

# least capabilities: profile rbd on one pool saves and restores; rbd-read-only cannot save
ceph_ auth get-or-create client.vmsave mon 'profile rbd' osd 'profile rbd pool=rbd' \
    -o "$work/vmsave.keyring" >/dev/null 2>&1
ceph_ auth get-or-create client.ro mon 'profile rbd' osd 'profile rbd-read-only pool=rbd' \
    -o "$work/ro.keyring" >/dev/null 2>&1
least_caps() {
    local name="rbd:rbd/capimg:$C:id=vmsave:keyring=$work/vmsave.keyring"
    head -c $((5 * M)) /dev/urandom >"$work/in"
    "$IOH" - "$name" <"$work/in" 2>"$work/err" || { diag "$work/err"; return 1; }
    "$IOH" "$name" - 2>"$work/err" >"$work/out" && cmp -s "$work/in" "$work/out"
}
check "a user with 'profile rbd pool=rbd' saves and restores" least_caps
read_only_user() {
    local name="rbd:rbd/capimg:$C:id=ro:keyring=$work/ro.keyring"
    local key
    key=$(sed -n 's/.*key = //p' "$work/ro.keyring")
    fails 1 "^iohelper: (open|write|write metadata of) rbd:rbd/capimg: Operation not permitted" 60 \
        save_from "$work/in" --stall-timeout=10 - "$name" &&
        ! grep -qF -- "$key" "$work/err" && ! grep -q "ro.keyring" "$work/err" &&
        "$IOH" "$name" - 2>"$work/err" | cmp -s - "$work/in"
}
check "a read-only user: a save refused with one line (no key), a restore works" read_only_user

record_name() {
    "$IOH" --record="$work/rec" - "$(img rbd/rec keyring="$work/cluster/keyring.client.admin")" \
        </dev/null 2>"$work/err" || { diag "$work/err"; return 1; }
    grep -q '"path":"rbd:rbd/rec"' "$work/rec" && ! grep -q keyring "$work/rec"
}
check "--record names the image without its options" record_name

# ---- a cluster that does not answer -----------------------------------------------------
unreachable() {
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    sed "s/^mon_host = .*/mon_host = [v2:127.0.0.1:$port]/" "$conf" >"$work/dead.conf"
    fails 1 "connect rbd:rbd/x: the cluster did not answer in 3 s" 20 \
        save_from /dev/null --stall-timeout=3 - "rbd:rbd/x:conf=$work/dead.conf"
}
check "monitors unreachable: the connection ends after --stall-timeout" unreachable

# pool_flag POOL FLAG [absent]: waits (60 s at most) until POOL has FLAG (or has it not)
pool_flag() {
    local want=${3:-present}
    for _ in $(seq 60); do
        if ceph_ osd dump 2>/dev/null | grep "^pool [0-9]* '$1'" | grep -qE "flags [^ ]*\b$2\b"; then
            [ "$want" = present ] && return 0
        else
            [ "$want" = absent ] && return 0
        fi
        sleep 1
    done
    echo "# pool $1: flag $2 not $want after 60 s"
    return 1
}

quota() {
    local rc
    ceph_ osd pool create q 8 8 >/dev/null 2>&1 && ceph_ osd pool application enable q rbd >/dev/null 2>&1 &&
        ceph_ osd pool set-quota q max_bytes $((8 * M)) >/dev/null 2>&1 || return 1
    head -c $((16 * M)) /dev/urandom >"$work/in"
    "$IOH" - "$(img q/fill)" <"$work/in" 2>/dev/null    # over the quota: seen later
    pool_flag q full_quota &&
        fails 1 "^iohelper: (open|write|flush) rbd:q/more: the pool q is at its quota \(the cluster completed nothing for 5 s\)" 30 \
            save_from "$work/in" --stall-timeout=5 - "$(img q/more)"
    rc=$?
    # a full pool keeps the cluster in HEALTH_WARN: gone, for the cases after this one
    ceph_ osd pool delete q q --yes-i-really-really-mean-it >/dev/null 2>&1
    return $rc
}
check "a pool at its quota: the save ends after --stall-timeout, naming the quota" quota

# a slow producer: 8 MiB, then (once $work/go exists) 16 MiB more
slow_producer() {
    head -c $((8 * M)) /dev/urandom
    for _ in $(seq 120); do [ -e "$work/go" ] && break; sleep 0.5; done
    head -c $((16 * M)) /dev/urandom
}

full_osd() {
    local pid rc start
    rm -f "$work/go"
    slow_producer | "$IOH" --stall-timeout=5 - "$(img rbd/fullsave)" 2>"$work/err" &
    pid=$!
    ceph_ osd set-nearfull-ratio 0.01 >/dev/null 2>&1 && ceph_ osd set-backfillfull-ratio 0.02 >/dev/null 2>&1 &&
        ceph_ osd set-full-ratio 0.03 >/dev/null 2>&1 && pool_flag rbd full
    start=$SECONDS
    touch "$work/go"
    wait $pid
    rc=$?
    ceph_ osd set-full-ratio 0.85 >/dev/null 2>&1
    ceph_ osd set-backfillfull-ratio 0.80 >/dev/null 2>&1
    ceph_ osd set-nearfull-ratio 0.75 >/dev/null 2>&1
    pool_flag rbd full absent
    [ $rc = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && ((SECONDS - start <= 30)) &&
        grep -Eq "^iohelper: (write|flush) rbd:rbd/fullsave: the pool rbd is full \(an OSD reached its full ratio\)" "$work/err" ||
        { echo "# exit $rc after $((SECONDS - start)) s"; diag "$work/err"; return 1; }
}
check "an OSD that fills during a save: the save ends after --stall-timeout, naming it" full_osd

# ---- an OSD killed ----------------------------------------------------------------------
osd_killed_save() {
    local pid rc start
    rm -f "$work/go"
    slow_producer | "$IOH" --stall-timeout=5 - "$(img rbd/killsave)" 2>"$work/err" &
    pid=$!
    sleep 1
    "$CLUSTER" kill-osd "$work/cluster"
    start=$SECONDS
    touch "$work/go"
    wait $pid
    rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && ((SECONDS - start <= 30)) &&
        grep -Eq "^iohelper: (write|flush) rbd:rbd/killsave: the cluster did not answer in 5 s" "$work/err" ||
        { echo "# exit $rc after $((SECONDS - start)) s"; diag "$work/err"; return 1; }
}
check "the OSD killed mid-save: exit 1 after --stall-timeout" osd_killed_save
check "... the OSD started again" "$CLUSTER" start-osd "$work/cluster"

osd_killed_restore() {
    local rc
    head -c $((64 * M)) /dev/urandom >"$work/in"
    save killrest "$work/in" || return 1
    rm -f "$work/go"
    { "$IOH" --stall-timeout=5 "$(img rbd/killrest)" - 2>"$work/err"; echo $? >"$work/rc"; } |
        { head -c $M >/dev/null; while [ ! -e "$work/go" ]; do sleep 0.2; done; cat >/dev/null; } &
    sleep 1
    "$CLUSTER" kill-osd "$work/cluster"
    start=$SECONDS
    touch "$work/go"
    wait
    rc=$(cat "$work/rc")
    [ "$rc" = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && ((SECONDS - start <= 30)) &&
        grep -Eq "^iohelper: read rbd:rbd/killrest: the cluster did not answer in 5 s" "$work/err" ||
        { echo "# exit $rc after $((SECONDS - start)) s"; diag "$work/err"; return 1; }
}
check "the OSD killed mid-restore: one line after --stall-timeout" osd_killed_restore

# A test that aborts removes its work folder without a stop: the watcher scripts/ceph-cluster
# start left behind ends the daemons (the OSD restarted above among them), never left running.
daemons_of() { pgrep -f -- "--conf $1/ceph.conf" || true; }
folder_removed() {
    local dir=$work/cluster i
    [ -n "$(daemons_of "$dir")" ] || { echo "# no daemon running before"; return 1; }
    rm -rf "$dir"
    for ((i = 0; i < 150; i++)); do
        [ -z "$(daemons_of "$dir")" ] && return 0
        sleep 0.2
    done
    echo "# still running 30 s after: $(daemons_of "$dir" | tr '\n' ' ')"
    return 1
}
check "the cluster's folder removed without a stop: its daemons end" folder_removed

echo "1..$ntest"
[ "$nfail" = 0 ]
