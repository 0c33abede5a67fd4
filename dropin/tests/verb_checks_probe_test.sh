#!/usr/bin/env bash
# verb_checks_probe, built against the system's libibverbs, run on the
# drop-in with the ibta, rxe and siw profiles (each with its answers), and the
# audit page docs/drop-in-checks.md held to it: every check the probe
# makes is listed there, and every check listed there is made.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/verb_checks_probe"
doc="${TEST_SRCDIR}/${TEST_WORKSPACE}/docs/drop-in-checks.md"
[[ -f "${doc}" ]] || fail "no ${doc}"
ran=""
for profile in ibta rxe siw; do
  out="$(VERBSIM_PROFILE="${profile}" run_bounded 60 "${probe}" sim0 0 "${profile}" 2>&1)"
  rc=$?
  echo "== ${profile}"
  echo "${out}"
  [[ ${rc} == 0 ]] || fail "verb_checks_probe on ${profile} exited ${rc}"
  grep -q '^verb_checks_probe: [0-9]* checks, 0 failed$' <<<"${out}" ||
    fail "no summary line on ${profile}"
  # Checks made, and checks a profile does not make (each must be listed
  # too, with its reason).
  ran+="$(probe_ids "${out}")"$'\n'
done
check_ids_listed "${doc}" "${ran}"
