#!/usr/bin/env bash
# libfabric's verbs provider (Debian's libfabric1, its fi_info and
# fi_pingpong) on the drop-in libibverbs.so.1 and librdmacm.so.1
# (docs/drop-in.md, "libfabric").
#
# The provider lists FI_EP_MSG, and verbs;ofi_rxm FI_EP_RDM over it, only for
# a device that has an IP address on a network interface that is up and not
# a loopback one (prov/verbs verbs_info.c: getifaddrs, then rdma_bind_addr of
# each address). The sim's addresses, 127.0.1.x, live on the host's `lo`,
# which it skips. So the MSG and RDM parts run in a network namespace of
# their own (`unshare -rn`: an unprivileged user and network namespace, no
# root on the host) in which interfaces sim0 and sim1 carry 127.0.1.1/32
# and 127.0.1.2/32, as a RoCE host's netdev carries its device's address.
# Both processes of a pair run in that namespace, so the fabric's UDP
# sockets, the CM's abstract sockets and fi_pingpong's TCP control socket
# meet there.
#
#   1. fi_info -p verbs on the host: the UD domains only, and no message of
#      the drop-in on stderr.
#   2. In the namespace: fi_info lists FI_EP_MSG (verbs) and FI_EP_RDM
#      (verbs;ofi_rxm) for sim0.
#   3. fi_pingpong -p verbs -e msg, then -e rdm, between two processes, each
#      owning one node (VERBSIM_UDP); the server is on sim0 and the client is
#      given its address, 127.0.1.1. Both exit statuses and both result rows
#      are checked and printed.
#
# Every process is bounded in time and reaped.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/fi_info libfabric-bin
need /usr/bin/fi_pingpong libfabric-bin
need /usr/bin/unshare util-linux
need /usr/sbin/ip iproute2

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/libfabric.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "${pid}" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# 1. On the host.
out="$(VERBSIM_NODES=2 run_bounded 60 /usr/bin/fi_info -p verbs 2>"${work}/info.err")" ||
  fail "fi_info -p verbs failed: ${out} $(cat "${work}/info.err")"
grep -q 'type: FI_EP_DGRAM' <<<"${out}" || fail "fi_info lists no FI_EP_DGRAM: ${out}"
grep -q 'domain: sim0-dgram' <<<"${out}" || fail "fi_info lists no sim0-dgram: ${out}"
if grep -q 'verbsim' "${work}/info.err"; then
  fail "the drop-in printed on fi_info's stderr: $(cat "${work}/info.err")"
fi
echo "PASS: fi_info -p verbs on the host lists the UD domains, stderr clean"

# The namespace: the loopback up, and one interface per node with its address.
ns_setup='ip link set lo up &&
  ip link add sim0 type veth peer name sim0-peer && ip link set sim0 up &&
  ip addr add 127.0.1.1/32 dev sim0 &&
  ip link add sim1 type veth peer name sim1-peer && ip link set sim1 up &&
  ip addr add 127.0.1.2/32 dev sim1'
# unshare, ip and the shell run without the sanitizer runtimes that
# dropin_env.sh preloads; the programs on the drop-in get them back.
preload="${LD_PRELOAD:-}"
if ! probe="$(env -u LD_PRELOAD timeout -k 5 20 unshare -rn sh -c "${ns_setup}" 2>&1)"; then
  echo "SKIP: MSG and RDM need a network interface that carries a sim address; this test makes one in an unprivileged user and network namespace, which this host refuses (unshare -rn, then ip link add; exit $?): ${probe}"
  exit 0
fi

# in_ns SCRIPT: runs the bash SCRIPT in a new namespace set up as above.
in_ns() {
  env -u LD_PRELOAD timeout -k 5 150 unshare -rn bash -c \
    "${ns_setup} || exit 1
     export LD_PRELOAD='${preload}'
     $1"
}

# 2. fi_info in the namespace.
out="$(in_ns 'VERBSIM_NODES=2 timeout 60 /usr/bin/fi_info -p verbs -t FI_EP_MSG' 2>&1)" ||
  fail "fi_info -p verbs -t FI_EP_MSG failed: ${out}"
grep -q 'type: FI_EP_MSG' <<<"${out}" && grep -q 'domain: sim0$' <<<"${out}" ||
  fail "fi_info lists no FI_EP_MSG on sim0: ${out}"
grep -q 'protocol: FI_PROTO_RDMA_CM_IB_RC' <<<"${out}" || fail "no RDMA CM RC protocol: ${out}"
out="$(in_ns 'VERBSIM_NODES=2 timeout 60 /usr/bin/fi_info -p "verbs;ofi_rxm" -t FI_EP_RDM' 2>&1)" ||
  fail "fi_info -p verbs;ofi_rxm failed: ${out}"
grep -q 'provider: verbs;ofi_rxm' <<<"${out}" && grep -q 'type: FI_EP_RDM' <<<"${out}" ||
  fail "fi_info lists no verbs;ofi_rxm FI_EP_RDM: ${out}"
echo "PASS: fi_info lists FI_EP_MSG (verbs) and FI_EP_RDM (verbs;ofi_rxm) on sim0"

# 3. The pingpongs. Ports apart for every run: the UDP base (node i on
# base+i) and fi_pingpong's TCP control port.
next_port=$(( 20000 + (RANDOM % 2000) * 10 ))
# ofi_rxm sizes its MSG CQ for FI_UNIVERSE_SIZE peers (default 256: 262144
# entries), beyond the sim's max_cqe (32767, as rxe's); a smaller universe
# fits, as on rxe.
# pingpong EP ITERS SIZE LABEL: LABEL is SIZE as fi_pingpong prints it.
pingpong() {
  local ep="$1" iters="$2" size="$3" label="$4"
  local udp="${next_port}" tcp=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
  local s="${work}/${ep}.${size}.server" c="${work}/${ep}.${size}.client"
  local env="VERBSIM_NODES=2 FI_UNIVERSE_SIZE=16"
  # ofi_rxm's receive buffers go to a shared receive context (an SRQ)
  # rather than to each connection's QP. libfabric 1.17's rxm_close_conn
  # closes a connection's QP and only then reads the completions left in
  # the CQ; a receive of that QP found there (a credit message that came
  # in the last moments) is posted again on the QP just closed, and the
  # program dies in fi_close (SIGSEGV). Later libfabric reads them first.
  # Devices whose ibv_destroy_qp leaves the QP's completions in its CQ
  # (rxe, siw, and the sim, which follows them) show it; mlx5's removes
  # them. With the SRQ no buffer belongs to a connection.
  [[ "${ep}" == rdm ]] && env+=" FI_OFI_RXM_USE_SRX=1"
  local args="-p verbs -e ${ep} -I ${iters} -S ${size}"
  in_ns "
    ${env} VERBSIM_UDP=udp=${udp},local=0 timeout -k 5 120 \
      /usr/bin/fi_pingpong ${args} -B ${tcp} >'${s}' 2>&1 &
    server=\$!
    # The client's control connection needs the server's TCP port
    # listening (on a loaded machine that takes more than a second).
    for i in \$(seq 300); do
      ss -Hltn \"sport = :${tcp}\" | grep -q . && break
      kill -0 \${server} 2>/dev/null || break
      sleep 0.1
    done
    ${env} VERBSIM_UDP=udp=${udp},local=1 timeout -k 5 120 \
      /usr/bin/fi_pingpong ${args} -P ${tcp} 127.0.1.1 >'${c}' 2>&1
    rc_c=\$?
    wait \${server}
    rc_s=\$?
    echo \"\${rc_s} \${rc_c}\" >'${work}/${ep}.${size}.rc'
  " &
  pids+=($!)
  wait $!
  local rcs
  rcs="$(cat "${work}/${ep}.${size}.rc" 2>/dev/null)"
  echo "== fi_pingpong -e ${ep} -S ${size}: server and client exit ${rcs:-(none)}"
  cat "${c}"
  [[ "${rcs}" == "0 0" ]] || {
    echo "--- server"; cat "${s}"; echo "--- client"; cat "${c}"
    fail "fi_pingpong -e ${ep}: exit statuses ${rcs:-(none)} (server client)"
  }
  # The result row: bytes, sent, =acked (every one), ...
  local row="^${label}[[:space:]]+${iters}[[:space:]]+=${iters}[[:space:]]"
  grep -Eq "${row}" "${s}" || { cat "${s}"; fail "fi_pingpong -e ${ep}: no server row /${row}/"; }
  grep -Eq "${row}" "${c}" || { cat "${c}"; fail "fi_pingpong -e ${ep}: no client row /${row}/"; }
}

pingpong msg 200 64 64
pingpong msg 50 65536 64k
pingpong rdm 200 64 64
pingpong rdm 50 65536 64k
echo "PASS: fi_pingpong MSG and RDM between two processes over the verbs provider"
