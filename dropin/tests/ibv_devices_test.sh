#!/usr/bin/env bash
# Debian's ibv_devices on the drop-in libibverbs: the sim's nodes are listed
# with their GUIDs, VERBSIM_NODES sets how many, a bad value is named; a
# VERBSIM_ADDR_BASE outside 127.0.0.0/8 is refused with the value and the
# rule, and no device is listed.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/ibv_devices ibverbs-utils

out="$(run_bounded 30 /usr/bin/ibv_devices 2>&1)" || fail "ibv_devices exited $?: ${out}"
echo "${out}"
grep -Eq '^\s+sim0\s+02000a00fe000001$' <<<"${out}" || fail "sim0 not listed"
grep -Eq '^\s+sim1\s+02000a00fe000002$' <<<"${out}" || fail "sim1 not listed"
[[ "$(grep -c 'sim[0-9]' <<<"${out}")" == 2 ]] || fail "want 2 devices by default"

out="$(VERBSIM_NODES=5 run_bounded 30 /usr/bin/ibv_devices 2>&1)" || fail "exit $?"
[[ "$(grep -c 'sim[0-9]' <<<"${out}")" == 5 ]] || fail "VERBSIM_NODES=5: ${out}"
grep -Eq '^\s+sim4\s' <<<"${out}" || fail "sim4 not listed"

for bad in 0 65 two; do
  out="$(VERBSIM_NODES="${bad}" run_bounded 30 /usr/bin/ibv_devices 2>&1)"
  rc=$?
  ! killed_by_signal "${rc}" || fail "VERBSIM_NODES=${bad}: killed by a signal (${rc})"
  grep -q "VERBSIM_NODES='${bad}'" <<<"${out}" || fail "no message naming VERBSIM_NODES='${bad}': ${out}"
  ! grep -q 'sim[0-9]' <<<"${out}" || fail "devices listed with VERBSIM_NODES=${bad}"
done

for bad in 10.0.0.1 192.168.1.1 8.8.8.8 127.255.255.255 127.0.0.0 not-an-ip; do
  out="$(VERBSIM_ADDR_BASE="${bad}" run_bounded 30 /usr/bin/ibv_devices 2>&1)"
  rc=$?
  ! killed_by_signal "${rc}" || fail "VERBSIM_ADDR_BASE=${bad}: killed by a signal (${rc})"
  grep -q "${bad}" <<<"${out}" || fail "no message naming VERBSIM_ADDR_BASE ${bad}: ${out}"
  ! grep -q 'sim[0-9]' <<<"${out}" || fail "devices listed with VERBSIM_ADDR_BASE=${bad}"
done
out="$(VERBSIM_ADDR_BASE=10.0.0.1 run_bounded 30 /usr/bin/ibv_devices 2>&1)"
grep -q 'outside the loopback range: every sim node address must lie in 127.0.0.1..127.255.255.254' <<<"${out}" ||
  fail "the refusal does not state the rule: ${out}"
out="$(VERBSIM_ADDR_BASE=127.255.255.254 run_bounded 30 /usr/bin/ibv_devices 2>&1)"
grep -q '127.255.255.254 with 2 node' <<<"${out}" || fail "a base whose second node is the broadcast: ${out}"
out="$(VERBSIM_ADDR_BASE=127.255.255.254 VERBSIM_NODES=1 run_bounded 30 /usr/bin/ibv_devices 2>&1)" || fail "exit $?"
[[ "$(grep -c 'sim[0-9]' <<<"${out}")" == 1 ]] || fail "one node at 127.255.255.254 is in range: ${out}"

out="$(VERBSIM_FAULTS='explode now' run_bounded 30 /usr/bin/ibv_devices 2>&1)"
grep -q 'VERBSIM_FAULTS' <<<"${out}" || fail "bad VERBSIM_FAULTS not named: ${out}"
! grep -q 'sim[0-9]' <<<"${out}" || fail "devices listed with a bad VERBSIM_FAULTS"
echo "PASS"
