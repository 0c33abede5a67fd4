#!/usr/bin/env bash
# events_probe, built against the system's libibverbs, run on the drop-in.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/events_probe"
out="$(run_bounded 60 "${probe}" 2>&1)"
rc=$?
echo "${out}"
[[ ${rc} == 0 ]] || fail "events_probe exited ${rc}"
# It ran on the drop-in, not on the system's library (which has no sim0).
grep -q 'events_probe: 0 failed' <<<"${out}" || fail "no summary line"

# The extended verbs: ibv_create_cq_ex, ibv_create_qp_ex, ibv_wr_*.
out="$(run_bounded 60 "${probe}" ex 2>&1)"
rc=$?
echo "${out}"
[[ ${rc} == 0 ]] || fail "events_probe ex exited ${rc}"

# An async event: an SRQ's limit (events_probe.c, async_mode).
out="$(run_bounded 60 "${probe}" async 2>&1)"
rc=$?
echo "${out}"
[[ ${rc} == 0 ]] || fail "events_probe async exited ${rc}"
echo "PASS"
