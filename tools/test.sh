#!/usr/bin/env bash
# The whole verbsim test suite:
#   1. plain   `bazel test //...`
#   2. ASan+UBSan `bazel test --config=asan //...`
#   3. libFuzzer `bazel build --config=fuzz //...`
# Every step runs even if an earlier one failed; the exit status is non-zero
# if any failed. The Bazel server is always shut down at the end. The last
# line printed is "tests: N passed, N failed" for the test targets of step 1.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --keep_going: build and run everything that can be, so one broken target
# does not hide the results of the others.
bazel_flags=(--keep_going)
if [[ "${CI:-}" == "true" ]]; then
  # CI runners have 2 cores; keep the log readable.
  bazel_flags+=(--jobs=2 --local_cpu_resources=2 --local_test_jobs=2
                --curses=no --color=no --show_progress_rate_limit=30)
fi

log="$(mktemp)"
status=0
passed=0
failed=0

finish() {
  bazel shutdown >/dev/null 2>&1 || true
  rm -f "${log}"
  echo "tests: ${passed} passed, ${failed} failed"
  exit "${status}"
}
trap finish EXIT
trap 'status=130; exit' INT
trap 'status=143; exit' TERM

# Counts the per-target result lines of a `bazel test` log, e.g.
#   //core:queue_test      (cached) PASSED in 0.1s
#   //sim:fabric_test      FAILED in 2.3s
# and falls back to "Executed N out of M tests: K tests pass ..." when no
# target line is found.
count_results() {
  local clean p f executed total pass
  clean="$(sed -e 's/\x1b\[[0-9;]*[A-Za-z]//g' -e 's/\r//g' "$1")"
  p="$(grep -cE '^//[^ ]+ +(\(cached\) +)?(PASSED|FLAKY)' <<<"${clean}" || true)"
  f="$(grep -cE '^//[^ ]+ +(\(cached\) +)?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|REMOTE FAILURE|BLAZE HALTED)' <<<"${clean}" || true)"
  if (( p + f == 0 )); then
    executed="$(grep -E '^Executed [0-9]+ out of [0-9]+ tests?:' <<<"${clean}" | tail -n 1 || true)"
    if [[ -n "${executed}" ]]; then
      total="$(sed -E 's/^Executed [0-9]+ out of ([0-9]+) .*/\1/' <<<"${executed}")"
      pass="$(grep -oE '[0-9]+ tests? pass' <<<"${executed}" | grep -oE '^[0-9]+' || echo 0)"
      p="${pass}"
      f=$(( total - pass ))
    fi
  fi
  passed="${p}"
  failed="${f}"
}

step() {
  local name="$1" rc
  shift
  echo "==> ${name}: bazel $*" >&2
  bazel "$@" 2>&1 | tee -a "${log}"
  rc="${PIPESTATUS[0]}"
  if [[ "${rc}" -eq 4 && "$1" == "test" ]]; then
    echo "==> ${name}: no test targets" >&2   # exit code 4: nothing to test
    rc=0
  fi
  if [[ "${rc}" -ne 0 ]]; then
    echo "==> ${name}: FAILED (bazel exit ${rc})" >&2
    status=1
  fi
  return 0
}

if ! bash tools/install_deps.sh; then
  echo "==> install_deps.sh failed" >&2
  status=1
  exit
fi

step "tests" test "${bazel_flags[@]}" --test_output=errors //...
count_results "${log}"
step "asan" test "${bazel_flags[@]}" --config=asan --test_output=errors //...
step "fuzz" build "${bazel_flags[@]}" --config=fuzz //...
