#!/usr/bin/env bash
# A call the drop-in does not cover fails as ibverbs reports failure, with
# one clear line naming the function on stderr, and never crashes.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
need /usr/bin/python3 python3
err="${TEST_TMPDIR}/stderr"
out="$(run_bounded 60 /usr/bin/python3 \
  "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/unsupported_calls.py" 2>"${err}")"
rc=$?
echo "${out}"
cat "${err}"
[[ ${rc} == 0 ]] || fail "the script exited ${rc}"
eop=95  # EOPNOTSUPP on Linux
grep -qx "RESULT ibv_import_device None ${eop}" <<<"${out}" || fail "ibv_import_device: want NULL, errno ${eop}"
grep -qx "RESULT ibv_create_cq_ex None ${eop}" <<<"${out}" || fail "ibv_create_cq_ex: want NULL, errno ${eop}"
grep -qx "RESULT ibv_create_cq_ex_standard made True" <<<"${out}" || fail "ibv_create_cq_ex with the standard flags failed"
for f in ibv_import_device ibv_create_cq_ex; do
  [[ "$(grep -c "^libibverbs (verbsim): ${f}\b.* is not supported" "${err}")" == 1 ]] ||
    fail "want one stderr line naming ${f}"
done
echo "PASS"
