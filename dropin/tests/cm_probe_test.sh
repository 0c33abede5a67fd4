#!/usr/bin/env bash
# Runs cm_probe (the rdma_cm API's details: bad input, private data,
# rejection, a connection, disconnect, multicast joins) on the drop-in librdmacm.so.1 and
# libibverbs.so.1, in one process with two sim nodes, and checks the one
# line a call that is not covered prints.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/cm_probe"
err="${TEST_TMPDIR:-/tmp}/cm_probe.stderr"
VERBSIM_NODES=2 run_bounded 60 "${probe}" 2>"${err}"
rc=$?
cat "${err}"
[[ ${rc} -eq 0 ]] || fail "cm_probe exit ${rc}"
grep -qx 'librdmacm (verbsim): rdma_notify is not supported by the verbsim drop-in library (EOPNOTSUPP)' "${err}" \
  || fail "no line naming rdma_notify on stderr"
echo "PASS"
