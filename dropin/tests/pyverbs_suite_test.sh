#!/usr/bin/env bash
# rdma-core's own test suite, as Debian's python3-pyverbs ships it, on the
# sim through `verbsim exec --shared --profile=rxe` (docs/drop-in.md,
# "rdma-core's test suite"): a copy of the suite is unpacked (some files are
# gzipped) and run unchanged against sim0. It must end with no failure and
# no error, at least MIN_PASSED tests passing, the ten tests of test_rdmacm
# among them (their passive and active sides are two forked processes on
# the one device), and every skip's reason listed in docs/drop-in.md.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/python3 python3
/usr/bin/python3 -c 'import pyverbs.device' 2>/dev/null ||
  fail "pyverbs is missing; install it with: apt-get install python3-pyverbs (tools/install_deps.sh)"
suite=/usr/share/doc/rdma-core/tests
[[ -f "${suite}/run_tests.py" ]] ||
  fail "rdma-core's test suite is missing at ${suite}; install it with: apt-get install python3-pyverbs (tools/install_deps.sh)"
verbsim="${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/verbsim"
doc="${TEST_SRCDIR}/${TEST_WORKSPACE}/docs/drop-in.md"
MIN_PASSED=96

if [[ -n "${LD_PRELOAD:-}" ]]; then
  # Python and the suite's forked processes under a preloaded sanitizer
  # runtime take minutes per case; the plain run checks the library.
  echo "SKIP: the suite runs in the plain configuration only (a sanitizer runtime is preloaded here)"
  exit 0
fi

work="$(mktemp -d "${TEST_TMPDIR:-/tmp}/pyverbs_suite.XXXXXX")"
mkdir -p "${work}/tests"
cp -r "${suite}/." "${work}/tests/"
find "${work}/tests" -name '*.gz' -exec gunzip -f {} +

cd "${work}"
# rdma-core's runner, from the copy:
VERBSIM_NODES=2 run_bounded 600 "${verbsim}" exec --shared --profile=rxe -- \
  /usr/bin/python3 tests/run_tests.py --dev sim0 --port 1 --gid 0 -v `# rdma-core` \
  >"${work}/suite.log" 2>&1
rc=$?
tail -n 4 "${work}/suite.log"
summary="$(grep -E '^(OK|FAILED)' "${work}/suite.log" | tail -n 1)"
ran="$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "${work}/suite.log")"
passed="$(grep -cE '(^|\.\.\. |^)ok$' "${work}/suite.log")"
echo "== suite: exit ${rc}, ${ran:-?} run, ${passed} passed; ${summary}"
if [[ ${rc} -ne 0 || ${summary} != OK* ]]; then
  grep -E '^(ERROR|FAIL):' "${work}/suite.log"
  grep -E '(ERROR|FAIL)$' "${work}/suite.log"
  fail "the suite did not pass (exit ${rc}); log above"
fi
[[ ${passed} -ge ${MIN_PASSED} ]] ||
  fail "${passed} tests passed, fewer than ${MIN_PASSED}"

# The tests of test_rdmacm: two forked processes on sim0, connected or in
# a multicast group.
for t in test_rdmacm_sync_traffic test_rdmacm_async_traffic \
         test_rdmacm_async_reject_traffic test_rdmacm_async_traffic_external_qp \
         test_rdmacm_async_udp_traffic test_rdmacm_async_read \
         test_rdmacm_async_write test_rdmacm_async_multicast_traffic \
         test_rdmacm_async_ex_multicast_traffic \
         test_rdmacm_async_ex_leave_multicast_traffic; do
  # The verdict ends the test's line or a later one (after what it printed).
  verdict="$(awk -v t="${t}" '
    index($0, t " ") == 1 { on = 1 }
    on && (/(ok|ERROR|FAIL)$/ || /skipped /) { print; exit }' "${work}/suite.log")"
  [[ ${verdict} == *ok ]] || fail "${t} did not pass: ${verdict}"
done

# Every reason a test was skipped for is in the document, verbatim.
unlisted=0
while IFS= read -r reason; do
  if ! grep -qF -- "\`${reason}\`" "${doc}"; then
    echo "skip reason not in docs/drop-in.md: ${reason}"
    unlisted=$(( unlisted + 1 ))
  fi
done < <(grep -o "skipped '.*'" "${work}/suite.log" | sed "s/^skipped '//; s/'\$//" | sort -u)
[[ ${unlisted} -eq 0 ]] || fail "${unlisted} skip reasons are not listed in docs/drop-in.md"
echo "PASS"
