#!/usr/bin/env bash
# `verbsim exec`: an unmodified program (Debian's ibv_devices and
# ibv_devinfo) sees the simulated devices; the options reach it as the
# VERBSIM_* variables; the command's exit status comes back; a wrong command
# line, a missing drop-in directory and a command that cannot run are each
# refused with their own status and a message.
set -uo pipefail
verbsim="${PWD}/tools/verbsim"
# The sanitizer runtimes a sanitizer build of the drop-in needs first in
# Debian's programs (dropin_env.sh); not its directory: `verbsim exec` finds
# that itself.
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
unset VERBSIM_DROPIN_DIR LD_LIBRARY_PATH
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}
command -v ibv_devices >/dev/null ||
  { echo "FAIL: no ibv_devices: apt-get install ibverbs-utils"; exit 1; }

out="$(timeout 30 "${verbsim}" exec -- ibv_devices 2>&1)" || bad "ibv_devices exited $?: ${out}"
grep -q "sim0" <<<"${out}" && grep -q "sim1" <<<"${out}" ||
  bad "ibv_devices under verbsim exec lists no sim0 and sim1: ${out}"

out="$(timeout 30 "${verbsim}" exec --profile=siw --nodes=3 -- ibv_devinfo 2>&1)" ||
  bad "ibv_devinfo exited $?"
[[ "$(grep -c 'hca_id:' <<<"${out}")" == 3 ]] || bad "--nodes=3 gave: ${out}"
grep -q "transport:.*iWARP" <<<"${out}" || bad "--profile=siw is not iWARP: ${out}"

# (printenv and false, not a shell: dash does not run with the TSan runtime
# preloaded, as a TSan build of the drop-in needs.)
out="$(timeout 30 "${verbsim}" exec --seed=9 --faults="drop op=ACK nth=1" --debug -- \
  printenv VERBSIM_SEED VERBSIM_FAULTS VERBSIM_DEBUG | tr '\n' '|')"
[[ "${out}" == "9|drop op=ACK nth=1|1|" ]] || bad "the options reached the command as '${out}'"

timeout 30 "${verbsim}" exec false
[[ $? == 1 ]] || bad "the command's exit status 1 did not come back"

expect() {
  local want="$1" pattern="$2"
  shift 2
  local err rc
  err="$("$@" 2>&1 >/dev/null)"
  rc=$?
  [[ ${rc} == "${want}" ]] || bad "$* exited ${rc}, not ${want}"
  grep -qF -- "${pattern}" <<<"${err}" || bad "$*: no '${pattern}' in: ${err}"
}
expect 2 "which command?" "${verbsim}" exec
expect 2 "unknown option '--nodez=2'" "${verbsim}" exec --nodez=2 true
expect 2 "--profile= wants a value" "${verbsim}" exec --profile= true
expect 2 "no drop-in libibverbs.so.1" env VERBSIM_DROPIN_DIR=/nonexistent "${verbsim}" exec true
expect 127 "cannot run no-such-program" "${verbsim}" exec no-such-program
"${verbsim}" help exec | grep -q "usage: verbsim exec" || bad "verbsim help exec"

[[ ${fail} == 0 ]] || exit 1
echo "PASS"
