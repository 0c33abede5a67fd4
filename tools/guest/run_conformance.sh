#!/usr/bin/env bash
# Runs the hw provider's tests (//hw:hw_test), the conformance suite
# (//tests:conformance_test) and the CM conformance cases
# (//tests:cm_conformance) against real software RDMA devices, hw:rxe0
# (Soft-RoCE) and hw:siw0 (soft-iWARP), in one boot of the rdma_guest.sh
# guest, and on each device the drop-in's C probes
# (//dropin/tests:verb_checks_probe, :arg_checks_probe, :handle_checks_probe,
# :mw_probe) with that device's
# answers. Builds nothing: build those targets first.
#
#   tools/guest/run_conformance.sh [--bin BAZEL_BIN] RESULTS_DIR
#
#   --bin BAZEL_BIN  the bazel-bin directory holding hw/hw_test and
#                    tests/conformance_test (default: `bazel info bazel-bin`,
#                    run in the repository)
#   RESULTS_DIR      host directory for the results (created):
#                      <device>/hw_test.xml, <device>/conformance_test.xml,
#                      <device>/cm_conformance.xml (gtest XML), <device>/*.log (full output),
#                      <device>/ibv_devinfo.txt, <device>/probes.log
#
# Environment:
#   VERBSIM_SKIP_GUEST=1      skip the whole thing (prints why, exits 0)
#   VERBSIM_GUEST_PROVIDERS   specs to run (default "hw:rxe0 hw:siw0")
#   VERBSIM_GUEST_STRICT=1    also fail when a test case fails
#   VERBSIM_GUEST_GTEST_FILTER  run only the cases this gtest filter names,
#                             in both binaries (e.g. "*SrqTest.*")
#   and those of rdma_guest.sh (VERBSIM_GUEST_CACHE, VERBSIM_GUEST_TIMEOUT ...)
#
# Prints one line per provider and binary: "guest hw:rxe0 conformance_test:
# 410 run, 380 passed, 22 failed, 8 skipped". Exit status: 0 when every
# binary ran to its end for every provider (failing test cases are in the
# XML and the summary; they fail the run only with VERBSIM_GUEST_STRICT=1);
# 1 when a binary crashed, hung or wrote no XML, a probe failed or was not
# built, or a strict run had failures; 2 for bad usage or missing binaries; 124 when the guest timed
# out; 125 when the guest did not boot or a provider did not come up.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"

if [[ "${VERBSIM_SKIP_GUEST:-}" == "1" ]]; then
  echo "guest tests skipped (VERBSIM_SKIP_GUEST=1)"
  exit 0
fi

usage() {
  echo "usage: $0 [--bin BAZEL_BIN] RESULTS_DIR" >&2
  exit 2
}
bin=""
results=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) [[ $# -ge 2 ]] || usage; bin="$2"; shift 2 ;;
    --bin=*) bin="${1#--bin=}"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [[ -z "${results}" ]] || usage; results="$1"; shift ;;
  esac
done
[[ -n "${results}" ]] || usage

if [[ -z "${bin}" ]]; then
  bin="$(cd "${repo}" && bazel info bazel-bin 2>/dev/null)" || bin=""
  [[ -n "${bin}" ]] || { echo "run_conformance: 'bazel info bazel-bin' failed: pass --bin" >&2; exit 2; }
fi
[[ -d "${bin}" ]] || { echo "run_conformance: no directory ${bin}" >&2; exit 2; }
bin="$(cd "${bin}" && pwd)"
for test in hw/hw_test tests/conformance_test tests/cm_conformance; do
  if [[ ! -x "${bin}/${test}" ]]; then
    echo "run_conformance: ${bin}/${test} is missing: build //hw:hw_test, //tests:conformance_test and //tests:cm_conformance first" >&2
    exit 2
  fi
done

mkdir -p "${results}"
results="$(cd "${results}" && pwd)"
read -r -a specs <<<"${VERBSIM_GUEST_PROVIDERS:-hw:rxe0 hw:siw0}"
for spec in "${specs[@]}"; do
  [[ "${spec}" =~ ^hw:[A-Za-z0-9_]+$ ]] || { echo "run_conformance: '${spec}' is not hw:<device>" >&2; exit 2; }
  rm -rf "${results:?}/${spec#hw:}"
done

start="$(date +%s)"
# The binaries' runfiles and shared libraries are found relative to the
# binaries themselves, which the guest sees at the same paths.
"${here}/rdma_guest.sh" --out "${results}" \
  ${VERBSIM_GUEST_GTEST_FILTER:+-e "VERBSIM_GUEST_GTEST_FILTER=${VERBSIM_GUEST_GTEST_FILTER}"} -- \
  "${here}/conformance_guest.sh" "${bin}" "${specs[@]}"
rc=$?
echo "guest: $(( $(date +%s) - start )) s in all (boot, set-up and tests)"

# Summaries from the XML, and the probes' exit lines (conformance_guest.sh).
failed_cases=0
probe_failures=0
for spec in "${specs[@]}"; do
  log="${results}/${spec#hw:}/probes.log"
  [[ -s "${log}" ]] || continue
  while read -r line; do
    echo "guest ${line#conformance_guest: }"
    [[ "${line}" == *": exit 0" ]] || probe_failures=$(( probe_failures + 1 ))
  done < <(grep '^conformance_guest: ' "${log}")
done
for spec in "${specs[@]}"; do
  for name in hw_test conformance_test cm_conformance; do
    xml="${results}/${spec#hw:}/${name}.xml"
    [[ -s "${xml}" ]] || continue
    line="$(python3 - "${xml}" <<'EOF'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
run = passed = failed = skipped = 0
for case in root.iter("testcase"):
    if case.get("status") == "notrun":
        continue
    run += 1
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None or case.get("result") == "skipped":
        skipped += 1
    else:
        passed += 1
print(f"{run} run, {passed} passed, {failed} failed, {skipped} skipped")
EOF
)" || line="unreadable XML"
    echo "guest ${spec} ${name}: ${line}"
    f="$(sed -n 's/.* \([0-9][0-9]*\) failed,.*/\1/p' <<<"${line}")"
    failed_cases=$(( failed_cases + ${f:-0} ))
  done
done

if [[ ${rc} -ne 0 ]]; then
  case "${rc}" in
    124) echo "run_conformance: the guest timed out" >&2 ;;
    125) echo "run_conformance: the guest did not boot or a provider did not come up" >&2 ;;
    *) echo "run_conformance: a test binary crashed, hung or wrote no XML" >&2; rc=1 ;;
  esac
  exit "${rc}"
fi
if [[ ${probe_failures} -gt 0 ]]; then
  # The probes' answers are the drop-in's claims about rxe: one that rxe0
  # does not give fails the run (their output: <device>/probes.log).
  echo "run_conformance: ${probe_failures} drop-in probe(s) failed or were not built on the device" >&2
  exit 1
fi
if [[ "${VERBSIM_GUEST_STRICT:-}" == "1" && ${failed_cases} -gt 0 ]]; then
  echo "run_conformance: ${failed_cases} test cases failed (VERBSIM_GUEST_STRICT=1)" >&2
  exit 1
fi
exit 0
