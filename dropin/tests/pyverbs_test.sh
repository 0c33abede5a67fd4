#!/usr/bin/env bash
# Debian's python3-pyverbs on the drop-in libibverbs: an RC loopback pair
# (pyverbs_rc_loopback.py).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/python3 python3
/usr/bin/python3 -c 'import pyverbs.device' 2>/dev/null ||
  fail "pyverbs is missing; install it with: apt-get install python3-pyverbs (tools/install_deps.sh)"
script="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/pyverbs_rc_loopback.py"
for profile in ibta rxe; do
  echo "== VERBSIM_PROFILE=${profile}"
  VERBSIM_PROFILE="${profile}" run_bounded 120 /usr/bin/python3 "${script}" ||
    fail "pyverbs RC loopback on profile ${profile} (exit $?)"
done
echo "PASS"
