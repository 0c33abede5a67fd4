#!/usr/bin/env bash
# The CM's timeouts and retries on the drop-in librdmacm.so.1, in two
# processes on one sim fabric (VERBSIM_UDP; process A owns node 0,
# 127.0.1.1, process B node 1), run by cm_timeout_probe.c:
#
#   never_accepts    A takes the REQ and never answers: its CM answers B's
#                    repeated REQ with an MRA, and B gives up after the
#                    MRA-stretched tries: UNREACHABLE -ETIMEDOUT (-110)
#   sync_connect     the same with a synchronous id: rdma_connect -1 ETIMEDOUT
#   stopped_listener A is stopped (SIGSTOP): no MRA, B gives up after its
#                    plain tries
#   stopped_sidr     the same for a SIDR REQ (RDMA_PS_UDP)
#   rep_unanswered   B is stopped after its REQ; A accepts, its REP gets no
#                    RTU: A sees UNREACHABLE -ETIMEDOUT
#   late_rep         A accepts only after B gave up its REQ: B ignores the
#                    late REP (no event), so A's REP times out too
#   owner_absent     B resolves node 0's address with no process owning
#                    it: ADDR_ERROR -ETIMEDOUT after timeout_ms
#
# The CM's times are made short with the VERBSIM_CM_* variables
# (docs/environment.md); each check asserts that the answer came, and that
# it did not come before the modelled tries ran out. Every process is
# bounded in time and reaped.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/cm_timeout_probe"

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/cm_timeout.XXXXXX")"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -CONT "${pid}" 2>/dev/null; kill -9 "${pid}" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# One try of a REQ: 2 * 2^(8-8) + 2^(14-8) = 66 ms; of a REP or SIDR REQ:
# 64 ms; after an MRA: 2^(16-8) + 2^(9-8) = 258 ms; two retries.
export VERBSIM_CM_RESPONSE_TIMEOUT=14 VERBSIM_CM_PACKET_LIFETIME=8
export VERBSIM_CM_MRA_TIMEOUT=16 VERBSIM_CM_RETRIES=2
export VERBSIM_NODES=2
req_try=66
rep_try=64
after_mra=258
# Without an MRA a REQ is given up after 3 tries (198 ms); with one, after
# at least two tries and one MRA-stretched try (390 ms; 582 when the MRA
# answers the first repeat).
plain_req=$(( 3 * req_try ))
mra_req=$(( 2 * req_try + after_mra ))

next_port=$(( 24000 + (RANDOM % 2000) * 10 ))

# wait_line FILE REGEX PID: waits (at most 20 s) for a line of FILE.
wait_line() {
  local i
  for (( i = 0; i < 200; i++ )); do
    grep -Eq -- "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || { cat "$1"; fail "process ${3} ended before /$2/"; }
    sleep 0.1
  done
  cat "$1"
  fail "no /$2/ in $(basename "$1") after 20 s"
}

# probe_pid FILE: the probe's own pid, which it prints first (the job's
# pid is the shell's and `timeout`'s, which SIGSTOP would not reach).
# stop PID: SIGSTOP, then waits (at most 5 s) until every thread of PID is
# stopped: a thread that is running when the signal comes stops only on its
# way back to user space, and the test's next step must not race it.
stop() {
  local pid="$1" i t state all
  # (Builtins only: a program with a sanitizer runtime preloaded is slow.)
  kill -STOP "${pid}"
  for (( i = 0; i < 500; i++ )); do
    all=1
    for t in /proc/"${pid}"/task/*; do
      state=""
      read -r state <"${t}/stat" 2>/dev/null
      state="${state##*) }"
      state="${state%% *}"
      [[ "${state}" == T || "${state}" == t ]] || { all=0; break; }
    done
    [[ ${all} -eq 1 ]] && return 0
    sleep 0.01
  done
  fail "process ${pid} did not stop"
}

probe_pid() {
  local pid
  pid="$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$1" | head -n 1)"
  [[ -n "${pid}" ]] || fail "no pid line in $(basename "$1")"
  echo "${pid}"
}

# start_a NAME ARGS...: process A (node 0) in the background, its stdin a
# FIFO the test holds open; sets a_pid and a_in (the FIFO's fd).
start_a() {
  local name="$1"
  shift
  mkfifo "${work}/${name}.in"
  VERBSIM_UDP="udp=${udp},local=0" run_bounded 60 "${probe}" "$@" \
    <"${work}/${name}.in" >"${work}/${name}.a" 2>&1 &
  a_pid=$!
  pids+=("${a_pid}")
  exec {a_in}>"${work}/${name}.in"
}

# run_b NAME ARGS...: process B (node 1) in the foreground; must exit 0.
run_b() {
  local name="$1"
  shift
  VERBSIM_UDP="udp=${udp},local=1" run_bounded 60 "${probe}" "$@" \
    >"${work}/${name}.b" 2>&1
  local rc=$?
  cat "${work}/${name}.b"
  [[ ${rc} -eq 0 ]] || fail "${name}: process B exit ${rc}"
}

# finish_a NAME: closes A's stdin and reaps it; it must exit 0.
finish_a() {
  exec {a_in}>&-
  wait "${a_pid}"
  local rc=$?
  cat "${work}/$1.a"
  [[ ${rc} -eq 0 ]] || fail "$1: process A exit ${rc}"
}

new_fabric() {
  udp="${next_port}"
  port=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
}

echo "== never_accepts"
new_fabric
start_a never_accepts listen "${port}" rc never
wait_line "${work}/never_accepts.a" '^ok listening' "${a_pid}"
run_b never_accepts connect 127.0.1.1 "${port}" rc "${mra_req}"
grep -q '^ok request' "${work}/never_accepts.a" || fail "A never got the request"
finish_a never_accepts

echo "== sync_connect"
new_fabric
start_a sync_connect listen "${port}" rc never
wait_line "${work}/sync_connect.a" '^ok listening' "${a_pid}"
run_b sync_connect sync_connect 127.0.1.1 "${port}" "${mra_req}"
finish_a sync_connect

for kind in rc ud; do
  name="stopped_${kind}"
  echo "== ${name}"
  new_fabric
  start_a "${name}" listen "${port}" "${kind}" never
  wait_line "${work}/${name}.a" '^ok listening' "${a_pid}"
  a_probe="$(probe_pid "${work}/${name}.a")"
  pids+=("${a_probe}")
  stop "${a_probe}"
  if [[ ${kind} == rc ]]; then
    run_b "${name}" connect 127.0.1.1 "${port}" rc "${plain_req}"
  else
    run_b "${name}" connect 127.0.1.1 "${port}" ud $(( 3 * rep_try ))
  fi
  kill -CONT "${a_probe}"
  finish_a "${name}"
done

echo "== rep_unanswered"
new_fabric
start_a rep_unanswered listen "${port}" rc accept
wait_line "${work}/rep_unanswered.a" '^ok listening' "${a_pid}"
VERBSIM_UDP="udp=${udp},local=1" run_bounded 60 "${probe}" connect 127.0.1.1 \
  "${port}" rc 0 >"${work}/rep_unanswered.b" 2>&1 &
b_pid=$!
pids+=("${b_pid}")
wait_line "${work}/rep_unanswered.a" '^ok request' "${a_pid}"
b_probe="$(probe_pid "${work}/rep_unanswered.b")"
pids+=("${b_probe}")
stop "${b_probe}"
echo accept >&"${a_in}"
wait_line "${work}/rep_unanswered.a" '^PASS' "${a_pid}"
finish_a rep_unanswered
grep -q '^ok the REP nobody answers: UNREACHABLE -ETIMEDOUT' "${work}/rep_unanswered.a" ||
  fail "A did not give up its REP"
# B's CM was stopped with it; what it makes of the REP once resumed is not
# checked here (late_rep is): it ends.
kill -9 "${b_probe}"
wait "${b_pid}" 2>/dev/null

echo "== late_rep"
new_fabric
start_a late_rep listen "${port}" rc accept
wait_line "${work}/late_rep.a" '^ok listening' "${a_pid}"
VERBSIM_UDP="udp=${udp},local=1" run_bounded 60 "${probe}" connect 127.0.1.1 \
  "${port}" rc "${mra_req}" >"${work}/late_rep.b" 2>&1 &
b_pid=$!
pids+=("${b_pid}")
# A accepts only once B has given up its REQ: B ignores the REP (no event in
# its next 2 s), so A's REP is never answered either.
wait_line "${work}/late_rep.b" '^event RDMA_CM_EVENT_UNREACHABLE' "${b_pid}"
echo accept >&"${a_in}"
wait "${b_pid}"
rc=$?
cat "${work}/late_rep.b"
[[ ${rc} -eq 0 ]] || fail "late_rep: process B exit ${rc}"
finish_a late_rep
grep -q '^ok the REP nobody answers: UNREACHABLE -ETIMEDOUT' "${work}/late_rep.a" ||
  fail "A's REP was answered"

echo "== owner_absent"
new_fabric
run_b owner_absent resolve 127.0.1.1 300

echo "PASS"
