#!/usr/bin/env bash
# attrs_probe on the drop-in: with VERBSIM_PROFILE=rxe and =siw it prints
# what rxe0 and siw0 print in the guest (dropin/tests/attrs/<kind>.txt,
# written there by attrs_probe; the guest run compares the devices with the
# same files). With the ibta profile every queue holds exactly what was
# asked (the fewest the spec allows).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
here="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests"
probe="${here}/attrs_probe"
for kind in rxe siw; do
  out="$(VERBSIM_PROFILE="${kind}" run_bounded 60 "${probe}" 2>&1)" ||
    fail "attrs_probe on ${kind} exited $?: ${out}"
  if ! diff -u "${here}/attrs/${kind}.txt" <(echo "${out}"); then
    fail "the ${kind} profile reports other figures than ${kind}0 (above: - device, + sim)"
  fi
  echo "ok: the ${kind} profile reports what ${kind}0 does ($(wc -l <<<"${out}") figures)"
done
out="$(VERBSIM_PROFILE=ibta run_bounded 60 "${probe}" 2>&1)" || fail "attrs_probe on ibta exited $?"
# cq.cqe_for_N N, and "granted A B C D E queried A B C D E" equal to the
# asked numbers in the name.
bad="$(awk '
  /^cq\.cqe_for_[0-9]+ / { split($1, n, "_"); if (n[3] != $2) print }
  /^qp\./ && $2 == "granted" {
    split($1, n, "_"); asked = n[2] " " n[3] " " n[4] " " n[5] " " n[6]
    if ($3 " " $4 " " $5 " " $6 " " $7 != asked || $9 " " $10 " " $11 " " $12 " " $13 != asked) print
  }
  /^srq\./ && $2 == "granted" {
    split($1, n, "_"); if ($6 != n[2] || $7 != n[3]) print
  }' <<<"${out}")"
[[ -z "${bad}" ]] || fail "the ibta profile grants more than asked: ${bad}"
grep -q '^qp\.rc\.asked_100_100_1_1_64 granted 100 100 1 1 64 queried 100 100 1 1 64$' <<<"${out}" ||
  fail "no exact QP grant in the ibta output: ${out}"
echo "ok: the ibta profile grants exactly what was asked"
echo "PASS"
