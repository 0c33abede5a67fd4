#!/usr/bin/env bash
# docs/drop-in-coverage.md held to the built drop-ins: every exported
# function of libibverbs.so.1 and librdmacm.so.1 and every inline of the
# system's verbs headers has a row, the EOPNOTSUPP rows are the stubs and
# each stub fails so when called, the "header EOPNOTSUPP" rows are the verbs
# coverage_probe sees fail in the header, and every covered row names a test
# target that exists (coverage_table_check.py has the full list).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/python3 python3
need /usr/bin/nm binutils
need /usr/include/infiniband/verbs.h libibverbs-dev
need /usr/include/rdma/rdma_verbs.h librdmacm-dev
[[ -f "${rdmacm_lib}" ]] || fail "no drop-in librdmacm at ${rdmacm_lib}"
root="${TEST_SRCDIR}/${TEST_WORKSPACE}"

out="${TEST_TMPDIR}/coverage_probe.out"
err="${TEST_TMPDIR}/coverage_probe.err"
run_bounded 60 "${root}/dropin/tests/coverage_probe" >"${out}" 2>"${err}"
rc=$?
cat "${out}" "${err}"
[[ ${rc} == 0 ]] || fail "coverage_probe exited ${rc}"
# The header fails these itself: the library never hears of them.
! grep -q 'not supported' "${err}" || fail "a header EOPNOTSUPP verb reached the library"

run_bounded 120 /usr/bin/python3 "${root}/dropin/tests/coverage_table_check.py" \
  --doc "${root}/docs/drop-in-coverage.md" \
  --verbs "${dropin_lib}" \
  --rdmacm "${rdmacm_lib}" \
  --verbs-stubs "${root}/dropin/verbs/stubs.cc" \
  --rdmacm-stubs "${root}/dropin/rdmacm/stubs.cc" \
  --build "${root}/dropin/tests/BUILD.bazel" \
  --probe-output "${out}" \
  --header /usr/include/infiniband/verbs.h \
  --header /usr/include/rdma/rdma_verbs.h \
  --header /usr/include/rdma/rdma_cma.h ||
  fail "docs/drop-in-coverage.md does not match the drop-ins (above)"
echo "PASS"
