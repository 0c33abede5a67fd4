#!/usr/bin/env bash
# mw_probe, built against the system's libibverbs, run on the drop-in with
# the ibta, rxe and siw profiles: memory windows through the ABI (on siw,
# which has none, the refusal of ibv_alloc_mw).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/mw_probe"
declare -A outs
for profile in ibta rxe siw; do
  out="$(VERBSIM_PROFILE="${profile}" run_bounded 60 "${probe}" sim0 0 "${profile}" 2>&1)"
  rc=$?
  echo "== ${profile}"
  echo "${out}"
  [[ ${rc} == 0 ]] || fail "mw_probe on ${profile} exited ${rc}"
  grep -q '^mw_probe: [0-9]* checks, 0 failed$' <<<"${out}" ||
    fail "no summary line on ${profile}"
  outs[${profile}]="${out}"
done
# The windows are exercised where the profile has them.
grep -qx 'ok: rdma_read.through_a_wr_bound_window' <<<"${outs[rxe]}" ||
  fail "the rxe profile bound no window through ibv_wr_bind_mw"
echo "PASS"
