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

# The seed sweep (--seeds): examples/c-make/flag_poll polls a flag written
# after its data (docs/ordering.md rule W2); on the ibta profile some seeds
# see stale data, and the sweep names the first odd seed and its replay.
flag_poll="${TEST_SRCDIR}/${TEST_WORKSPACE}/examples/c-make/flag_poll"
out="$(timeout 120 "${verbsim}" exec --seeds=1-40 -- "${flag_poll}" 2>&1)"
rc=$?
[[ ${rc} == 1 ]] || bad "a sweep with two endings exited ${rc}, not 1: ${out}"
grep -qE "^ +[0-9]+ .*exit 1 \| stale data behind the flag$" <<<"${out}" ||
  bad "no seed saw the stale data: ${out}"
grep -qE "^ +[0-9]+ .*exit 0 \| data complete when the flag was seen$" <<<"${out}" ||
  bad "no seed saw the data complete: ${out}"
replay="$(grep -A1 "Replay it with:" <<<"${out}" | tail -1)"
seed="$(grep -oE -- "--seed=[0-9]+" <<<"${replay}" | cut -d= -f2)"
[[ -n "${seed}" ]] || bad "no replay command: ${out}"
# The same sweep again gives the same table: a program that polls is
# deterministic per seed on the drop-in (its event pumps are helper threads).
again="$(timeout 120 "${verbsim}" exec --seeds=1-40 -- "${flag_poll}" 2>&1)"
[[ "${again}" == "${out}" ]] || bad "the sweep differs when run again: ${again}"
# The replayed seed ends as the sweep said it did.
said="$(grep -E "^ +[0-9]+ +([0-9]+ )*${seed}( |$)" <<<"${out}" | grep -oE "exit [0-9]+")"
timeout 30 "${verbsim}" exec --seed="${seed}" -- "${flag_poll}" >/dev/null 2>&1
[[ "exit $?" == "${said}" ]] || bad "seed ${seed} replayed with another exit than '${said}'"
# The fixed program (a write with immediate) and the rxe profile: one ending.
out="$(timeout 120 "${verbsim}" exec --seeds=1-40 -- "${flag_poll}" --fixed 2>&1)" ||
  bad "the fixed program ended two ways: ${out}"
grep -q "every seed ended the same way" <<<"${out}" || bad "fixed: ${out}"
out="$(timeout 120 "${verbsim}" exec --profile=rxe --seeds=40 -- "${flag_poll}" 2>&1)" ||
  bad "rxe (in-order placement) ended two ways: ${out}"
# Options stay in the replay command; --lines=0 keeps the exit status only;
# a run over --timeout ends "timed out" and is killed.
out="$(timeout 60 "${verbsim}" exec --profile=ibta --seeds=1-3 --lines=0 -- printenv VERBSIM_SEED 2>&1)"
grep -qE "^ +3 +1 2 3 +exit 0$" <<<"${out}" || bad "--lines=0: ${out}"
out="$(timeout 60 "${verbsim}" exec --seeds=2 --timeout=1 -- sleep 5 2>&1)"
grep -qE "^ +2 +1 2 +timed out after 1 s$" <<<"${out}" || bad "--timeout: ${out}"
out="$(timeout 60 "${verbsim}" exec --profile=ibta --seeds=1-4 -- printenv VERBSIM_SEED 2>&1)"
grep -qF "verbsim exec --profile=ibta --seed=2 -- printenv VERBSIM_SEED" <<<"${out}" ||
  bad "the replay command lacks the options: ${out}"
expect 2 "--seeds wants FIRST-LAST or N" "${verbsim}" exec --seeds=5-2 true
expect 2 "--seeds wants FIRST-LAST or N" "${verbsim}" exec --seeds=0 true
expect 2 "--seed and --seeds together" "${verbsim}" exec --seed=3 --seeds=4 true
expect 2 "--timeout wants" "${verbsim}" exec --seeds=2 --timeout=0 true
expect 127 "cannot run no-such-program" "${verbsim}" exec --seeds=2 no-such-program

# --shared: the command sees VERBSIM_UDP with a free base port and
# local=all; not with a seed sweep, nor with a node count that is not one.
out="$(timeout 60 "${verbsim}" exec --shared -- printenv VERBSIM_UDP 2>&1)"
grep -qE "^udp=[0-9]+,local=all$" <<<"${out}" || bad "--shared: ${out}"
expect 2 "--shared runs in real time" "${verbsim}" exec --shared --seeds=3 true
expect 2 "VERBSIM_NODES='x' is not a count" env VERBSIM_NODES=x "${verbsim}" exec --shared true

[[ ${fail} == 0 ]] || exit 1
echo "PASS"
