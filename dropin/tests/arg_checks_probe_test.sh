#!/usr/bin/env bash
# arg_checks_probe, built against the system's libibverbs, run on the
# drop-in on each profile (the checks are the kernel's and rxe's; on the
# siw profile, an iWARP device, only those that need no connected QP).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/arg_checks_probe"
for profile in ibta rxe siw; do
  out="$(VERBSIM_PROFILE="${profile}" run_bounded 60 "${probe}" 2>&1)"
  rc=$?
  echo "== ${profile}"
  echo "${out}"
  [[ ${rc} == 0 ]] || fail "arg_checks_probe on ${profile} exited ${rc}"
  grep -q '^arg_checks_probe: 0 failed$' <<<"${out}" || fail "no summary line on ${profile}"
done
echo "PASS"
