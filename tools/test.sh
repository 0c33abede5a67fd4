#!/usr/bin/env bash
# The whole verbsim test suite:
#   1. plain   `bazel test //...`
#   2. ASan+UBSan `bazel test --config=asan //...`, then TSan
#      `bazel test --config=tsan //...` (the RC property test with a tenth
#      of its messages there, .bazelrc)
#   3. libFuzzer `bazel build --config=fuzz //...`
#   4. when that build succeeded, each fuzz harness (//fuzz:*_fuzzer) for
#      VERBSIM_FUZZ_SECONDS seconds (default 60; 0 skips it) on a copy of
#      its committed corpus (fuzz/corpus/<name>/ is never modified); a
#      finding fails the run and leaves its reproducer, with the command
#      that replays it, in the output
#   5. the hw provider's tests, the conformance suite and the CM conformance
#      cases on real software RDMA devices, hw:rxe0 and hw:siw0, in a qemu
#      guest (tools/guest/run_conformance.sh on the binaries of step 1); a
#      guest that does not boot or a provider that does not come up fails
#      the run. Then tools/fidelity/fidelity.py compares, case by case,
#      sim:rxe with hw:rxe0 and sim:siw with hw:siw0 (outcome, completion
#      statuses, errnos, noted values; the host's side of the CM cases is
#      //tests:cm_conformance_test's XML from step 1): any disagreement
#      fails the run. The differential runs' fixed set (tools/difftest,
#      200 generated programs per device) runs there too: a divergence not
#      in tools/difftest/known_<kind>.txt fails the run. VERBSIM_SKIP_GUEST=1
#      skips this step (it says so).
# Before step 1, tools/paths_check.py: every repository path named in a
# comment or a document exists. After step 1, tools/examples_test.sh: the
# Debian package installed into a scratch root and the example projects
# (examples/) built and run against it; then tools/soak.sh --seconds 60 (a
# soak run of 4 processes on one sim fabric, about 65 s, docs/reliability.md).
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
step_rc=0

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
  step_rc="${rc}"
  return 0
}

# Runs each libFuzzer harness of the fuzz build for a bounded time on a copy
# of its corpus. A crash, leak, timeout or out-of-memory is a finding: the
# run fails and the reproducer stays where it is printed. Resident memory is
# bounded: past 300 MB (-rss_limit_mb; one allocation past it likewise,
# libFuzzer's -malloc_limit_mb defaults to the same) the run stops with an
# out-of-memory finding. The harnesses stay far below it with the smaller
# ASan quarantine their binaries set (fuzz/asan_options.cc;
# docs/fuzzing.md "Memory").
fuzz_run() {
  local seconds="${VERBSIM_FUZZ_SECONDS:-60}"
  if ! [[ "${seconds}" =~ ^[0-9]+$ ]]; then
    echo "==> fuzz run: FAILED (VERBSIM_FUZZ_SECONDS='${seconds}' is not a number of seconds)" >&2
    status=1
    return 0
  fi
  if [[ "${seconds}" -eq 0 ]]; then
    echo "==> fuzz run: skipped (VERBSIM_FUZZ_SECONDS=0)" >&2
    return 0
  fi
  local bin
  if ! bin="$(bazel info --config=fuzz bazel-bin 2>/dev/null)" || [[ -z "${bin}" ]]; then
    echo "==> fuzz run: FAILED (bazel info --config=fuzz bazel-bin)" >&2
    status=1
    return 0
  fi
  local name work rc found dict summary artifact
  for name in reg_fuzzer rkey_fuzzer sequence_fuzzer wire_fuzzer \
      fault_text_fuzzer scenario_fuzzer provider_spec_fuzzer \
      environment_fuzzer; do
    if [[ ! -x "${bin}/fuzz/${name}" ]]; then
      echo "==> fuzz run ${name}: FAILED (no binary ${bin}/fuzz/${name})" >&2
      status=1
      continue
    fi
    work="$(mktemp -d "${TMPDIR:-/tmp}/verbsim-fuzz-${name}.XXXXXX")"
    mkdir -p "${work}/corpus" "${work}/artifacts"
    cp -R "fuzz/corpus/${name}/." "${work}/corpus/"
    dict=()
    [[ -f "fuzz/${name}.dict" ]] && dict=("-dict=fuzz/${name}.dict")
    echo "==> fuzz run ${name}: ${seconds}s on a copy of fuzz/corpus/${name}" >&2
    "${bin}/fuzz/${name}" -max_total_time="${seconds}" -timeout=30 \
      -rss_limit_mb=300 -print_final_stats=1 \
      -artifact_prefix="${work}/artifacts/" \
      ${dict[@]+"${dict[@]}"} "${work}/corpus" >"${work}/log" 2>&1
    rc=$?
    summary="$(grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "${work}/log" | tr -s ' \t' ' ')"
    [[ -n "${summary}" ]] && sed 's/^/    /' <<<"${summary}" >&2
    found="$(find "${work}/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' \
               -o -name 'timeout-*' -o -name 'oom-*' \) | sort)"
    if [[ "${rc}" -ne 0 || -n "${found}" ]]; then
      status=1
      echo "==> fuzz run ${name}: FINDING (libFuzzer exit ${rc}); log: ${work}/log" >&2
      grep -E 'INVARIANT VIOLATED|ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error|SUMMARY' \
        "${work}/log" | head -n 5 | sed 's/^/    /' >&2
      while IFS= read -r artifact; do
        [[ -z "${artifact}" ]] && continue
        echo "    reproducer: ${artifact}" >&2
        echo "    replay:     VERBSIM_FUZZ_VERBOSE=1 ${bin}/fuzz/${name} ${artifact}" >&2
        echo "    or (gcc):   bazel run //fuzz:${name} -- ${artifact}" >&2
      done <<<"${found}"
    else
      echo "==> fuzz run ${name}: no finding" >&2
      rm -rf "${work}"
    fi
  done
}

# Step 5: the suite on rxe and siw in the guest, on step 1's binaries.
guest_run() {
  if [[ "${VERBSIM_SKIP_GUEST:-}" == "1" ]]; then
    echo "==> guest: skipped (VERBSIM_SKIP_GUEST=1)" >&2
    return 0
  fi
  local bin results rc
  if ! bin="$(bazel info bazel-bin 2>/dev/null)" || [[ -z "${bin}" ]]; then
    echo "==> guest: FAILED (bazel info bazel-bin)" >&2
    status=1
    return 0
  fi
  results="$(mktemp -d "${TMPDIR:-/tmp}/verbsim-guest-results.XXXXXX")"
  echo "==> guest: //hw:hw_test, //tests:conformance_test and //tests:cm_conformance on hw:rxe0 and hw:siw0" >&2
  bash tools/guest/run_conformance.sh --bin "${bin}" "${results}" >&2
  rc=$?
  if [[ "${rc}" -ne 0 ]]; then
    echo "==> guest: FAILED (run_conformance.sh exit ${rc}); results in ${results}" >&2
    status=1
  else
    echo "==> guest: ran; per-case results in ${results}" >&2
    fidelity_check "${results}"
    difftest_check "${results}"
  fi
}

# Step 7: the differential runs' fixed set, which step 5 ran in the guest
# (tools/guest/conformance_guest.sh): a divergence not listed in
# tools/difftest/known_<kind>.txt that comes back on its reruns fails the run.
difftest_check() {
  local device rc
  for device in rxe0 siw0; do
    rc="$(cat "$1/${device}/verbdiff.rc" 2>/dev/null || echo missing)"
    grep -h '^verbdiff: .* programs' "$1/${device}/verbdiff.log" >&2 2>/dev/null
    if [[ "${rc}" != 0 ]]; then
      echo "==> difftest: FAILED on ${device} (verbdiff exit ${rc}; the new divergences, each with the command that replays it, are in $1/${device}/verbdiff.log)" >&2
      status=1
    else
      echo "==> difftest: ${device}: no new divergence" >&2
    fi
  done
}

# Step 6: every case of the sim's rxe and siw profiles against hw:rxe0 and
# hw:siw0 (tools/fidelity/fidelity.py on step 1's host XML and step 5's).
fidelity_check() {
  local testlogs
  if ! testlogs="$(bazel info bazel-testlogs 2>/dev/null)" || [[ -z "${testlogs}" ]]; then
    echo "==> fidelity: FAILED (bazel info bazel-testlogs)" >&2
    status=1
    return 0
  fi
  echo "==> fidelity: sim:rxe vs hw:rxe0, sim:siw vs hw:siw0" >&2
  # --strict: a case where a profile and its device disagree fails the run.
  # docs/fidelity.md going stale only warns (regenerate: tools/fidelity.sh).
  if ! python3 tools/fidelity/fidelity.py --strict --warn-doc docs/fidelity.md \
      --host "${testlogs}/tests/conformance_test/test.xml" \
      --host "${testlogs}/tests/cm_conformance_test/test.xml" --guest "$1" >&2; then
    echo "==> fidelity: FAILED (a sim profile and its device disagree)" >&2
    status=1
  else
    echo "==> fidelity: every compared case agrees" >&2
  fi
}

if ! bash tools/install_deps.sh; then
  echo "==> install_deps.sh failed" >&2
  status=1
  exit
fi

# Every repository path a comment or a document names exists.
echo "==> paths: tools/paths_check.py" >&2
if ! python3 tools/paths_check.py . >&2; then
  echo "==> paths: FAILED" >&2
  status=1
fi
step "tests" test "${bazel_flags[@]}" --test_output=errors //...
count_results "${log}"
# verbsim as another project uses it: the .deb installed into a scratch
# root, the example projects built against it and run (docs/install.md).
echo "==> examples: tools/examples_test.sh" >&2
if ! bash tools/examples_test.sh; then
  echo "==> examples: FAILED" >&2
  status=1
fi
# A 60-second soak run on the plain build: worker processes on one sim fabric
# over UDP, mixed RC and UD traffic under fault rules, beside a CPU load; every
# message checked, memory and progress watched (docs/reliability.md "Soak").
echo "==> soak: tools/soak.sh --seconds 60" >&2
if bash tools/soak.sh --seconds 60; then
  echo "==> soak: passed" >&2
else
  echo "==> soak: FAILED" >&2
  status=1
fi
step "asan" test "${bazel_flags[@]}" --config=asan --test_output=errors //...
step "tsan" test "${bazel_flags[@]}" --config=tsan --test_output=errors //...
step "fuzz" build "${bazel_flags[@]}" --config=fuzz //...
if [[ "${step_rc}" -eq 0 ]]; then
  fuzz_run
else
  echo "==> fuzz run: skipped (the fuzz build failed)" >&2
fi
guest_run
