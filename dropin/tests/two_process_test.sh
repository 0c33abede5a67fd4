#!/usr/bin/env bash
# Unmodified Debian programs in two processes on one sim fabric: each process
# loads the drop-in libibverbs.so.1 and owns one node (VERBSIM_UDP: RoCEv2
# over UDP on loopback, docs/udp-transport.md); the programs exchange their
# QPN/PSN/GID over their own TCP socket as they would on hardware. The client
# is given the server's sim address (sim0's, 127.0.1.1) for that socket, as
# it would be given the server host's address: sim addresses are loopback
# (docs/drop-in.md, "Addresses"), so the server bound to 0.0.0.0 accepts it.
#
#   ibv_rc_pingpong (with and without -e), ibv_uc_pingpong, ibv_ud_pingpong,
#   ibv_srq_pingpong (with and without -e), ib_write_bw, ib_read_bw,
#   ib_send_lat
#
# Each pair is bounded in time, both exit statuses and the iteration lines are
# checked, and no process outlives the test.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/ibv_rc_pingpong ibverbs-utils
need /usr/bin/ib_write_bw perftest

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/two_process.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "${pid}" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# Ports: a UDP base (node i listens on base+i) and the programs' TCP port,
# apart for every pair and every run of the test.
next_port=$(( 20000 + (RANDOM % 2000) * 10 ))

# sim0's address, where the server runs.
server_address=127.0.1.1
v="$(VERBSIM_NODES=2 run_bounded 30 /usr/bin/ibv_devinfo -v -d sim0 2>&1)"
grep -Eq "GID\[  0\]:\s+::ffff:${server_address//./\\.}, RoCE v2" <<<"${v}" ||
  fail "sim0's GID is not ::ffff:${server_address}: ${v}"

# pair NAME SERVER_CHECK CLIENT_CHECK PROGRAM ARGS...: runs PROGRAM as the
# server on sim0 (process A) and as the client on sim1 (process B); each
# output must match its extended regular expression.
pair() {
  local name="$1" server_check="$2" client_check="$3" prog="$4"
  shift 4
  local udp="${next_port}" tcp=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
  local out_s="${work}/${name}.server" out_c="${work}/${name}.client"
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=0" \
    run_bounded 60 "${prog}" -d sim0 "$@" -p "${tcp}" >"${out_s}" 2>&1 &
  local server=$!
  pids+=("${server}")
  wait_tcp_listening "${tcp}" "${server}"
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=1" \
    run_bounded 60 "${prog}" -d sim1 "$@" -p "${tcp}" "${server_address}" >"${out_c}" 2>&1
  local rc_c=$?
  wait "${server}"
  local rc_s=$?
  echo "== ${name}: server exit ${rc_s}, client exit ${rc_c}"
  tail -n 3 "${out_c}"
  [[ ${rc_s} -eq 0 && ${rc_c} -eq 0 ]] || {
    echo "--- server"; cat "${out_s}"; echo "--- client"; cat "${out_c}"
    fail "${name}: exit statuses ${rc_s} (server) and ${rc_c} (client)"
  }
  grep -Eq "${server_check}" "${out_s}" || { cat "${out_s}"; fail "${name}: server output lacks /${server_check}/"; }
  grep -Eq "${client_check}" "${out_c}" || { cat "${out_c}"; fail "${name}: client output lacks /${client_check}/"; }
}

# The pingpongs print "<n> iters in <t> seconds" on both sides when every
# iteration completed, and the bytes moved both ways (4096 per message by
# default, UD 1024).
iters='^200 iters in [0-9.]+ seconds'
pair rc "${iters}" "^1638400 bytes in " /usr/bin/ibv_rc_pingpong -g 0 -n 200
pair rc_events "${iters}" "${iters}" /usr/bin/ibv_rc_pingpong -g 0 -n 200 -e
pair uc "${iters}" "${iters}" /usr/bin/ibv_uc_pingpong -g 0 -n 200
pair ud "${iters}" "^409600 bytes in " /usr/bin/ibv_ud_pingpong -g 0 -n 200
pair srq "${iters}" "${iters}" /usr/bin/ibv_srq_pingpong -g 0 -n 200
pair srq_events "${iters}" "${iters}" /usr/bin/ibv_srq_pingpong -g 0 -n 200 -e

# perftest: the result row "<bytes> <iterations> ..." (ib_read_bw's server
# prints only its connection data).
# ib_send_lat's times come from perftest's own CPU clock calibration
# (get_cpu_mhz), which on a loaded machine fails ("r^2 < 0.9") and prints
# inf: the row must be there with its 300 iterations, a time or inf.
bw_row='^ 65536 +300 +[0-9.]+ +[0-9.]+'
lat_row='^ 2 +300 +([0-9.]+|inf) +([0-9.]+|inf)'
pair write_bw "${bw_row}" "${bw_row}" /usr/bin/ib_write_bw -x 0 -F -n 300 \
  "${perftest_slow_flags[@]}"
pair read_bw 'remote address: LID' "${bw_row}" /usr/bin/ib_read_bw -x 0 -F -n 300 \
  "${perftest_slow_flags[@]}"
pair send_lat "${lat_row}" "${lat_row}" /usr/bin/ib_send_lat -x 0 -F -n 300 \
  "${perftest_slow_flags[@]}"
# Nothing the drop-in does not cover was called on the way.
! grep -l 'not supported by the verbsim drop-in' "${work}"/* ||
  fail "a program called something the drop-in does not cover"
echo "PASS"
