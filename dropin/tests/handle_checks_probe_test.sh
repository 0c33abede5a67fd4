#!/usr/bin/env bash
# handle_checks_probe, built against the system's libibverbs, run on the
# drop-in with the ibta, rxe and siw profiles (each with its answers, and
# with the checks of destroyed objects that only the drop-in can make), and
# docs/drop-in-handles.md held to it: every check the probe makes or skips
# is listed there, and every check listed there is made.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/handle_checks_probe"
doc="${TEST_SRCDIR}/${TEST_WORKSPACE}/docs/drop-in-handles.md"
[[ -f "${doc}" ]] || fail "no ${doc}"
ran=""
for profile in ibta rxe siw; do
  out="$(VERBSIM_PROFILE="${profile}" run_bounded 60 "${probe}" sim0 0 "${profile}" sim 2>&1)"
  rc=$?
  echo "== ${profile}"
  echo "${out}"
  [[ ${rc} == 0 ]] || fail "handle_checks_probe on ${profile} exited ${rc}"
  grep -q '^handle_checks_probe: [0-9]* checks, 0 failed$' <<<"${out}" ||
    fail "no summary line on ${profile}"
  ran+="$(probe_ids "${out}")"$'\n'
done
check_ids_listed "${doc}" "${ran}"
