#!/bin/busybox sh
# /init of the guest's initramfs (built by rdma_guest.sh; busybox only).
# Loads the modules listed in /modules/order, mounts the host's root (9p,
# read-only) under a RAM overlay, the harness's two writable shares (ctl:
# the command and its results; out: VERBSIM_GUEST_OUT), binds the cached
# kernel modules at /lib/modules/<kver>, and switches into guest_init.sh.
# With verbsim.probe on the kernel command line it only reports that it
# started and powers off (the KVM probe).

/bin/busybox --install -s /bin
export PATH=/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
  echo "verbsim initramfs: $*" >/dev/console
  if [ -d /newroot/verbsim/ctl ] && [ -f /newroot/verbsim/ctl/boot.conf ]; then
    echo "$*" >/newroot/verbsim/ctl/infra-error
  fi
  poweroff -f
  sleep 60
}

case " $(cat /proc/cmdline) " in
  *" verbsim.probe=1 "*)
    echo "verbsim-probe-ok" >/dev/console
    poweroff -f
    sleep 60
    ;;
esac

while read -r name args; do
  [ -n "${name}" ] || continue
  # shellcheck disable=SC2086
  insmod "/modules/${name}" ${args} || echo "verbsim initramfs: insmod ${name} failed" >/dev/console
done </modules/order

mkdir -p /lower /rw /newroot
opts="trans=virtio,version=9p2000.L,msize=524288"
mount -t 9p -o "${opts},ro,cache=loose" hostroot /lower || fail "cannot mount the host root (9p)"
mount -t tmpfs -o mode=755 tmpfs /rw || fail "cannot mount the overlay's tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
  fail "cannot mount the overlay root"
mkdir -p /newroot/verbsim/ctl /newroot/verbsim/out
mount -t 9p -o "${opts}" ctl /newroot/verbsim/ctl || fail "cannot mount the ctl share"
mount -t 9p -o "${opts}" out /newroot/verbsim/out || fail "cannot mount the out share"
[ -f /newroot/verbsim/ctl/boot.conf ] || fail "no boot.conf in the ctl share"
. /newroot/verbsim/ctl/boot.conf
mkdir -p "/newroot/lib/modules/${kver}"
mount --bind "/newroot${modules}" "/newroot/lib/modules/${kver}" ||
  fail "cannot bind the kernel modules (${modules})"

mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /verbsim/ctl/guest_init.sh
