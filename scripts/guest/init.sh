#!/bin/sh
# /init of the iohelper test guest (scripts/guest/build-guest): fills RAM the way a running
# system does, says IOHELPER-GUEST-READY on the serial console, then answers "ping N" with
# "pong N" on it for ever. Settings come from /etc/guest.conf (written by build-guest).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
. /etc/guest.conf
exec </dev/ttyS0 >/dev/ttyS0 2>&1
stty -echo 2>/dev/null
mount -t tmpfs -o size=95% fill /fill
if [ "$FILL" = random ]; then
    # the worst case: RAM of random bytes (incompressible)
    dd if=/dev/urandom of=/fill/random bs=1M count="$RANDOM_MIB" 2>/dev/null
else
    # page-cache-like: a second copy of the host files the initramfs carries
    cp -a /payload /fill/copy
    # encrypted-like data
    dd if=/dev/urandom of=/fill/random bs=1M count="$RANDOM_MIB" 2>/dev/null
    # an archive of part of it
    tar -cf - /payload/usr/lib/python3.11 2>/dev/null | gzip > /fill/archive.tar.gz
fi
sync
echo "IOHELPER-GUEST-READY fill=$FILL mib=$(du -sm /fill | cut -f1)"
while read -r cmd arg; do
    case "$cmd" in
    ping) echo "pong $arg" ;;
    "") ;;
    *) echo "unknown: $cmd" ;;
    esac
done
echo "IOHELPER-GUEST-EOF"
while :; do sleep 3600; done
