#!/bin/bash
# qemu-direct.sh - issue 11 item 6: a paused guest saved without --bypass-cache, through
# qemu-iohelper (iohelper computing XXH3) versus QEMU writing straight into the file (QMP getfd of
# the file itself, then fdatasync), plus what computing the XXH3 checksum afterwards would
# cost the direct path (xxhsum -H3 over the file, still in the page cache).
#
#   flock /work/bench.lock benchmarks/qemu-direct.sh [--runs N] [--blob-mib MIB]
#                                                      [--build DIR] [--dir DIR]
#
# Each round runs both cases (interleaved), each on a fresh QEMU 7.2 TCG guest (-S, so
# paused) of RAM_MIB whose RAM holds BLOB_MIB of random data. Wall time from the migrate
# command to a durable file; CPU seconds of QEMU (from /proc) and of our processes
# (qemu-iohelper and its helper, from wait4 via /usr/bin/time).
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
RUNS=3
BLOB_MIB=1024
BUILD=$TOP/build
DIR=/var/tmp/qg-bench-direct.$$
while [ $# -gt 0 ]; do
    case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --blob-mib) BLOB_MIB=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    *) sed -n '7,8s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    esac
done
RAM_MIB=$((BLOB_MIB + 256))
mkdir -p "$DIR"
QPID=
cleanup() { [ -n "$QPID" ] && kill -9 "$QPID" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
# Copies of the binaries: a rebuild during the run must not change them.
cp "$BUILD/qemu-glue/qemu-iohelper" "$BUILD/helper/iohelper" "$DIR/"
cp -P "$BUILD"/libwrap/libiohwrap.so "$BUILD"/libwrap/libiohwrap.so.0 "$BUILD"/libwrap/libiohwrap.so.0.*.0 "$DIR/"
cp "$BUILD"/helper/libiohcore-*.so "$DIR/"    # the private core (helper/meson.build)
export IOHELPER_PATH=$DIR/iohelper LD_LIBRARY_PATH=$DIR
head -c "$((BLOB_MIB << 20))" /dev/urandom >"$DIR/blob.bin"

cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }   # clock ticks
TCK=$(getconf CLK_TCK)

start_qemu() {
    rm -f "$DIR/qmp.sock"
    qemu-system-x86_64 -machine pc,accel=tcg -m "${RAM_MIB}M" -nodefaults -display none -S \
        -qmp "unix:$DIR/qmp.sock,server=on,wait=off" \
        -device "loader,file=$DIR/blob.bin,addr=0x1000000,force-raw=on" >/dev/null 2>&1 &
    QPID=$!
    while [ ! -S "$DIR/qmp.sock" ]; do sleep 0.05; done
}
stop_qemu() { kill -9 "$QPID"; wait "$QPID" 2>/dev/null || true; QPID=; }

# QEMU writes the file itself: getfd + migrate fd:, wait for the MIGRATION event, fdatasync.
direct_save() {
    python3 - "$DIR/qmp.sock" "$1" <<'PY'
import json, os, socket, sys, time
sock, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX); s.connect(sock); f = s.makefile('rb')
def cmd(name, args=None, fd=None):
    msg = json.dumps({"execute": name, **({"arguments": args} if args else {})}).encode() + b"\n"
    if fd is None: s.sendall(msg)
    else: socket.send_fds(s, [msg], [fd])
    while True:
        r = json.loads(f.readline())
        if "return" in r: return r["return"]
        if "error" in r: sys.exit("%s: %s" % (name, r["error"]))
json.loads(f.readline()); cmd("qmp_capabilities")
cmd("migrate-set-capabilities", {"capabilities": [{"capability": "events", "state": True}]})
cmd("migrate-set-parameters", {"max-bandwidth": 1 << 40})
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
os.pwrite(fd, b"\0" * 4096, 0); os.lseek(fd, 4096, 0)   # the header's room, as ours
t0 = time.monotonic()
cmd("getfd", {"fdname": "f"}, fd)
cmd("migrate", {"uri": "fd:f"})
while True:
    ev = json.loads(f.readline())
    if ev.get("event") == "MIGRATION" and ev["data"]["status"] in ("completed", "failed", "cancelled"):
        break
tq = time.monotonic()
os.fdatasync(fd); os.close(fd)
t1 = time.monotonic()
print("%.3f %.3f %s" % (t1 - t0, tq - t0, ev["data"]["status"]))
PY
}

printf 'round\tcase\twall_s\tqemu_done_s\tMiB_s\tqemu_cpu_s\tours_cpu_s\tsum_s\tsum_cpu_s\n'
for r in $(seq 1 "$RUNS"); do
    for c in helper direct; do
        start_qemu
        rm -f "$DIR/img"; sync
        c0=$(cpu_of "$QPID")
        if [ "$c" = helper ]; then
            /usr/bin/time -f '%U %S' -o "$DIR/time" \
                "$DIR/qemu-iohelper" save --qmp "$DIR/qmp.sock" "$DIR/img" --stats=json \
                >"$DIR/out"
            wall=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f %.3f" % (d["seconds"], d["qemu_seconds"]))' "$DIR/out")
            ours=$(awk '{ printf "%.2f", $1 + $2 }' "$DIR/time")
            sum=- sumcpu=-
        else
            read -r w q st < <(direct_save "$DIR/img")
            [ "$st" = completed ] || { echo "direct save: $st" >&2; exit 1; }
            wall="$w $q"
            ours=0
            # the checksum the header needs, computed afterwards from the page cache
            /usr/bin/time -f '%e %U %S' -o "$DIR/time" xxhsum -H3 "$DIR/img" >/dev/null 2>&1
            read -r sum su ss <"$DIR/time"
            sumcpu=$(awk -v a="$su" -v b="$ss" 'BEGIN { printf "%.2f", a + b }')
        fi
        c1=$(cpu_of "$QPID")
        stop_qemu
        set -- $wall
        bytes=$(stat -c %s "$DIR/img")
        printf '%s\t%s\t%s\t%s\t%.0f\t%.2f\t%s\t%s\t%s\n' "$r" "$c" "$1" "$2" \
            "$(awk -v b="$bytes" -v s="$1" 'BEGIN { print b / 1048576 / s }')" \
            "$(awk -v a="$c0" -v b="$c1" -v t="$TCK" 'BEGIN { print (b - a) / t }')" \
            "$ours" "$sum" "$sumcpu"
    done
done
echo "# $(nproc) cores; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
