#!/usr/bin/env bash
# tools/soak.sh's checks catch what they must: a short clean run passes, and
# each test-only fault of the worker (--inject, tools/soak/options.h) fails
# the run with its own reason and no unrelated one.
set -uo pipefail
root="${TEST_SRCDIR}/${TEST_WORKSPACE}"
soak="${root}/tools/soak.sh"
worker="${root}/tools/soak/soak_worker"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$(( failures + 1 ))
}

# run_soak OUT ARGS...: a bounded run of 3 processes without CPU load. A
# failing run keeps its logs in a directory under TMPDIR: the test's own,
# which bazel removes, not the machine's.
run_soak() {
  local out="$1"
  shift
  TMPDIR="${TEST_TMPDIR}" timeout 180 bash "${soak}" --worker "${worker}" \
    --procs 3 --load 0 "$@" >"${out}" 2>&1
}

out="${TEST_TMPDIR}/clean.log"
run_soak "${out}" --seconds 6 --watchdog 5
rc=$?
cat "${out}"
if [[ "${rc}" -ne 0 ]] || ! grep -q '^soak: PASSED' "${out}"; then
  fail "a clean 6 s run did not pass (exit ${rc})"
fi
# The report has its figures: RC sends were verified, RSS was read.
grep -Eq '^soak: rc_send +[1-9][0-9]* ' "${out}" || fail "no RC sends counted"
grep -Eq '^soak: process 2 RSS [0-9]+ KiB after warm-up' "${out}" ||
  fail "no RSS figures"

# case INJECT EXPECTED ALLOWED...: the run fails, names EXPECTED, and every
# reason it names is EXPECTED or one of ALLOWED. (The clean run above has
# the fault rules on; these do not.)
case_() {
  local inject="$1" expected="$2"
  shift 2
  local allowed=("${expected}" "$@") out="${TEST_TMPDIR}/${inject}.log" rc
  local watchdog=5
  [[ "${inject}" == stall ]] && watchdog=3
  # Without fault rules: a rule that drops one copy of a repeated datagram
  # (or the spoiled message) would hide the fault the case plants.
  run_soak "${out}" --seconds 3 --watchdog "${watchdog}" --faults off \
    --inject "${inject}"
  rc=$?
  echo "== --inject ${inject}: exit ${rc}"
  grep -E '^soak: (FAIL|PASSED|FAILED)' "${out}"
  if [[ "${rc}" -ne 1 ]]; then
    fail "--inject ${inject}: exit ${rc}, not 1"
  fi
  grep -q "^soak: FAIL ${expected}: " "${out}" ||
    fail "--inject ${inject}: no '${expected}' reason"
  local reason ok a
  while read -r reason; do
    ok=0
    for a in "${allowed[@]}"; do [[ "${reason}" == "${a}" ]] && ok=1; done
    [[ "${ok}" -eq 1 ]] || fail "--inject ${inject}: unexpected reason '${reason}'"
  done < <(sed -nE 's/^soak: FAIL ([a-z-]+): .*/\1/p' "${out}")
}

# A corrupted message also never arrives intact: it counts as lost too.
case_ corrupt rc-corrupted rc-lost
case_ skip rc-lost
case_ repeat rc-duplicated
case_ reorder rc-reordered
case_ ud-repeat ud-duplicated
case_ ud-corrupt ud-corrupted
case_ ud-misdeliver ud-misdelivered
# The QP in error stops its streams: peers may see more errors, or wait.
case_ error error-completion no-progress killed
case_ stall no-progress killed
case_ leak rss-growth

# No process of any run is left.
if pgrep -f "${worker}" >/dev/null; then
  fail "soak workers are still running: $(pgrep -af "${worker}")"
fi

if [[ "${failures}" -ne 0 ]]; then
  echo "${failures} checks failed"
  exit 1
fi
echo "every check passed"
