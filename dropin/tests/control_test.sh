#!/usr/bin/env bash
# The C control API: control_probe on the drop-in (every call) and on the
# system's libibverbs (the API is absent and says so), and the c-make
# example (examples/c-make/retransmit.c) on the drop-in with the ibta and
# rxe profiles: its first SEND is dropped through the API, the message still
# arrives, and the QP's counters show the retransmission.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
dir="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests"
out="$(run_bounded 60 "${dir}/control_probe" 2>&1)" || fail "control_probe: ${out}"
echo "${out}"
grep -q '^control_probe: 2[0-9] checks, 0 failed$' <<<"${out}" || fail "control_probe summary"
out="$(env -u LD_LIBRARY_PATH timeout 60 "${dir}/control_probe" absent 2>&1)" ||
  fail "control_probe absent: ${out}"
echo "${out}"
for profile in ibta rxe; do
  out="$(VERBSIM_PROFILE="${profile}" run_bounded 60 "${dir}/retransmit" 2>&1)" ||
    fail "retransmit on ${profile}: ${out}"
  echo "== ${profile}"
  echo "${out}"
  grep -q '^retransmissions: [1-9]' <<<"${out}" || fail "no retransmission on ${profile}"
done
echo "PASS"
