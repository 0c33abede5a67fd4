#!/usr/bin/env bash
# A process of an rdma_cm connection killed with SIGKILL mid-transfer, on the
# drop-in librdmacm and libibverbs, two processes on one sim fabric
# (VERBSIM_UDP): first the passive side (the server, receiving), then the
# active side (the client, sending). peer_death_probe.c says what the
# survivor must see; here each pair is bounded in time, the victim must have
# died of the signal, the survivor must exit 0, and no process outlives the
# test.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/peer_death_probe"

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/peer_death.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "${pid}" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

next_port=$(( 20000 + (RANDOM % 2000) * 10 ))

# wait_for_line FILE LINE SECONDS: whether FILE gets the line in time.
wait_for_line() {
  local i
  for (( i = 0; i < $3 * 20; ++i )); do
    grep -qx "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# case VICTIM: runs the server on node 0 and the client on node 1, kills
# VICTIM (server or client) once it streams, and checks the survivor.
run_case() {
  local victim="$1" survivor
  [[ "${victim}" == server ]] && survivor=client || survivor=server
  local udp="${next_port}" cm_port=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
  local role_server role_client
  [[ "${victim}" == server ]] && { role_server=victim; role_client=survivor; } ||
    { role_server=survivor; role_client=victim; }
  local out_s="${work}/${victim}-dies.server" out_c="${work}/${victim}-dies.client"
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=0" \
    timeout --kill-after=5 60 "${probe}" server "${cm_port}" "${role_server}" >"${out_s}" 2>&1 &
  local server=$!
  pids+=("${server}")
  wait_for_line "${out_s}" listening 20 || { cat "${out_s}"; fail "the server never listened"; }
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=1" \
    timeout --kill-after=5 60 "${probe}" client "${cm_port}" "${role_client}" >"${out_c}" 2>&1 &
  local client=$!
  pids+=("${client}")
  local victim_pid victim_out survivor_pid survivor_out
  if [[ "${victim}" == server ]]; then
    victim_pid="${server}" victim_out="${out_s}" survivor_pid="${client}" survivor_out="${out_c}"
  else
    victim_pid="${client}" victim_out="${out_c}" survivor_pid="${server}" survivor_out="${out_s}"
  fi
  wait_for_line "${victim_out}" streaming 30 ||
    { cat "${out_s}" "${out_c}"; fail "${victim}: never streamed"; }
  # The victim's pid is its `timeout`'s; the probe is that one's child. (Read
  # from /proc with builtins: pkill, with a sanitizer runtime preloaded, can
  # hang.)
  local child
  child="$(cat "/proc/${victim_pid}/task/${victim_pid}/children" 2>/dev/null)"
  [[ -n "${child}" ]] || fail "the ${victim} probe is not running"
  kill -9 ${child}
  wait "${victim_pid}"
  local rc_v=$?
  wait "${survivor_pid}"
  local rc_s=$?
  echo "== ${victim} killed: its exit ${rc_v}, the ${survivor}'s exit ${rc_s}"
  sed 's/^/   /' "${survivor_out}"
  killed_by_signal "${rc_v}" || { cat "${victim_out}"; fail "the ${victim} was not killed (exit ${rc_v})"; }
  [[ ${rc_s} -eq 0 ]] || fail "the ${survivor} failed (exit ${rc_s})"
  grep -qx "ok destroyed" "${survivor_out}" || fail "the ${survivor} did not destroy its objects"
}

run_case server
run_case client
echo "PASS"
