#!/usr/bin/env bash
# Debian's ibv_devinfo (and -v) on the drop-in libibverbs: the device and
# port attributes come from the sim profile chosen by VERBSIM_PROFILE.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/ibv_devinfo ibverbs-utils

out="$(run_bounded 30 /usr/bin/ibv_devinfo 2>&1)" || fail "ibv_devinfo exited $?: ${out}"
echo "${out}"
[[ "$(grep -c '^hca_id:' <<<"${out}")" == 2 ]] || fail "want hca_id sim0 and sim1"
grep -Eq '^hca_id:\s+sim1$' <<<"${out}" || fail "sim1 missing"
grep -Eq 'state:\s+PORT_ACTIVE \(4\)' <<<"${out}" || fail "port not active"
grep -Eq 'link_layer:\s+Ethernet' <<<"${out}" || fail "link layer not Ethernet"

v="$(run_bounded 30 /usr/bin/ibv_devinfo -v -d sim1 2>&1)" || fail "ibv_devinfo -v exited $?: ${v}"
echo "${v}"
grep -Eq 'GID\[  0\]:\s+::ffff:127\.0\.1\.2, RoCE v2' <<<"${v}" || fail "sim1's GID is not ::ffff:127.0.1.2 (RoCE v2)"
# Another loopback base moves every node's GID.
v="$(VERBSIM_ADDR_BASE=127.2.0.1 run_bounded 30 /usr/bin/ibv_devinfo -v -d sim1 2>&1)" || fail "exit $?: ${v}"
grep -Eq 'GID\[  0\]:\s+::ffff:127\.2\.0\.2, RoCE v2' <<<"${v}" || fail "VERBSIM_ADDR_BASE=127.2.0.1: sim1's GID is not ::ffff:127.2.0.2"
v="$(run_bounded 30 /usr/bin/ibv_devinfo -v -d sim1 2>&1)" || fail "exit $?"
for field in max_qp max_qp_wr max_sge max_cqe max_mr max_srq_wr max_pkeys; do
  grep -Eq "^\s+${field}:\s+[1-9][0-9]*$" <<<"${v}" || fail "-v: ${field} missing or 0"
done

# Another profile and node count (both profiles share the rxe-like limits,
# sim/profile.cc, so only the device list is compared here).
rxe="$(VERBSIM_PROFILE=rxe VERBSIM_NODES=3 run_bounded 30 /usr/bin/ibv_devinfo 2>&1)" || fail "rxe: exit $?"
[[ "$(grep -c '^hca_id:' <<<"${rxe}")" == 3 ]] || fail "VERBSIM_PROFILE=rxe VERBSIM_NODES=3: ${rxe}"

out="$(VERBSIM_PROFILE=nosuch run_bounded 30 /usr/bin/ibv_devinfo 2>&1)"
rc=$?
! killed_by_signal "${rc}" || fail "bad profile: killed by a signal (${rc})"
grep -q "VERBSIM_PROFILE='nosuch'" <<<"${out}" || fail "bad profile not named: ${out}"
grep -q 'No IB devices found' <<<"${out}" || fail "bad profile still gave devices"
echo "PASS"
