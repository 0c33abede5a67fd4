#!/usr/bin/env bash
# The soak run (docs/reliability.md "Soak"): N worker processes
# (tools/soak/soak_worker) on one sim fabric spread over processes (the UDP
# transport on loopback, docs/udp-transport.md), each pair exchanging mixed
# RC traffic (sends of varied sizes, RDMA writes, writes with immediate,
# RDMA reads) and UD datagrams under packet fault rules, beside a CPU-bound
# load; every message carries its stream, sequence number, length and a hash
# that the receiver verifies.
#
#   tools/soak.sh [--seconds N] [--procs N] [--load N] [--seed N]
#                 [--faults on|off] [--watchdog S] [--rss-bound-mb N]
#                 [--worker PATH] [--inject NAME]
#
# Defaults: --seconds 600 (traffic time; setup and the end add a few
# seconds), --procs 4 (at least 3), --load = the number of cores (busy
# processes beside the run), --seed 1, --faults on, --watchdog 10 (seconds
# without progress that fail the run), --rss-bound-mb 8 (a process's
# resident set at the end may exceed the one after warm-up by this much).
# --worker: a built soak_worker (else `bazel build //tools/soak:soak_worker`).
# --inject: a test-only fault of the worker (tools/soak/options.h) that the
# checks must catch.
#
# It prints messages and bytes per kind, retransmissions and the other
# transport counters, fault rules fired and each process's resident set,
# then "soak: PASSED" or "soak: FAILED" with every reason. Exit status 0 when
# passed. Every process it starts is killed and reaped when it ends.
set -uo pipefail

seconds=600
procs=4
load="$(nproc 2>/dev/null || echo 2)"
seed=1
faults=on
watchdog=10
rss_bound_mb=8
worker=""
inject=none

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="${2:-}"; shift 2 ;;
    --procs) procs="${2:-}"; shift 2 ;;
    --load) load="${2:-}"; shift 2 ;;
    --seed) seed="${2:-}"; shift 2 ;;
    --faults) faults="${2:-}"; shift 2 ;;
    --watchdog) watchdog="${2:-}"; shift 2 ;;
    --rss-bound-mb) rss_bound_mb="${2:-}"; shift 2 ;;
    --worker) worker="${2:-}"; shift 2 ;;
    --inject) inject="${2:-}"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "soak: unknown argument '$1'" >&2; usage ;;
  esac
done

for pair in "seconds:${seconds}" "procs:${procs}" "load:${load}" \
    "seed:${seed}" "watchdog:${watchdog}" "rss-bound-mb:${rss_bound_mb}"; do
  if ! [[ "${pair#*:}" =~ ^[0-9]+$ ]]; then
    echo "soak: --${pair%%:*} wants a whole number, got '${pair#*:}'" >&2
    exit 2
  fi
done
if (( procs < 3 || procs > 16 )); then
  echo "soak: --procs wants 3..16" >&2
  exit 2
fi
if (( seconds < 1 || watchdog < 1 )); then
  echo "soak: --seconds and --watchdog want at least 1" >&2
  exit 2
fi
[[ "${faults}" == on || "${faults}" == off ]] || {
  echo "soak: --faults wants on or off" >&2
  exit 2
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -z "${worker}" ]]; then
  echo "soak: building //tools/soak:soak_worker" >&2
  if ! bazel build //tools/soak:soak_worker >/dev/null 2>&1; then
    echo "soak: FAILED (bazel build //tools/soak:soak_worker)" >&2
    exit 1
  fi
  worker="$(bazel info bazel-bin 2>/dev/null)/tools/soak/soak_worker"
fi
if [[ ! -x "${worker}" ]]; then
  echo "soak: FAILED (no worker binary at ${worker})" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/verbsim-soak.XXXXXX")"
pids=()
load_pids=()
keep_logs=0
cleanup() {
  local pid
  for pid in ${pids[@]+"${pids[@]}"} ${load_pids[@]+"${load_pids[@]}"}; do
    kill -9 "${pid}" 2>/dev/null
  done
  wait 2>/dev/null
  if [[ "${keep_logs}" -eq 1 ]]; then
    echo "soak: logs in ${work}" >&2
  else
    rm -rf "${work}"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A base port with `procs` free UDP ports after it on loopback (the workers
# bind them a moment later).
port="$(python3 - "${procs}" <<'EOF'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(100):
    base = random.randrange(20000, 60000)
    socks = []
    try:
        for i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", base + i))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
EOF
)"
if [[ -z "${port}" ]]; then
  echo "soak: FAILED (no ${procs} free UDP ports on loopback)" >&2
  exit 1
fi

echo "soak: ${procs} processes, ${seconds} s, seed ${seed}, faults ${faults}," \
  "load ${load} busy processes, watchdog ${watchdog} s," \
  "RSS bound +${rss_bound_mb} MiB, UDP ports ${port}.." >&2

# The run's deadline (the watcher below enforces it). The load spins until
# it is killed, and never past the deadline even if this script is killed
# with SIGKILL (the workers have their own alarm too).
deadline=$(( seconds + 4 * watchdog + 150 ))
for (( i = 0; i < load; ++i )); do
  bash -c "end=\$(( SECONDS + ${deadline} )); while (( SECONDS < end )); do :; done" &
  load_pids+=($!)
done
# An ASan build's quarantine holds freed memory (up to 256 MB) by design,
# which the RSS bound would count: it is turned off for the workers (no effect
# on other builds).
asan_options="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}quarantine_size_mb=0"
for (( i = 0; i < procs; ++i )); do
  env -u VERBSIM_UDP -u VERBSIM_FAULTS ASAN_OPTIONS="${asan_options}" "${worker}" --index="${i}" \
    --procs="${procs}" --port="${port}" --seconds="${seconds}" \
    --seed="${seed}" --faults="${faults}" --watchdog="${watchdog}" \
    --dir="${work}" --inject="${inject}" >"${work}/worker.${i}.log" 2>&1 &
  pids+=($!)
done

# Watches the workers: a worker that prints no new progress line for
# watchdog + 5 s while running (not while meeting the others, which its own
# bounds cover) hangs; once one worker failed the others get 3 s more; and
# the whole run has a deadline.
hang=""
declare -a rc last_line last_change
start="${SECONDS}"
first_failure_at=""
for (( i = 0; i < procs; ++i )); do
  rc[i]=""
  last_line[i]=""
  last_change[i]="${SECONDS}"
done
while :; do
  running=0
  for (( i = 0; i < procs; ++i )); do
    [[ -n "${rc[i]}" ]] && continue
    if ! kill -0 "${pids[i]}" 2>/dev/null; then
      wait "${pids[i]}"
      rc[i]=$?
      if [[ "${rc[i]}" -ne 0 && -z "${first_failure_at}" ]]; then
        first_failure_at="${SECONDS}"
      fi
      continue
    fi
    running=$(( running + 1 ))
    line="$(grep -E '^(progress|running|waiting)' "${work}/worker.${i}.log" | tail -n 1)"
    if [[ "${line}" != "${last_line[i]}" ]]; then
      last_line[i]="${line}"
      last_change[i]="${SECONDS}"
    elif [[ "${line}" == progress* || "${line}" == running* ]] &&
         (( SECONDS - last_change[i] > watchdog + 5 )); then
      hang="process ${i} printed no progress for $(( SECONDS - last_change[i] )) s"
    fi
  done
  (( running == 0 )) && break
  if [[ -n "${hang}" ]]; then
    break
  fi
  if [[ -n "${first_failure_at}" ]] && (( SECONDS - first_failure_at > 3 )); then
    break
  fi
  if (( SECONDS - start > deadline )); then
    hang="the run did not end in ${deadline} s"
    break
  fi
  sleep 1
done
# Whatever still runs is stopped now (and reaped).
for (( i = 0; i < procs; ++i )); do
  if [[ -z "${rc[i]}" ]]; then
    kill -9 "${pids[i]}" 2>/dev/null
    wait "${pids[i]}" 2>/dev/null
    rc[i]="killed"
  fi
done
for pid in ${load_pids[@]+"${load_pids[@]}"}; do
  kill -9 "${pid}" 2>/dev/null
  wait "${pid}" 2>/dev/null
done
load_pids=()

# The judgement.
reasons=()
[[ -n "${hang}" ]] && reasons+=("no-progress: ${hang}")
for (( i = 0; i < procs; ++i )); do
  log="${work}/worker.${i}.log"
  while IFS= read -r f; do
    # "fail <reason> <count> <first example>"
    read -r _ reason count detail <<<"${f}"
    reasons+=("${reason}: process ${i}: ${detail} (${count} in all)")
  done < <(grep -E '^fail ' "${log}")
  if grep -q '^setup-failed' "${log}"; then
    reasons+=("setup: process ${i}: $(grep '^setup-failed' "${log}" | cut -d' ' -f2-)")
  elif [[ "${rc[i]}" == "killed" ]]; then
    reasons+=("killed: process ${i} was stopped before it ended")
  elif [[ "${rc[i]}" -ne 0 ]] && ! grep -q '^fail ' "${log}"; then
    reasons+=("crash: process ${i} exited with status ${rc[i]}: $(tail -n 1 "${log}")")
  fi
done

sum() {  # sum <kind> <field>: over every worker's "stat"/"count" lines
  cat "${work}"/worker.*.log | awk -v k="$1" -v f="$2" \
    '($1 == "stat" || $1 == "count") && $2 == k { s += $f } END { printf "%d", s }'
}
printf 'soak: %-14s %12s %14s\n' kind messages bytes >&2
for kind in rc_send rc_write rc_write_imm rc_read rc_fin rc_ack ud_sent ud_received; do
  printf 'soak: %-14s %12s %14s\n' "${kind}" "$(sum "${kind}" 3)" "$(sum "${kind}" 4)" >&2
done
ud_sent="$(sum ud_sent 3)"
ud_lost="$(sum ud_lost 3)"
echo "soak: UD lost ${ud_lost} of ${ud_sent} ($(awk -v l="${ud_lost}" -v s="${ud_sent}" \
  'BEGIN { printf "%.2f", s ? 100 * l / s : 0 }')%; accepted: drop and corrupt rules apply to UD)" >&2
echo "soak: packets sent $(sum packets_sent 3), retransmissions $(sum retransmissions 3)," \
  "ACK timeouts $(sum ack_timeouts 3), NAKs $(sum naks_received 3)," \
  "RNR NAKs $(sum rnr_naks 3), ICRC drops $(sum icrc_errors 3)," \
  "UD drops for want of a receive $(sum ud_no_recv_drops 3)" >&2
echo "soak: fault rules fired: drop $(sum fault_drop 3), corrupt $(sum fault_corrupt 3)," \
  "dup $(sum fault_dup 3), reorder $(sum fault_reorder 3), delay $(sum fault_delay 3)" >&2

bound_kb=$(( rss_bound_mb * 1024 ))
for (( i = 0; i < procs; ++i )); do
  log="${work}/worker.${i}.log"
  rs="$(awk '$1 == "rss_start_kb" { print $2 }' "${log}" | tail -n 1)"
  re="$(awk '$1 == "rss_end_kb" { print $2 }' "${log}" | tail -n 1)"
  if [[ -n "${rs}" && -n "${re}" ]]; then
    echo "soak: process ${i} RSS ${rs} KiB after warm-up, ${re} KiB at the end ($(( re - rs )) KiB)" >&2
    if (( re > rs + bound_kb )); then
      reasons+=("rss-growth: process ${i} grew from ${rs} KiB to ${re} KiB, more than ${rss_bound_mb} MiB")
    fi
  fi
done

if [[ "${#reasons[@]}" -eq 0 ]]; then
  echo "soak: PASSED (${procs} processes, ${seconds} s, $(sum rc_send 3) RC sends," \
    "$(sum retransmissions 3) retransmissions)" >&2
  exit 0
fi
keep_logs=1
for r in "${reasons[@]}"; do
  echo "soak: FAIL ${r}" >&2
done
echo "soak: FAILED (${#reasons[@]} reasons)" >&2
exit 1
