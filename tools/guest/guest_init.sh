#!/bin/bash
# The guest's init after switch_root (PID 1, host root under a RAM overlay;
# rdma_guest.sh copies this file into the ctl share for every run). Sets up
# the links and the rxe/siw devices, runs /verbsim/ctl/command.sh and writes
# its exit status to /verbsim/ctl/status; a set-up failure goes to
# /verbsim/ctl/infra-error instead. Then powers the guest off.
set -u
ctl=/verbsim/ctl
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C
exec </dev/null >/dev/console 2>&1

power_off() {
  sync
  /bin/busybox poweroff -f
  echo o >/proc/sysrq-trigger
  sleep 60
}
infra() {
  echo "verbsim guest: $*"
  echo "$*" >"${ctl}/infra-error"
  power_off
}
t0="$(cut -d' ' -f1 /proc/uptime)"
note() { echo "verbsim guest [$(cut -d' ' -f1 /proc/uptime) s]: $*"; }

mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
echo /sbin/modprobe >/proc/sys/kernel/modprobe
echo verbsim-guest >/proc/sys/kernel/hostname

# --- Links -------------------------------------------------------------------
# rxe: the two virtio NICs (one qemu hub), found by the MACs rdma_guest.sh
# gave them. siw: a veth pair. rdma_cm picks the device by IP address, so
# each device has its own netdev and address (198.18.0.0/15 is the range
# set aside for benchmarking: nothing outside the guest uses it).
nic_with_mac() {
  local dev
  for dev in /sys/class/net/*; do
    if [[ "$(cat "${dev}/address" 2>/dev/null)" == "$1" ]]; then
      basename "${dev}"
      return 0
    fi
  done
  return 1
}
rxe_a="$(nic_with_mac 52:54:00:00:00:01)" || infra "no virtio NIC with MAC 52:54:00:00:00:01 (virtio_net not loaded?)"
rxe_b="$(nic_with_mac 52:54:00:00:00:02)" || infra "no virtio NIC with MAC 52:54:00:00:00:02"
siw_a=veth0
siw_b=veth1
rxe_ip_a=198.18.1.1 rxe_ip_b=198.18.1.2
siw_ip_a=198.18.2.1 siw_ip_b=198.18.2.2

ip link add "${siw_a}" type veth peer name "${siw_b}" || infra "cannot create the veth pair (veth module?)"
# Both ends of each pair are local addresses: the receiving side must accept
# a packet whose source is one of its own addresses (else it is dropped as a
# martian), and reverse-path filtering must not reject it.
for conf in all default lo "${rxe_a}" "${rxe_b}" "${siw_a}" "${siw_b}"; do
  echo 1 >"/proc/sys/net/ipv4/conf/${conf}/accept_local"
  echo 0 >"/proc/sys/net/ipv4/conf/${conf}/rp_filter"
done
# Jumbo frames, as RoCE deployments use, so that the path MTU rdma_cm derives
# from the netdev's is 4096 rather than 1024 (from 1500 bytes).
# Policy routes: traffic from one address of a pair to the other leaves by its
# own link (the local table, which would loop it back over lo, comes later).
# "iif lo" limits the rules to locally sent packets, so the arriving packet
# is still delivered locally.
ip -batch - <<EOF || infra "ip -batch (links, addresses, routes) failed"
link set lo up
link set ${rxe_a} mtu 9000
link set ${rxe_b} mtu 9000
link set ${siw_a} mtu 9000
link set ${siw_b} mtu 9000
link set ${rxe_a} up
link set ${rxe_b} up
link set ${siw_a} up
link set ${siw_b} up
addr add ${rxe_ip_a}/24 dev ${rxe_a}
addr add ${rxe_ip_b}/24 dev ${rxe_b}
addr add ${siw_ip_a}/24 dev ${siw_a}
addr add ${siw_ip_b}/24 dev ${siw_b}
route add ${rxe_ip_b} dev ${rxe_a} src ${rxe_ip_a} table 101
route add ${rxe_ip_a} dev ${rxe_b} src ${rxe_ip_b} table 102
route add ${siw_ip_b} dev ${siw_a} src ${siw_ip_a} table 103
route add ${siw_ip_a} dev ${siw_b} src ${siw_ip_b} table 104
rule add pref 101 iif lo from ${rxe_ip_a} to ${rxe_ip_b} lookup 101
rule add pref 102 iif lo from ${rxe_ip_b} to ${rxe_ip_a} lookup 102
rule add pref 103 iif lo from ${siw_ip_a} to ${siw_ip_b} lookup 103
rule add pref 104 iif lo from ${siw_ip_b} to ${siw_ip_a} lookup 104
rule add pref 1000 lookup local
rule del pref 0 lookup local
EOF

# --- RDMA devices ------------------------------------------------------------
rdma -b - <<EOF || infra "rdma link add failed (rdma_rxe or siw not loaded?)"
link add rxe0 type rxe netdev ${rxe_a}
link add rxe1 type rxe netdev ${rxe_b}
link add siw0 type siw netdev ${siw_a}
link add siw1 type siw netdev ${siw_b}
EOF

# The IPv4-mapped GID of `ip` on rxe device `dev` ("" until it is there).
# rxe's table has 1024 entries: only the first few are read.
ipv4_gid_index() {
  local dev="$1" ip="$2" want i gid
  want="$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${ip//./ })"
  for i in 0 1 2 3 4 5 6 7; do
    gid="$(cat "/sys/class/infiniband/${dev}/ports/1/gids/${i}" 2>/dev/null)"
    if [[ "${gid}" == "${want}" ]]; then
      echo "${i}"
      return 0
    fi
  done
  return 1
}

# The device nodes (no udevd: devtmpfs makes them), the ports ACTIVE and the
# RoCE GIDs filled in (asynchronously, after the address).
deadline=$(( $(cut -d. -f1 /proc/uptime) + 30 ))
while true; do
  missing=""
  for dev in rxe0 rxe1 siw0 siw1; do
    state="$(cat "/sys/class/infiniband/${dev}/ports/1/state" 2>/dev/null)"
    [[ "${state}" == *ACTIVE* ]] || missing+=" ${dev}:port-not-active(${state:-no device})"
  done
  nodes=(/dev/infiniband/uverbs*)
  [[ ${#nodes[@]} -ge 4 && -e "${nodes[0]}" ]] || missing+=" /dev/infiniband/uverbs*"
  [[ -e /dev/infiniband/rdma_cm ]] || missing+=" /dev/infiniband/rdma_cm"
  rxe0_gid="$(ipv4_gid_index rxe0 "${rxe_ip_a}")" || missing+=" rxe0:ipv4-gid"
  rxe1_gid="$(ipv4_gid_index rxe1 "${rxe_ip_b}")" || missing+=" rxe1:ipv4-gid"
  [[ -z "${missing}" ]] && break
  if (( $(cut -d. -f1 /proc/uptime) > deadline )); then
    ls -l /dev/infiniband 2>&1
    rdma link 2>&1
    infra "RDMA devices not ready after 30 s:${missing}"
  fi
  sleep 0.1
done
chmod 666 /dev/infiniband/* 2>/dev/null

{
  echo "export VERBSIM_GUEST=1"
  echo "export VERBSIM_GUEST_OUT=/verbsim/out"
  echo "export VERBSIM_GUEST_ENV_FILE=${ctl}/guest.env"
  echo "export VERBSIM_RXE_ADDRS='rxe0=${rxe_ip_a} rxe1=${rxe_ip_b}'"
  echo "export VERBSIM_SIW_ADDRS='siw0=${siw_ip_a} siw1=${siw_ip_b}'"
  echo "export VERBSIM_RXE0_ADDR=${rxe_ip_a} VERBSIM_RXE1_ADDR=${rxe_ip_b}"
  echo "export VERBSIM_SIW0_ADDR=${siw_ip_a} VERBSIM_SIW1_ADDR=${siw_ip_b}"
  echo "export VERBSIM_RXE_GID_INDEX=${rxe0_gid}"
} >"${ctl}/guest.env"
note "RDMA ready (set-up took $(awk -v a="${t0}" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "%.1f", b-a}') s): rxe0=${rxe_ip_a} rxe1=${rxe_ip_b} siw0=${siw_ip_a} siw1=${siw_ip_b}"

# --- The command -------------------------------------------------------------
. "${ctl}/guest.env"
ulimit -l unlimited
ulimit -c 0
: >"${ctl}/started"
bash "${ctl}/command.sh" >"${ctl}/stdout" 2>"${ctl}/stderr" </dev/null
status=$?
note "command exited with status ${status}"
echo "${status}" >"${ctl}/status"
power_off
