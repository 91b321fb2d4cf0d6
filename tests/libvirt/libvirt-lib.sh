# libvirt-lib.sh - run a private libvirtd whose libvirt_iohelper is ours (or the stock one)
#
# Sourced by tests/libvirt/libvirt-save-restore.sh and benchmarks/virsh-save.sh (bash).
#
#   lv_missing                 prints why this machine cannot run us (empty: it can)
#   lv_enter_namespace "$0" "$@"   re-execs the caller in a private mount namespace
#   lv_setup WORK HELPER RECORD    config, bind mounts (namespace only), wrapper script
#   lv_start                   starts libvirtd; sets LV_URI and LV_PID
#   lv_virsh ARGS...           virsh against our libvirtd only
#   lv_use_helper ours|stock|none   which binary libvirtd spawns as libvirt_iohelper from now on
#   lv_domain_xml NAME MIB BLOB   a transient domain whose RAM at 16 MiB holds BLOB
#   lv_pmemsave NAME FILE BYTES   guest RAM [0, BYTES) to FILE
#   lv_cleanup                 destroys domains, kills QEMU and libvirtd, unmounts
#   lv_on_exit FUNC            FUNC runs at exit, also after INT/TERM/HUP/PIPE (128 + N)
#   lv_log_tail                the end of libvirtd's log, as TAP comments
#
# Nothing here touches the host's libvirt: every mount is made inside the private mount
# namespace (the caller refuses to mount otherwise), and libvirtd's sockets, state,
# runtime, cache, log and config directories all live under WORK.

# libvirtd, mkfs.ext4 and losetup live in sbin, which a test runner's PATH may lack.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
export PATH

LV_STOCK_HELPER=/usr/lib/libvirt/libvirt_iohelper
LV_PID=
LV_URI=
LV_WORK=
LV_MOUNTS=()

lv_log() {
    echo "# $*" >&2
}

lv_missing() {
    local c
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (libvirtd qemu:///system, mount namespaces)"
        return
    fi
    for c in libvirtd virsh qemu-system-x86_64 unshare mount umount jq; do
        if ! command -v "$c" >/dev/null 2>&1; then
            echo "$c not installed (see scripts/deps/libvirt.txt)"
            return
        fi
    done
    if [ ! -x "$LV_STOCK_HELPER" ]; then
        echo "$LV_STOCK_HELPER missing (libvirt-daemon not installed)"
        return
    fi
    if ! compgen -G '/usr/lib*/libvirt/connection-driver/libvirt_driver_qemu.so' >/dev/null &&
       ! compgen -G '/usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so' >/dev/null; then
        echo "libvirt's QEMU driver missing (libvirt-daemon-driver-qemu)"
        return
    fi
    if ! unshare -m --propagation private true 2>/dev/null; then
        echo "cannot create a mount namespace here (unshare -m failed)"
        return
    fi
}

lv_in_private_ns() {
    [ -n "${IOH_LV_NAMESPACE:-}" ] &&
        [ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ]
}

# Re-exec the calling script in its own mount namespace; mounts vanish with it.
lv_enter_namespace() {
    if ! lv_in_private_ns; then
        IOH_LV_NAMESPACE=1 exec unshare -m --propagation private bash "$@"
    fi
}

lv_bind() {
    local src=$1 dst=$2
    if [ ! -e "$dst" ]; then
        mkdir -p "$dst"
    fi
    mount --bind "$src" "$dst" || return 1
    LV_MOUNTS+=("$dst")
}

# lv_setup WORK HELPER RECORD: everything libvirtd needs, bound over the system paths.
lv_setup() {
    local work=$1 helper=$2 record=$3 d sockdir
    LV_WORK=$work

    if ! lv_in_private_ns; then
        echo "lv_setup: refusing to mount outside a private mount namespace" >&2
        return 1
    fi
    mkdir -p "$work"/{etc,run,lib,cache,log} || return 1
    # Unix socket paths are limited to 108 bytes: fall back to a short folder.
    sockdir=$work/sock
    if [ ${#sockdir} -gt 80 ]; then
        sockdir=$(mktemp -d /tmp/ioh-lv.XXXXXX) || return 1
    fi
    mkdir -p "$sockdir"
    LV_SOCKDIR=$sockdir
    LV_URI="qemu:///system?socket=$sockdir/libvirt-sock"

    cat >"$work/etc/libvirtd.conf" <<EOF
unix_sock_dir = "$sockdir"
listen_tls = 0
listen_tcp = 0
log_outputs = "3:file:$work/log/libvirtd.log"
EOF
    # As the issue found: no virtlogd, no cgroups, no per-domain namespaces, root QEMU.
    cat >"$work/etc/qemu.conf" <<'EOF'
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
EOF
    # libvirt parses its built-in QEMU user and group even when qemu.conf overrides them;
    # a machine where libvirt-daemon's postinst did not add them gets them here, privately.
    cp /etc/passwd "$work/passwd" && cp /etc/group "$work/group" || return 1
    getent passwd libvirt-qemu >/dev/null ||
        echo 'libvirt-qemu:x:64055:64055:Libvirt Qemu:/nonexistent:/usr/sbin/nologin' >>"$work/passwd"
    getent group libvirt-qemu >/dev/null || echo 'libvirt-qemu:x:64055:' >>"$work/group"
    getent group kvm >/dev/null || echo 'kvm:x:64056:' >>"$work/group"
    getent group libvirt >/dev/null || echo 'libvirt:x:64057:' >>"$work/group"

    # libvirt clears the helper's environment and passes no options: a wrapper adds them.
    cat >"$work/iohelper-wrapper" <<EOF
#!/bin/sh
exec '$helper' --record='$record' "\$@"
EOF
    chmod 755 "$work/iohelper-wrapper"
    # The stock helper, reachable for lv_use_helper stock after ours is bound over it.
    # (when dpkg-divert moved the stock one aside for ours, the stock one is its true name)
    d=$(dpkg-divert --truename "$LV_STOCK_HELPER" 2>/dev/null) || d=$LV_STOCK_HELPER
    cp "$d" "$work/stock-iohelper" || return 1

    lv_bind "$work/passwd" /etc/passwd &&
        lv_bind "$work/group" /etc/group &&
        lv_bind "$work/etc" /etc/libvirt &&
        lv_bind "$work/run" /run/libvirt &&
        lv_bind "$work/lib" /var/lib/libvirt &&
        lv_bind "$work/cache" /var/cache/libvirt &&
        lv_bind "$work/log" /var/log/libvirt &&
        lv_use_helper ours
}

lv_use_helper() {
    while mountpoint -q "$LV_STOCK_HELPER" 2>/dev/null ||
          grep -q " $LV_STOCK_HELPER " /proc/self/mountinfo; do
        umount "$LV_STOCK_HELPER" || return 1
    done
    case $1 in
    ours) mount --bind "$LV_WORK/iohelper-wrapper" "$LV_STOCK_HELPER" ;;
    stock) mount --bind "$LV_WORK/stock-iohelper" "$LV_STOCK_HELPER" ;;
    none) ;;
    *) echo "lv_use_helper: ours, stock or none" >&2; return 1 ;;
    esac
}

# lv_overlay DIR: writes to DIR land in WORK and vanish with the namespace.
lv_overlay() {
    local dir=$1 up
    up=$LV_WORK/overlay/$(echo "$dir" | tr / _)
    mkdir -p "$up/upper" "$up/work" &&
        mount -t overlay "iohtest$(echo "$dir" | tr / _)" \
            -o "lowerdir=$dir,upperdir=$up/upper,workdir=$up/work" "$dir" || return 1
    LV_MOUNTS+=("$dir")
}

lv_virsh() {
    virsh -q -c "$LV_URI" "$@"
}

# lv_start [TIMEOUT_S]: libvirtd in the foreground as our child; waits for its socket.
lv_start() {
    local timeout=${1:-90} t=0
    # -p: the default pid file, /run/libvirtd.pid, is outside our private dirs
    libvirtd -f "$LV_WORK/etc/libvirtd.conf" -p "$LV_WORK/run/libvirtd.pid" \
        >"$LV_WORK/log/libvirtd.out" 2>&1 &
    LV_PID=$!
    while [ $t -lt $((timeout * 5)) ]; do
        if ! kill -0 "$LV_PID" 2>/dev/null; then
            lv_log "libvirtd exited early:"
            sed 's/^/#   /' "$LV_WORK/log/libvirtd.out" >&2
            LV_PID=
            return 1
        fi
        if [ -S "$LV_SOCKDIR/libvirt-sock" ] && lv_virsh uri >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.2
        t=$((t + 1))
    done
    lv_log "libvirtd did not answer within ${timeout}s"
    return 1
}

lv_domain_xml() {
    local name=$1 mib=$2 blob=$3
    cat <<EOF
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>$name</name>
  <memory unit='MiB'>$mib</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-device'/>
    <qemu:arg value='loader,file=$blob,addr=0x1000000,force-raw=on'/>
  </qemu:commandline>
</domain>
EOF
}

lv_pmemsave() {
    local name=$1 file=$2 bytes=$3
    lv_virsh qemu-monitor-command "$name" \
        "{\"execute\":\"pmemsave\",\"arguments\":{\"val\":0,\"size\":$bytes,\"filename\":\"$file\"}}" \
        >/dev/null
}

lv_on_exit() {
    # shellcheck disable=SC2064  # FUNC's name, expanded now on purpose
    trap "$1" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    trap 'exit 141' PIPE
}

lv_log_tail() {
    [ -n "$LV_WORK" ] && [ -f "$LV_WORK/log/libvirtd.log" ] &&
        tail -n 30 "$LV_WORK/log/libvirtd.log" | sed 's/^/# libvirtd: /'
}

lv_cleanup() {
    local name f pid i
    if [ -n "$LV_PID" ] && kill -0 "$LV_PID" 2>/dev/null; then
        for name in $(timeout 20 virsh -q -c "$LV_URI" list --all --name 2>/dev/null); do
            timeout 20 virsh -q -c "$LV_URI" destroy "$name" >/dev/null 2>&1
        done
    fi
    # QEMU daemonizes away from us: find it by the pid files of our own runtime dir.
    if [ -n "$LV_WORK" ]; then
        for f in "$LV_WORK"/run/qemu/*.pid; do
            [ -f "$f" ] || continue
            pid=$(cat "$f" 2>/dev/null)
            if [ -n "$pid" ] && grep -qs qemu "/proc/$pid/comm"; then
                kill -KILL "$pid" 2>/dev/null
            fi
        done
    fi
    if [ -n "$LV_PID" ]; then
        kill -TERM "$LV_PID" 2>/dev/null
        for i in $(seq 50); do
            kill -0 "$LV_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$LV_PID" 2>/dev/null
        wait "$LV_PID" 2>/dev/null
        LV_PID=
    fi
    umount "$LV_STOCK_HELPER" 2>/dev/null
    for ((i = ${#LV_MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${LV_MOUNTS[i]}" 2>/dev/null
    done
    LV_MOUNTS=()
    if [ -n "${LV_SOCKDIR:-}" ] && [ "$LV_SOCKDIR" != "$LV_WORK/sock" ]; then
        rm -rf "$LV_SOCKDIR"
    fi
}
