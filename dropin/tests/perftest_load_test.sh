#!/usr/bin/env bash
# Debian's perftest between two processes of one sim fabric (VERBSIM_UDP,
# docs/udp-transport.md) beside a CPU-bound load: one busy process per core,
# so that both sides are descheduled for whole time slices while their RC
# QPs' ACK timers run on the wall clock. With the default QP timeout (no -u)
# each of
#
#   ib_write_bw -s 1048576, ib_write_bw -q 4, ib_write_bw -a, ib_send_bw,
#   ib_send_lat
#
# must pass 10 runs out of 10 (docs/udp-transport.md, "Time and progress").
# Each run is bounded in time (the iteration counts keep a run to seconds),
# a failed run is reported with the line that says why, every command runs
# all its runs, a summary line per command is printed, and no process
# outlives the test. Under a sanitizer the programs run several times slower
# and the test would only measure that: it skips and says so.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/ib_write_bw perftest
need /usr/bin/ib_send_bw perftest
need /usr/bin/ib_send_lat perftest

if [[ ${#preload[@]} -gt 0 ]]; then
  echo "SKIP: a sanitizer build (${preload[*]##*/} preloaded) runs perftest" \
    "several times slower; the load test runs on the plain build"
  exit 0
fi

runs="${VERBSIM_LOAD_RUNS:-10}"
[[ "${runs}" =~ ^[1-9][0-9]*$ ]] || fail "VERBSIM_LOAD_RUNS='${runs}' is not a count"

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/perftest_load.XXXXXX")"
pids=()
load_pids=()
cleanup() {
  local pid
  for pid in ${pids[@]+"${pids[@]}"} ${load_pids[@]+"${load_pids[@]}"}; do
    kill -9 "${pid}" 2>/dev/null
  done
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The load: one busy process per core. Each spins until it is killed, and
# never past the test's own time bound even if this script is killed with
# SIGKILL.
cores="$(nproc 2>/dev/null || echo 2)"
for (( i = 0; i < cores; ++i )); do
  bash -c 'end=$(( SECONDS + 900 )); while (( SECONDS < end )); do :; done' &
  load_pids+=($!)
done

# Ports: a UDP base (node i listens on base+i) and perftest's TCP port, apart
# for every run and every run of the test.
next_port=$(( 20000 + (RANDOM % 2000) * 10 ))

# sim0's address, where the server runs (two_process_test.sh says why).
server_address=127.0.1.1

# listening PORT: whether a TCP socket listens on PORT (/proc/net/tcp, state
# 0A); the client is started only then, however long the loaded machine
# takes to start the server.
listening() {
  local hex
  hex="$(printf ':%04X' "$1")"
  awk -v p="${hex}" '$2 ~ p"$" && $4 == "0A" {found = 1} END {exit !found}' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# run_once OUT ROW PROGRAM ARGS...: one run of PROGRAM, server on sim0 and
# client on sim1; passes when both exit 0 and both outputs have a line
# matching ROW. Prints nothing on success, the reason otherwise.
run_once() {
  local out="$1" row="$2" prog="$3"
  shift 3
  local udp="${next_port}" tcp=$(( next_port + 5 ))
  next_port=$(( next_port + 10 ))
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=0" \
    run_bounded 60 "${prog}" -d sim0 -x 0 -F "$@" -p "${tcp}" >"${out}.server" 2>&1 &
  local server=$!
  pids+=("${server}")
  local i
  for (( i = 0; i < 400; ++i )); do
    listening "${tcp}" && break
    kill -0 "${server}" 2>/dev/null || break
    sleep 0.05
  done
  VERBSIM_NODES=2 VERBSIM_UDP="udp=${udp},local=1" \
    run_bounded 60 "${prog}" -d sim1 -x 0 -F "$@" -p "${tcp}" "${server_address}" \
    >"${out}.client" 2>&1
  local rc_c=$?
  wait "${server}"
  local rc_s=$?

  if [[ ${rc_s} -eq 0 && ${rc_c} -eq 0 ]] && grep -Eq "${row}" "${out}.server" &&
      grep -Eq "${row}" "${out}.client"; then
    return 0
  fi
  # Why: perftest's "Failed status 12: wr_id ..." line (12 is
  # RETRY_EXC_ERR), else its first error line, else the exit statuses.
  local why="" side pattern
  for pattern in 'Failed status [0-9]+[^,]*' '[^ ].*(error|Couldn|Unable|fail).*'; do
    for side in client server; do
      why="$(grep -m1 -oiE "${pattern}" "${out}.${side}")"
      [[ -n "${why}" ]] && break 2
    done
  done
  [[ ${rc_c} -eq 124 || ${rc_c} -eq 137 ]] && why="timed out${why:+; ${why}}"
  echo "${why:+${side}: ${why}; }exit statuses ${rc_s} (server), ${rc_c} (client)"
  return 1
}

# measure NAME ROW PROGRAM ARGS...: RUNS runs, a summary line.
summary=()
all_passed=1
measure() {
  local name="$1" row="$2"
  shift 2
  local passed=0 r start=${SECONDS} why
  for (( r = 1; r <= runs; ++r )); do
    if why="$(run_once "${work}/${name// /_}.${r}" "${row}" "$@")"; then
      passed=$(( passed + 1 ))
    else
      echo "   ${name}: run ${r} failed: ${why}"
    fi
  done
  local line="${name}: ${passed}/${runs} passed ($(( SECONDS - start )) s)"
  echo "== ${line}"
  summary+=("${line}")
  [[ ${passed} -eq ${runs} ]] || all_passed=0
}

echo "load: ${cores} busy processes; ${runs} runs of each command"
# The result rows: "<bytes> <iterations> ..." (ib_write_bw -q 4: the
# iterations of its four QPs; -a: its last size, 8 MiB; ib_send_lat: a time
# or inf, two_process_test.sh says why).
measure "ib_write_bw -s 1048576" '^ 1048576 +20 +[0-9.]+' \
  /usr/bin/ib_write_bw -s 1048576 -n 20
measure "ib_write_bw -q 4" '^ 65536 +800 +[0-9.]+' \
  /usr/bin/ib_write_bw -q 4 -n 200
measure "ib_write_bw -a" '^ 8388608 +5 +[0-9.]+' \
  /usr/bin/ib_write_bw -a -n 5
measure "ib_send_bw" '^ 65536 +300 +[0-9.]+' \
  /usr/bin/ib_send_bw -n 300
measure "ib_send_lat" '^ 2 +1000 +([0-9.]+|inf) +([0-9.]+|inf)' \
  /usr/bin/ib_send_lat -n 1000

echo "summary (${cores} busy processes beside, default QP timeout):"
printf '  %s\n' "${summary[@]}"
[[ ${all_passed} -eq 1 ]] || fail "a command failed a run under load"
echo "PASS"
