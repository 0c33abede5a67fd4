#!/usr/bin/env bash
# threads_probe on the drop-in (ibta profile): 8 threads, 1,000 iterations
# each, in four shapes (objects made, connected, used and destroyed in a
# loop; receives posted to one SRQ while others consume them; one thread
# polling while the others post; a QP destroyed while others post to it). Bounded in time; the probe has its own
# alarm too. Under `--config=tsan` the test command runs it with TSan.
# THREADS_PROBE_ITERS lowers the iteration count (the TSan run uses it).
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/threads_probe"
iters="${THREADS_PROBE_ITERS:-1000}"
out="$(VERBSIM_PROFILE=ibta run_bounded 280 "${probe}" sim0 0 8 "${iters}" 2>&1)"
rc=$?
echo "${out}"
[[ ${rc} == 0 ]] || fail "threads_probe exited ${rc}"
grep -q '^threads_probe: 4 checks, 0 failed$' <<<"${out}" || fail "no summary line"
echo "PASS"
