#!/usr/bin/env bash
# tests/nbd/test-nbd.sh - iohelper with NBD URIs as IN or OUT, against real servers the
# test starts: nbdkit (memory, file and eval plugins; stats, log, error, delay, multi-conn
# filters) on a unix socket and on TCP loopback, and qemu-nbd serving a qcow2 image.
# Round trips are compared byte for byte; request sizes, connections and flushes are
# read from the server's own stats and log files; docs/nbd.md's NBD example is run as
# pasted. TAP on stdout.
set -u

IOH=${IOHELPER_PATH:?IOHELPER_PATH not set}
tmp_root=${IOH_TEST_DIR:-/tmp}
mkdir -p "$tmp_root"
work=$(mktemp -d "$tmp_root/nbd.XXXXXX")
n=0
failed=0
declare -A srv_pid

cleanup() {
    for name in "${!srv_pid[@]}"; do
        kill -9 "${srv_pid[$name]}" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

for tool in nbdkit qemu-nbd qemu-img; do
    if ! command -v "$tool" >/dev/null; then
        echo "1..0 # SKIP $tool not installed (scripts/deps/nbd.txt)"
        exit 0
    fi
done

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
check() {
    local desc=$1
    shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
diag() { sed 's/^/# /' "$@"; }

# The forked server writes its pid file once it listens.
wait_pidfile() {
    for _ in $(seq 200); do
        if [ -s "$work/$1.pid" ]; then
            srv_pid[$1]=$(cat "$work/$1.pid")
            return 0
        fi
        sleep 0.05
    done
    echo "# server $1 did not start"
    return 1
}

# start_nbdkit NAME [nbdkit args...]: on $work/NAME.sock; waits until it serves.
start_nbdkit() {
    local name=$1
    shift
    rm -f "$work/$name.sock" "$work/$name.pid"
    nbdkit --unix "$work/$name.sock" -P "$work/$name.pid" "$@" || return 1
    wait_pidfile "$name"
}

# start_nbdkit_tcp NAME PORT [nbdkit args...]
start_nbdkit_tcp() {
    local name=$1 port=$2
    shift 2
    rm -f "$work/$name.pid"
    nbdkit -i 127.0.0.1 -p "$port" -P "$work/$name.pid" "$@" || return 1
    wait_pidfile "$name"
}

# stop NAME: ends the server and waits for it (its stats file is written at exit).
stop() {
    local pid=${srv_pid[$1]:-}
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null    # still in a delayed command: it has nothing to write
    unset "srv_pid[$1]"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

unix_uri() { echo "nbd+unix:///?socket=$work/$1.sock"; }

# roundtrip URI SIZE [OFFSET [OPTION...]]: save SIZE random bytes, restore them, compare.
# The stream side is a pipe, as from a hypervisor (a regular file there would take
# --offset too).
roundtrip() {
    local uri=$1 size=$2 off=${3:-}
    local opt=()
    [ -n "$off" ] && opt=(--offset="$off")
    [ $# -gt 3 ] && opt+=("${@:4}")
    head -c "$size" /dev/urandom >"$work/in"
    cat "$work/in" | "$IOH" "${opt[@]}" - "$uri" 2>"$work/err" ||
        { diag "$work/err"; return 1; }
    "$IOH" "${opt[@]}" --length="$size" "$uri" - 2>"$work/err" | cat >"$work/out"
    [ "${PIPESTATUS[0]}" = 0 ] || { diag "$work/err"; return 1; }
    cmp -s "$work/in" "$work/out"
}

# fails CODE PATTERN CMD...: CMD exits CODE with one stderr line matching PATTERN (its
# stdout, a restore's stream, goes to a file).
fails() {
    local code=$1 pattern=$2 rc
    shift 2
    "$@" 2>"$work/err" >"$work/fail.out"
    rc=$?
    if [ "$rc" -ne "$code" ] || [ "$(wc -l <"$work/err")" -ne 1 ] ||
       ! grep -Eq -- "$pattern" "$work/err"; then
        echo "# exit $rc (expected $code), stderr:"
        diag "$work/err"
        return 1
    fi
}

stat_ops() { # stat_ops FILE CMD: the op count of "CMD: N ops" in an nbdkit stats file
    sed -n "s/^$2: \([0-9]*\) ops.*/\1/p" "$1"
}

# max_in_flight LOG CMD: the most CMD commands (Write, Read) that nbdkit's log filter
# saw begun and not yet returned at once (the log filter outermost, before a delay)
max_in_flight() {
    awk -v c="$2" '$0 ~ " " c " id=.* \\.\\.\\.$" { if (++n > m) m = n }
                   $0 ~ " \\.\\.\\." c " id=" { n-- } END { print m + 0 }' "$1"
}

# conns_with LOG CMD: how many connections carried CMD commands
conns_with() {
    grep -a " $2 id=" "$1" | sed -n 's/.* connection=\([0-9]*\) .*/\1/p' | sort -u | wc -l
}

# compressed URI: a stream of random and zero parts saved with --compress=zstd (a
# transforming filter: the sink must get the filter's bytes, not the pipe's), checked with
# the zstd CLI, then restored with --decompress and --length = the stored bytes.
compressed() {
    local uri=$1 stored
    { head -c $((3 << 20)) /dev/urandom; head -c $((9 << 20)) /dev/zero; } >"$work/in"
    cat "$work/in" | "$IOH" --compress=zstd --stats=json - "$uri" 2>"$work/err" ||
        { diag "$work/err"; return 1; }
    stored=$(sed -n 's/.*"stored":\([0-9]*\).*/\1/p' "$work/err")
    [ -n "$stored" ] || { diag "$work/err"; return 1; }
    "$IOH" --length="$stored" "$uri" - 2>"$work/err" | zstd -q -dc | cmp -s - "$work/in" ||
        { echo "# the image is not the stream's zstd frames"; return 1; }
    "$IOH" --decompress --length="$stored" "$uri" - 2>"$work/err" | cat >"$work/out"
    [ "${PIPESTATUS[0]}" = 0 ] || { diag "$work/err"; return 1; }
    cmp -s "$work/in" "$work/out"
}

test_memory_unix() {
    start_nbdkit mem memory 128M || return
    check "memory, unix socket: --compress=zstd save, --decompress restore" \
        compressed "$(unix_uri mem)"
    for size in 0 1 4097 $((5 * 1024 * 1024 + 3)); do
        check "memory, unix socket: round trip of $size bytes" roundtrip "$(unix_uri mem)" "$size"
    done
    check "memory, unix socket: round trip of 3 MiB at --offset=1M+7" \
        roundtrip "$(unix_uri mem)" $((3 << 20)) $(((1 << 20) + 7))
    stop mem
}

test_memory_tcp() {
    local port
    port=$(free_port)
    start_nbdkit_tcp tcp "$port" memory 64M || return
    check "memory, TCP loopback: round trip of 4097 bytes" \
        roundtrip "nbd://127.0.0.1:$port/" 4097
    check "memory, TCP loopback: round trip of 9 MiB at --offset=64K" \
        roundtrip "nbd://127.0.0.1:$port/" $((9 << 20)) 65536
    stop tcp
}

test_file_plugin() {
    truncate -s 64M "$work/disk.img"
    start_nbdkit file file "$work/disk.img" || return
    check "file plugin: round trip of 7 MiB + 1" roundtrip "$(unix_uri file)" $(((7 << 20) + 1))
    stop file
    check "file plugin: the bytes are in the file" \
        cmp -s -n $(((7 << 20) + 1)) "$work/in" "$work/disk.img"
    # --offset lands the stream there in the export, not only as far as a restore
    # from the same offset can tell
    truncate -s 0 "$work/disk.img"
    truncate -s 64M "$work/disk.img"
    start_nbdkit file2 file "$work/disk.img" || return
    head -c $((3 << 20)) /dev/urandom >"$work/in"
    cat "$work/in" | "$IOH" --offset=$(((1 << 20) + 7)) - "$(unix_uri file2)"
    stop file2
    check "file plugin: --offset=1M+7: the stream is at that offset in the file" \
        cmp -s -n $((3 << 20)) "$work/in" "$work/disk.img" 0 $(((1 << 20) + 7))
    check "file plugin: --offset=1M+7: nothing written before it" \
        cmp -s -n $(((1 << 20) + 7)) /dev/zero "$work/disk.img"
    start_nbdkit file3 -r file "$work/disk.img" || return
    "$IOH" --offset=$(((1 << 20) + 7)) --length=3M "$(unix_uri file3)" - 2>"$work/err" |
        cmp -s - "$work/in"
    check "file plugin, read-only: a restore at --offset=1M+7 reads the bytes there" \
        [ "${PIPESTATUS[0]}${PIPESTATUS[1]}" = 00 ]
    stop file3
}

test_qemu_nbd() {
    qemu-img create -q -f qcow2 "$work/disk.qcow2" 64M || { not_ok "qemu-img create"; return; }
    rm -f "$work/q.sock"
    # -t: stays up after the save's connection closes, for the restore
    qemu-nbd -t -f qcow2 -k "$work/q.sock" --fork --pid-file "$work/q.pid" \
        "$work/disk.qcow2" || { not_ok "qemu-nbd started"; return; }
    wait_pidfile q || return
    check "qemu-nbd qcow2: round trip of 6 MiB + 5 at --offset=4097" \
        roundtrip "$(unix_uri q)" $(((6 << 20) + 5)) 4097
    check "qemu-nbd (no multi-conn): --connections=2 refused with a line naming the URI" \
        fails 1 "^iohelper: connect nbd\+unix:///\?socket=.*q\.sock: .*multi-conn" \
        "$IOH" --connections=2 - "$(unix_uri q)" </dev/null
    stop q
}

# nbd_json FILE KEY: the "nbd" member's KEY in the --stats=json line of FILE
nbd_json() {
    python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"): print(json.loads(l)["nbd"][sys.argv[2]])' "$1" "$2"
}

# disconnected_before_end LOG: a connection other than the first was closed while the
# first still wrote (a step that did not pay, undone during the copy)
disconnected_before_end() {
    awk '/ connection=[2-9][0-9]* Disconnect/ && !d { d = NR }
         / connection=1 Write id=/ { last = NR }
         END { exit !(d && last > d) }' "$1"
}

# slow_start FILE: FILE to stdout, its first 24 MiB at 20 MiB/s at most (a guest's stream
# starting slow, a producer starved), the rest at once
slow_start() {
    python3 -c 'import sys, time
d = open(sys.argv[1], "rb").read()
for o in range(0, 24 << 20, 1 << 20):
    sys.stdout.buffer.write(d[o:o + (1 << 20)]); sys.stdout.buffer.flush(); time.sleep(0.05)
sys.stdout.buffer.write(d[24 << 20:])' "$1"
}

# Without --connections/--requests the shape is measured (ioh-nbd-adapt.h) against the
# rate filter. Limited per connection (25 MB/s each), more connections pay twice over per
# doubling: the save and the restore grow to several; limited in total (50 MB/s), neither
# more requests nor more connections pay: one connection, the second one tried and closed.
# On a busy machine the filter's rate is not the only one: a window can be 15 % off
# either way (the server's threads starved, then its bucket drained), which is why a
# connection must gain IOH_NBD_ADAPT_GAIN_CONNS; and each step may take a second window,
# so the decision can need 6 windows of 8 MiB and 3 warm-ups of up to 4 MiB: the
# limited-in-total save is 96 MiB, for it to settle with windows to spare.
test_adaptive() {
    local f=$work/ad
    head -c $((96 << 20)) /dev/urandom >"$f.in"
    start_nbdkit adc --filter=log --filter=rate memory 128M connection-rate=200M \
        burstiness=0.1 logfile="$f.log" || return
    "$IOH" --stats=json - "$(unix_uri adc)" <"$f.in" 2>"$f.err"
    check "adaptive, a per-connection limit: the save grows to 4 connections or more" \
        [ "$(nbd_json "$f.err" connections)" -ge 4 -a "$(nbd_json "$f.err" adaptive)" = True \
          -a "$(nbd_json "$f.err" most_connections)" -ge "$(nbd_json "$f.err" connections)" ]
    check "log: its writes spread over 4 connections or more" \
        [ "$(conns_with "$f.log" Write)" -ge 4 ]
    : >"$f.log"
    "$IOH" --stats=json --length=96M "$(unix_uri adc)" - 2>"$f.err" | cmp -s - "$f.in"
    check "adaptive, a per-connection limit: the restore byte-exact, read ahead over 4 \
connections or more" [ "${PIPESTATUS[1]}" = 0 -a "$(conns_with "$f.log" Read)" -ge 4 ]
    diag "$f.err"
    slow_start "$f.in" | "$IOH" --stats=json - "$(unix_uri adc)" 2>"$f.err"
    check "adaptive, a producer slow at first (under one connection's limit), then fast: \
connections tried once the copy waits for the server, 2 or more" \
        [ "$(nbd_json "$f.err" connections)" -ge 2 ]
    diag "$f.err"
    stop adc
    start_nbdkit adt --filter=log --filter=rate memory 128M rate=400M burstiness=0.1 \
        logfile="$f.log2" || return
    cat "$f.in" | "$IOH" --stats=json - "$(unix_uri adt)" 2>"$f.err"
    check "adaptive, a limit in total: the save ends on 1 connection, saying why" \
        bash -c "[ '$(nbd_json "$f.err" connections)' = 1 ] &&
                 grep -q '2 connections .*did not pay' '$f.err'"
    check "log: the second connection was tried, and closed while the save went on" \
        disconnected_before_end "$f.log2"
    check "--stats=json: the most connections 2 (the one tried), 3 windows or more measured" \
        [ "$(nbd_json "$f.err" most_connections)" = 2 -a "$(nbd_json "$f.err" windows)" -ge 3 ]
    diag "$f.err"
    "$IOH" --length=96M "$(unix_uri adt)" - | cmp -s - "$f.in"
    check "adaptive, a limit in total: the restore byte-exact" [ "${PIPESTATUS[1]}" = 0 ]
    stop adt
    start_nbdkit adm memory 128M || return
    check "adaptive, unthrottled: round trip of 96 MiB + 1" \
        roundtrip "$(unix_uri adm)" $(((96 << 20) + 1))
    stop adm
}

# Request sizes, connections and flushes, from nbdkit's stats and log filters.
test_stats() {
    local f=$work/st
    start_nbdkit st --filter=log --filter=stats memory 64M statsfile="$f.stats" \
        logfile="$f.log" || return
    head -c $((4 << 20)) /dev/urandom | "$IOH" --connections=4 - "$(unix_uri st)"
    stop st
    check "stats: a 4 MiB save is 16 writes of 256 KiB" \
        [ "$(stat_ops "$f.stats" write)" = 16 -a "$(grep -c '18 bits: 100.0%' "$f.stats")" -ge 1 ]
    check "stats: multi-conn server, --connections=4: 4 connections" \
        [ "$(grep -c ' Connect ' "$f.log")" = 4 ]
    check "log: the writes spread over the 4 connections" [ "$(conns_with "$f.log" Write)" = 4 ]
    check "stats: multi-conn server: one flush" [ "$(stat_ops "$f.stats" flush)" = 1 ]

    start_nbdkit st2 --filter=log --filter=stats --filter=multi-conn memory 64M \
        multi-conn-mode=disable statsfile="$f.stats2" logfile="$f.log2" || return
    head -c $((4 << 20)) /dev/urandom |
        "$IOH" --request-size=1M --requests=2 - "$(unix_uri st2)"
    stop st2
    check "stats: --request-size=1M: 4 writes" [ "$(stat_ops "$f.stats2" write)" = 4 ]
    check "stats: server without multi-conn: 1 connection" \
        [ "$(grep -c ' Connect ' "$f.log2")" = 1 ]
    check "stats: server without multi-conn: one flush" [ "$(stat_ops "$f.stats2" flush)" = 1 ]

    # write-behind: a flush not waited for every 32 MiB, and the final one after the
    # last write has completed
    start_nbdkit st3 --filter=log --filter=stats memory 96M statsfile="$f.stats3" \
        logfile="$f.log3" || return
    head -c $((80 << 20)) /dev/urandom | "$IOH" - "$(unix_uri st3)"
    stop st3
    check "stats: an 80 MiB save flushes behind: 2 or 3 flushes" \
        [ "$(stat_ops "$f.stats3" flush)" -ge 2 -a "$(stat_ops "$f.stats3" flush)" -le 3 ]
    check "log: the last flush comes after the last write completed" \
        [ "$(grep -n ' Flush id=' "$f.log3" | tail -n 1 | cut -d: -f1)" -gt \
          "$(grep -n '\.\.\.Write id=' "$f.log3" | tail -n 1 | cut -d: -f1)" ]
    test_in_flight
}

# --requests is what the server has in flight: every command takes 20 ms (the delay
# filter, inside the log filter), so the log shows the requests begun and not returned.
test_in_flight() {
    local f=$work/fl
    start_nbdkit fl --filter=log --filter=delay memory 64M delay-write=20ms \
        delay-read=20ms logfile="$f.log" || return
    head -c $((4 << 20)) /dev/urandom >"$f.in"
    "$IOH" --connections=1 --requests=1 - "$(unix_uri fl)" <"$f.in"
    check "log: --requests=1, one connection: one write at a time" \
        [ "$(max_in_flight "$f.log" Write)" = 1 ]
    : >"$f.log"
    "$IOH" --connections=1 --requests=4 - "$(unix_uri fl)" <"$f.in"
    check "log: --requests=4 (aio): 4 writes in flight at the server" \
        [ "$(max_in_flight "$f.log" Write)" = 4 ]
    : >"$f.log"
    "$IOH" --connections=1 --requests=4 --length=4M "$(unix_uri fl)" - | cmp -s - "$f.in"
    check "log: a restore reads ahead, 4 reads in flight, delivered in order" \
        [ "${PIPESTATUS[1]}" = 0 -a "$(max_in_flight "$f.log" Read)" = 4 ]
    stop fl
    start_nbdkit fl2 --filter=log --filter=delay memory 64M delay-write=20ms \
        logfile="$f.log2" || return
    "$IOH" --stats=json --connections=2 --requests=3 - "$(unix_uri fl2)" <"$f.in" \
        2>"$f.err"
    check "log: --connections=2 --requests=3 obeyed: 2 connections, 6 writes in flight" \
        [ "$(grep -c ' Connect ' "$f.log2")" = 2 -a "$(max_in_flight "$f.log2" Write)" = 6 \
          -a "$(conns_with "$f.log2" Write)" = 2 ]
    check "--stats: the shape as given, not adaptive" \
        bash -c "[ '$(nbd_json "$f.err" adaptive)' = False ] &&
                 grep -q 'requests each (as given)' '$f.err'"
    stop fl2
}

# save_fails NAME OP PWRITE FLUSH DESC: a save to nbdkit's eval plugin whose pwrite and
# flush are the shell lines given fails with one line "OP URI: ... No space left".
save_fails() {
    start_nbdkit "$1" eval get_size='echo 16777216' can_write='exit 0' can_flush='exit 0' \
        pwrite="$3" flush="$4" || return
    check "$5: exit 1, one line naming the URI" \
        fails 1 "^iohelper: $2 nbd\+unix:///\?socket=.*$1.sock: .*No space left" \
        "$IOH" - "$(unix_uri "$1")" <"$work/1m"
    stop "$1"
}

test_errors() {
    local port
    port=$(free_port)
    check "restore without --length: usage error (exit 2)" \
        fails 2 "needs --length" "$IOH" "nbd://127.0.0.1:$port/" -
    check "bad URI: usage error (exit 2)" \
        fails 2 "not a valid NBD URI" "$IOH" - "nbd://127.0.0.1:xx/" </dev/null
    check "refused connection: exit 1, line names the URI" \
        fails 1 "^iohelper: connect nbd://127.0.0.1:$port/: .*refused" \
        "$IOH" - "nbd://127.0.0.1:$port/" </dev/null
    check "TLS secret not printed: the query is dropped, socket= kept" \
        fails 1 "^iohelper: connect nbd\+unix:///x\?socket=$work/none.sock: " \
        "$IOH" - "nbd+unix:///x?tls-psk-file=/secret/psk&socket=$work/none.sock" </dev/null
    if grep -q secret "$work/err"; then not_ok "no secret in the message"; else ok "no secret in the message"; fi

    start_nbdkit ro -r memory 16M || return
    check "read-only export: save refused" \
        fails 1 "^iohelper: open $(unix_uri ro | sed 's/[+?]/\\&/g'): the export is read-only" \
        "$IOH" - "$(unix_uri ro)" </dev/null
    stop ro

    start_nbdkit small --filter=stats memory 1M statsfile="$work/small.stats" || return
    check "too-small export, --length: refused before anything is sent" \
        fails 1 "^iohelper: export nbd\+unix:///\?socket=.*small.sock is 1048576 bytes, the stream needs more$" \
        "$IOH" --length=2M - "$(unix_uri small)" </dev/null
    check "too-small export, --offset past the end: refused" \
        fails 1 "is 1048576 bytes, the stream needs more$" \
        "$IOH" --offset=2M - "$(unix_uri small)" </dev/null
    check "too-small export: restore of more than it holds refused" \
        fails 1 "is 1048576 bytes, the stream needs more$" \
        "$IOH" --length=2M "$(unix_uri small)" -
    stop small
    check "too-small export: nothing written or read before those refusals" \
        [ -z "$(stat_ops "$work/small.stats" write)$(stat_ops "$work/small.stats" read)" ]
    start_nbdkit small2 memory 1M || return
    head -c $((2 << 20)) /dev/urandom >"$work/2m"
    check "too-small export, no --length: fails where the stream outgrows it" \
        fails 1 "is 1048576 bytes, the stream needs more$" "$IOH" - "$(unix_uri small2)" <"$work/2m"
    stop small2

    start_nbdkit werr --filter=error memory 16M error-pwrite-rate=1 error=EIO || return
    head -c $((1 << 20)) /dev/urandom >"$work/1m"
    check "server write error: exit 1, one line naming the URI" \
        fails 1 "^iohelper: write nbd\+unix:///\?socket=.*werr.sock: .*Input/output error" \
        "$IOH" - "$(unix_uri werr)" <"$work/1m"
    stop werr

    start_nbdkit rerr --filter=error memory 16M error-pread-rate=1 error=EIO || return
    check "server read error: exit 1, one line naming the URI" \
        fails 1 "^iohelper: read nbd\+unix:///\?socket=.*rerr.sock: .*Input/output error" \
        "$IOH" --length=1M "$(unix_uri rerr)" -
    stop rerr

    # nbdkit 1.32's error filter has no flush rate: the eval plugin's flush fails instead
    save_fails ferr flush 'cat >/dev/null' 'echo "ENOSPC out of space" >&2; exit 1' \
        "server flush error (ENOSPC)"
    # the script reads the data first: exiting before nbdkit has written it all to its
    # stdin made nbdkit answer EIO (EPIPE) instead, about once in 40 runs
    save_fails wspc write 'cat >/dev/null; echo "ENOSPC back end full" >&2; exit 1' 'exit 0' \
        "back end ENOSPC on write"

    # a write-behind flush (every 32 MiB) that fails, though the final one succeeds
    start_nbdkit fbeh eval get_size="echo $((64 << 20))" can_write='exit 0' \
        can_flush='exit 0' pwrite='cat >/dev/null' \
        flush="[ -e $work/fbeh.once ] && exit 0; touch $work/fbeh.once;
               echo 'ENOSPC out of space' >&2; exit 1" || return
    check "failed write-behind flush: exit 1, one line naming the URI" \
        fails 1 "^iohelper: flush nbd\+unix:///\?socket=.*fbeh.sock: .*No space left" \
        "$IOH" --request-size=4M - "$(unix_uri fbeh)" < <(head -c $((40 << 20)) /dev/zero)
    stop fbeh
}

# killed_during NAME OP WHEN DESC SHELL-LINE [URI [SHOWN]]: runs the line (URI, by default
# server NAME's socket, in $uri) in the background and kills server NAME with SIGKILL as
# soon as its log ($work/NAME.log, nbdkit's log filter) has a line matching WHEN: exit 1
# with one stderr line "iohelper: OP SHOWN: CAUSE" (SHOWN: the URI as printed, by default
# URI), the operation the copy was doing (write: a save,
# read: a restore, flush: its final flush) and why the connection ended (the server
# closed it, or libnbd's cause such as a reset), not another operation's name, nor the
# errno of the commands libnbd retired.
killed_during() {
    local name=$1 op=$2 when=$3 desc=$4 line=$5 pid rc re
    uri=${6:-$(unix_uri "$name")}
    re="^iohelper: $op $(printf '%s' "${7:-$uri}" | sed 's/[][\.*^$+?(){}|/]/\\&/g'): "
    re+="(the server closed the connection|connection to the server lost \(.+\))$"
    uri=$uri IOH=$IOH bash -c "$line" 2>"$work/kerr" >/dev/null &
    pid=$!
    for _ in $(seq 400); do
        grep -q -- "$when" "$work/$name.log" 2>/dev/null && break
        sleep 0.05
    done
    kill -9 "${srv_pid[$name]}"
    unset "srv_pid[$name]"
    wait "$pid"
    rc=$?
    check "$desc: exit 1, one line \"$op URI: <why the connection ended>\"" \
        [ "$rc" = 1 -a "$(wc -l <"$work/kerr")" = 1 -a "$(grep -Ec "$re" "$work/kerr")" = 1 ]
    [ "$rc" = 1 -a "$(grep -Ec "$re" "$work/kerr")" = 1 ] || { echo "# exit $rc"; diag "$work/kerr"; }
}

# The server dies while the helper works: never a success, and the line says what the
# helper was doing and why it stopped.
test_killed() {
    local port log=(--filter=log) flushing
    flushing=(eval can_write='exit 0' can_flush='exit 0' pwrite='cat >/dev/null' flush='sleep 3')
    start_nbdkit kill "${log[@]}" memory 64M logfile="$work/kill.log" || return
    killed_during kill write ' Write id=' "server killed mid-save" \
        '{ head -c 4M /dev/urandom; sleep 2; head -c 4M /dev/urandom; } | "$IOH" - "$uri"'
    start_nbdkit kill2 "${log[@]}" --filter=delay memory 64M delay-read=1 \
        logfile="$work/kill2.log" || return
    killed_during kill2 read ' Read id=' "server killed mid-restore" \
        '"$IOH" --length=32M "$uri" -'
    port=$(free_port)
    start_nbdkit_tcp kill3 "$port" "${log[@]}" memory 64M logfile="$work/kill3.log" || return
    killed_during kill3 write ' Write id=' "server killed mid-save, TCP, 4 connections" \
        '{ head -c 4M /dev/urandom; sleep 2; head -c 4M /dev/urandom; } |
         "$IOH" --connections=4 - "$uri"' "nbd://127.0.0.1:$port/"
    # killed once the write-behind flush (at 32 MiB, 3 s long) has begun, the stream not
    # yet at its end
    start_nbdkit kill4 "${log[@]}" "${flushing[@]}" get_size="echo $((96 << 20))" \
        logfile="$work/kill4.log" || return
    killed_during kill4 write ' Flush id=' "server killed mid-save, a write-behind flush in flight" \
        '{ head -c 40M /dev/zero; sleep 2; head -c 8M /dev/zero; } | "$IOH" - "$uri"'
    start_nbdkit kill5 "${log[@]}" "${flushing[@]}" get_size="echo $((16 << 20))" \
        logfile="$work/kill5.log" || return
    killed_during kill5 flush ' Flush id=' "server killed during the final flush" \
        'head -c 1M /dev/zero | "$IOH" - "$uri"'
    if [ -s "$work/psk" ]; then     # test_tls made a key: the line keeps it out
        start_nbdkit kill6 "${log[@]}" --tls=require --tls-psk="$work/psk" memory 64M \
            logfile="$work/kill6.log" || return
        killed_during kill6 write ' Write id=' "TLS server killed mid-save (no key file shown)" \
            '{ head -c 4M /dev/urandom; sleep 2; head -c 4M /dev/urandom; } | "$IOH" - "$uri"' \
            "nbds+unix://alice@/?tls-psk-file=$work/psk&socket=$work/kill6.sock" \
            "nbds+unix:///?socket=$work/kill6.sock"
    fi
}

# TLS with a pre-shared key (nbds+unix://USER@/?socket=...&tls-psk-file=...): a round
# trip, and a failed handshake whose line names the URI without the key file.
test_tls() {
    if ! nbdkit --dump-config | grep -qx 'tls=yes'; then
        ok "# SKIP nbdkit without TLS"
        return
    fi
    echo "alice:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$work/psk"
    echo "alice:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$work/wrongpsk"
    chmod 600 "$work/psk" "$work/wrongpsk"
    start_nbdkit tls --tls=require --tls-psk="$work/psk" memory 32M || return
    check "TLS (PSK): round trip of 3 MiB + 1 over 4 connections" \
        roundtrip "nbds+unix://alice@/?socket=$work/tls.sock&tls-psk-file=$work/psk" \
        $(((3 << 20) + 1)) 0 --connections=4
    check "TLS with a wrong key: exit 1, the line names the URI without the key file" \
        fails 1 "^iohelper: connect nbds\+unix:///\?socket=.*tls.sock: " \
        "$IOH" - "nbds+unix://alice@/?tls-psk-file=$work/wrongpsk&socket=$work/tls.sock" \
        <"$work/psk"
    if grep -q psk "$work/err"; then not_ok "no key file in the line"; else ok "no key file in the line"; fi
    stop tls
    local port
    port=$(free_port)
    start_nbdkit_tcp tlstcp "$port" --tls=require --tls-psk="$work/psk" memory 32M || return
    check "TLS (PSK) over TCP loopback, nbds://: round trip of 2 MiB + 3" \
        roundtrip "nbds://alice@127.0.0.1:$port/?tls-psk-file=$work/psk" $(((2 << 20) + 3))
    check "nbd:// (no TLS) to a server that requires it: exit 1, a line naming the URI" \
        fails 1 "^iohelper: connect nbd://127.0.0.1:$port/: " "$IOH" - "nbd://127.0.0.1:$port/" \
        <"$work/psk"
    stop tlstcp
}

# A server that stops answering (nbdkit's delay filter, 30 s per command) fails the copy
# after --stall-timeout, with a line naming the URI.
test_stall() {
    start_nbdkit stw --filter=delay memory 64M delay-write=30 || return
    check "stalled server, save: --stall-timeout=1 fails it, one line naming the URI" \
        fails 1 "^iohelper: write nbd\+unix:///\?socket=.*stw.sock: the server sent nothing for 1 s" \
        timeout 20 "$IOH" --stall-timeout=1 - "$(unix_uri stw)" <"$work/1m"
    stop stw
    start_nbdkit str --filter=delay memory 64M delay-read=30 || return
    check "stalled server, restore: --stall-timeout=1 fails it, one line naming the URI" \
        fails 1 "^iohelper: read nbd\+unix:///\?socket=.*str.sock: the server sent nothing for 1 s" \
        timeout 20 "$IOH" --stall-timeout=1 --length=1M "$(unix_uri str)" -
    stop str
}

# The end of a save is bounded too. A server whose flush never answers (nbdkit's eval
# plugin, 60 s per flush): the last flush fails after --stall-timeout (it waited for the
# answer, --stall-timeout or not). A server that keeps its end open after NBD_CMD_DISC
# (nbdkit's delay filter, delay-close): the helper exits once the save is flushed (it
# waited for the server to close each connection, one after the other).
test_end_bounded() {
    start_nbdkit mfl eval get_size='echo 16777216' can_write='exit 0' can_flush='exit 0' \
        pwrite='cat >/dev/null' pread='head -c $3 /dev/zero' flush='sleep 60' || return
    check "flush never answered: --stall-timeout=1 fails the save, one line naming the URI" \
        fails 1 "^iohelper: flush nbd\+unix:///\?socket=.*mfl.sock: the server did not answer in 1 s$" \
        timeout 40 "$IOH" --stall-timeout=1 - "$(unix_uri mfl)" <"$work/1m"
    stop mfl
    start_nbdkit dcl --filter=delay memory 64M delay-close=60 || return
    check "server slow to close after NBD_CMD_DISC: the save exits 0 without waiting for it" \
        timeout 40 "$IOH" --stall-timeout=1 - "$(unix_uri dcl)" <"$work/1m"
    check "server slow to close, no --stall-timeout: exit 0 without waiting" \
        timeout 40 "$IOH" --connections=1 - "$(unix_uri dcl)" <"$work/1m"
    stop dcl
}

# docs/nbd.md's worked example (the sh block after "Paste-able:"), run as a user would
# paste it, with /tmp/ turned into this test's directory.
test_readme() {
    local doc src
    src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    doc=$src/../../docs/nbd.md
    mkdir -p "$work/readme"
    sed -n '/Paste-able:/,/^```$/p' "$doc" |
        sed -n '/^```sh$/,/^```$/{/^```/d;p}' | sed "s|/tmp/|$work/readme/|g" >"$work/readme.sh"
    check "docs/nbd.md: the NBD example is there (nbdkit, a save, a restore)" \
        [ "$(grep -c 'nbdkit --unix\|iohelper ' "$work/readme.sh")" -ge 3 ]
    PATH="$(dirname "$IOH"):$PATH" bash -e "$work/readme.sh" >"$work/readme.out" 2>&1
    check "docs/nbd.md: the NBD example runs as pasted and prints 'same'" \
        grep -qx same "$work/readme.out"
    grep -qx same "$work/readme.out" || diag "$work/readme.out"
    for pidf in "$work"/readme/*.pid; do    # the example stopped early: its server too
        [ -s "$pidf" ] && kill "$(cat "$pidf")" 2>/dev/null
    done
}

# A server that does not advertise flush (nbdkit's eval plugin without a flush method):
# a save is refused before anything is sent, one line naming the URI; a restore reads.
test_no_flush() {
    start_nbdkit nofl --filter=stats eval get_size='echo 16777216' can_write='exit 0' \
        pwrite='cat >/dev/null' pread='head -c $3 /dev/zero' statsfile="$work/nofl.stats" ||
        return
    check "server without flush: save refused, exit 1, one line naming the URI" \
        fails 1 "^iohelper: flush nbd\+unix:///\?socket=.*nofl.sock: NBD server does not support flush: cannot make the save durable$" \
        "$IOH" --status-fd=3 - "$(unix_uri nofl)" <"$work/1m" 3>"$work/nofl.status"
    check "server without flush: no result line claims it synced" \
        bash -c "! grep -q '\"ok\":true\|\"type\":\"result\"' '$work/nofl.status'"
    check "server without flush: a restore reads it" \
        bash -c "'$IOH' --length=1M '$(unix_uri nofl)' - | cmp -s - <(head -c 1M /dev/zero)"
    stop nofl
    check "server without flush: nothing written before the refusal" \
        [ -z "$(stat_ops "$work/nofl.stats" write)" ]
}

# A server that accepts the connection and never answers (a listening socket nobody
# accepts on): the handshake is bounded by --stall-timeout, save and restore alike.
test_mute() {
    local sock=$work/mute.sock pid
    python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16); time.sleep(600)' \
        "$sock" &
    pid=$!
    srv_pid[mute]=$pid
    for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
    check "mute server, save: --stall-timeout=1 ends the handshake, one line naming the URI" \
        fails 1 "^iohelper: connect nbd\+unix:///\?socket=.*mute.sock: the server did not complete the NBD handshake in 1 s$" \
        timeout 60 "$IOH" --stall-timeout=1 - "nbd+unix:///?socket=$sock" <"$work/1m"
    check "mute server, restore: --stall-timeout=1 ends the handshake" \
        fails 1 "^iohelper: connect nbd\+unix:///\?socket=.*mute.sock: the server did not complete the NBD handshake in 1 s$" \
        timeout 60 "$IOH" --stall-timeout=1 --length=1M "nbd+unix:///?socket=$sock" -
    stop mute
}

# An export with a 4096-byte minimum block size that refuses anything else (nbdkit's
# blocksize-policy filter, error policy): a save's unaligned tail is written by
# read-modify-write (the export's bytes after the stream stay as they were), a restore
# reads its unaligned tail rounded up; an unaligned --offset is refused up front.
test_min_block() {
    local img=$work/mb.img size=$(((3 << 20) + 777)) off=8192
    head -c $((8 << 20)) /dev/urandom >"$img"
    cp "$img" "$work/mb.orig"
    start_nbdkit mb --filter=blocksize-policy file "$img" blocksize-minimum=4096 \
        blocksize-error-policy=error || return
    head -c "$size" /dev/urandom >"$work/mb.in"
    # the stream as a pipe: --offset would apply to a regular file too
    check "minimum block 4096: save of 3 MiB + 777 at --offset=8192, exit 0" \
        bash -c "cat '$work/mb.in' | '$IOH' --offset=$off - '$(unix_uri mb)'"
    check "minimum block 4096: the stream is on the export, every other byte unchanged" \
        bash -c "cmp -s <(head -c $off '$img') <(head -c $off '$work/mb.orig') &&
                 cmp -s <(tail -c +$((off + 1)) '$img' | head -c $size) '$work/mb.in' &&
                 cmp -s <(tail -c +$((off + size + 1)) '$img') <(tail -c +$((off + size + 1)) '$work/mb.orig')"
    check "minimum block 4096: restore of the 3 MiB + 777 reads them back" \
        bash -c "'$IOH' --offset=$off --length=$size '$(unix_uri mb)' - | cmp -s - '$work/mb.in'"
    check "minimum block 4096: --offset=100 refused, naming the minimum" \
        fails 1 "^iohelper: open nbd\+unix:///\?socket=.*mb.sock: the export's minimum block size is 4096 bytes: --offset 100 is not a multiple of it$" \
        "$IOH" --offset=100 - "$(unix_uri mb)" <"$work/mb.in"
    # the tail's read-modify-write would rewrite the next region's first bytes while its
    # own helper writes them: a region whose end is unaligned is refused before any byte
    cp "$work/mb.orig" "$img"
    check "minimum block 4096: --region ending unaligned refused, nothing written" \
        bash -c "! (cat '$work/mb.in' | '$IOH' --offset=$off --region=$((size + 100)) \
                 - '$(unix_uri mb)' 2>'$work/mb.err') &&
                 grep -q \"region's end (--offset + --region) is not a multiple of it\" '$work/mb.err' &&
                 cmp -s '$img' '$work/mb.orig'"
    check "minimum block 4096: --region ending aligned: the stream saved" \
        bash -c "cat '$work/mb.in' | '$IOH' --offset=$off --region=$(((size + 4095) / 4096 * 4096)) \
                 - '$(unix_uri mb)' && cmp -s <(tail -c +$((off + 1)) '$img' | head -c $size) '$work/mb.in'"
    stop mb
}

# no_secret DESC FILE...: none of FILE holds KEYFILE (the key file's name) or PASSWORD.
no_secret() {
    local desc=$1
    shift
    if cat "$@" | grep -Eq 'KEYFILE|PASSWORD'; then
        not_ok "$desc"
        cat "$@" | grep -E 'KEYFILE|PASSWORD' | head -5 | sed 's/^/# /'
    else
        ok "$desc"
    fi
}

# The URI's secrets (the PSK file's path, a password in the user information) are
# nowhere: not in the error line, --record, --stats, debug output, nor libnbd's own
# messages quoted in them. libnbd splits a query on ';' too (issue 26, items 5 and 6).
test_secrets() {
    local port sock=$work/sec.sock
    if [ ! -s "$work/psk" ]; then
        ok "# SKIP nbdkit without TLS (test_tls made no key)"
        return
    fi
    head -c $((1 << 20)) /dev/urandom >"$work/1m"
    cp "$work/psk" "$work/KEYFILE.keys"
    cp "$work/wrongpsk" "$work/KEYFILE-wrong.keys"
    start_nbdkit sec --tls=require --tls-psk="$work/psk" memory 32M || return
    check "';' before tls-psk-file: the save works, exit 0" \
        env G_MESSAGES_DEBUG=all "$IOH" --stats=json --record="$work/sec.rec" - \
        "nbds+unix://alice@/?socket=$sock;tls-psk-file=$work/KEYFILE.keys" \
        <"$work/1m" 2>"$work/sec.err"
    no_secret "';' before tls-psk-file, success: no key file in --stats, --record, debug" \
        "$work/sec.err" "$work/sec.rec"
    check "an NBD save reports mode \"nbd\" in --stats and --record" \
        grep -q '"mode":"nbd"' "$work/sec.rec" "$work/sec.err"
    fails 1 "^iohelper: connect nbds\+unix:///\?socket=$work/sec.sock: " \
        "$IOH" --record="$work/sec2.rec" - \
        "nbds+unix://alice@/?socket=$sock;tls-psk-file=$work/KEYFILE-wrong.keys" <"$work/1m"
    check "';' before tls-psk-file, wrong key: exit 1, the line names the URI" [ $? = 0 ]
    G_MESSAGES_DEBUG=all "$IOH" - \
        "nbds+unix://alice@/?socket=$sock;tls-psk-file=$work/KEYFILE-wrong.keys" \
        <"$work/1m" 2>"$work/sec2.err"
    no_secret "';' before tls-psk-file, failure: no key file in the line, --record, debug" \
        "$work/err" "$work/sec2.rec" "$work/sec2.err"
    # libnbd takes all of "alice:PASSWORD" as the user name, and says it is not in the file
    G_MESSAGES_DEBUG=all "$IOH" --record="$work/sec3.rec" - \
        "nbds+unix://alice:PASSWORD@/?socket=$sock;tls-psk-file=$work/KEYFILE.keys" \
        <"$work/1m" 2>"$work/sec3.err"
    check "user:password unknown to the server: exit 1" [ $? = 1 ]
    no_secret "user:password: neither the password nor the key file in any output" \
        "$work/sec3.err" "$work/sec3.rec"
    stop sec
    port=$(free_port)
    fails 1 "^iohelper: connect nbd://127.0.0.1:$port/x: .*refused" \
        "$IOH" - "nbd://alice:PASSWORD@127.0.0.1:$port/x?tls-certificates=/KEYFILE" </dev/null
    check "nbd://alice:PASSWORD@HOST: the line names nbd://HOST/x" [ $? = 0 ]
    no_secret "nbd://alice:PASSWORD@HOST: no password in the line" "$work/err"
    fails 2 "not a valid NBD URI" "$IOH" - "nbd://alice:PASSWORD@h%zz:1/?x=KEYFILE" </dev/null
    check "an invalid URI with a password: a usage error (exit 2)" [ $? = 0 ]
    no_secret "an invalid URI: no password in the usage error" "$work/err"
}

# env:NAME: the URI from the environment, out of the command line that every local user
# reads (libwrap passes its URIs so); an unset variable, or one that holds no NBD URI, is
# a usage error that does not quote the value.
test_env_operand() {
    head -c $((1 << 20)) /dev/urandom >"$work/1m"
    cd "$work" || return    # where a helper taking env:X for a path would make the file
    start_nbdkit env memory 16M || return
    check "env:NAME: a save through a URI in the environment reaches the export" \
        bash -c "IOH_URI='$(unix_uri env)' '$IOH' - env:IOH_URI <'$work/1m' &&
                 '$IOH' --length=1M '$(unix_uri env)' - | cmp -s - '$work/1m'"
    check "env:NAME: a restore through it, no file of that name made" \
        bash -c "IOH_URI='$(unix_uri env)' '$IOH' --length=1M env:IOH_URI - |
                 cmp -s - '$work/1m' && [ ! -e '$work/env:IOH_URI' ]"
    # libnbd splits the query on ';' when no '&' is left: socket= is there (GLib's split,
    # which the check used, found none and refused the URI as a usage error)
    check "'?tls-psk-file=K;socket=S': taken as libnbd takes it, the save works" \
        "$IOH" - "nbd+unix:///?tls-psk-file=/KEY;socket=$work/env.sock" <"$work/1m"
    stop env
    check "env:NAME unset: usage error naming the variable" \
        fails 2 "^iohelper: 'env:IOH_NONE': no environment variable IOH_NONE" \
        env -u IOH_NONE "$IOH" - env:IOH_NONE <"$work/1m"
    check "env:NAME not an NBD URI: usage error, the value not quoted" \
        fails 2 "does not hold an NBD URI" env IOH_X=/etc/KEYFILE "$IOH" - env:IOH_X <"$work/1m"
    no_secret "env:NAME not an NBD URI: the value is not in the line" "$work/err"
    cd - >/dev/null || return
}

# QEMU's legacy "nbd:HOST" is refused as a usage error, and no file of that name is made.
test_legacy() {
    (cd "$work" && fails 2 "legacy NBD syntax: use an NBD URI" "$IOH" - "nbd:127.0.0.1" </dev/null)
    check "legacy nbd:127.0.0.1: usage error, one line (exit 2)" [ $? = 0 ]
    check "legacy nbd:127.0.0.1: no file of that name made" [ ! -e "$work/nbd:127.0.0.1" ]
    check "legacy nbd:unix:PATH:exportname=X as IN: usage error" \
        fails 2 "legacy NBD syntax" "$IOH" --length=1 "nbd:unix:$work/x.sock:exportname=e" -
}

test_readme
test_memory_unix
test_tls
test_secrets
test_env_operand
test_legacy
test_memory_tcp
test_file_plugin
test_qemu_nbd
test_stats
test_adaptive
test_errors
test_no_flush
test_min_block
test_mute
test_killed
test_stall
test_end_bounded
echo "1..$n"
exit $failed
