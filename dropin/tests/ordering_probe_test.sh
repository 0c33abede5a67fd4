#!/usr/bin/env bash
# ordering_probe, built against the system's libibverbs, over 40 seeds on
# the drop-in (docs/ordering.md): on the ibta profile each of the three
# weak behaviours shows on at least one seed (a source buffer reused before
# its completion reaches the peer, stale data behind a polled flag, an
# unfenced read returning a later write's data), and their protected forms
# (reuse after the completion, a send or an immediate after the data, a
# fence) never go wrong; on the rxe profile (one device, two QPs) and the
# siw profile (two devices through rdma_cm), which do what rxe0 and
# siw0/siw1 did in the guest, nothing weak ever shows.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
probe="${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/ordering_probe"

# run PROFILE [PROBE ARGS]: the probe's lines over seeds 1..40, one
# "seed N check: word" line each (by default on one device, sim0).
run() {
  local profile="$1" seed out rc
  shift
  local args=("$@")
  [[ ${#args[@]} -gt 0 ]] || args=(sim0 0)
  for seed in $(seq 1 40); do
    out="$(VERBSIM_PROFILE="${profile}" VERBSIM_SEED="${seed}" \
      run_bounded 60 "${probe}" "${args[@]}" 2>&1)"
    rc=$?
    [[ ${rc} == 0 ]] || fail "ordering_probe on ${profile}, seed ${seed}, exited ${rc}: ${out}"
    [[ $(wc -l <<<"${out}") == 7 ]] || fail "seed ${seed}: not 7 lines: ${out}"
    sed "s/^/seed ${seed} /" <<<"${out}"
  done
}

# count LINES CHECK WORD...: how many seeds gave CHECK one of the WORDs.
count() {
  local lines="$1" check="$2"
  shift 2
  local pattern
  pattern="$(printf '%s|' "$@")"
  grep -cE "^seed [0-9]+ ${check}: (${pattern%|})$" <<<"${lines}"
}

ibta="$(run ibta)"
rxe="$(run rxe)"
# siw connects through rdma_cm (sim1 <- sim0) and has no immediate data.
siw="$(run siw --cm 127.0.1.2 127.0.1.1)"
echo "== ibta"
for check in reuse reuse_after_completion flag flag_then_send flag_then_imm \
  read_then_write read_then_write_fenced; do
  echo "${check}: $(grep -E "^seed [0-9]+ ${check}: " <<<"${ibta}" |
    awk '{print $4}' | sort | uniq -c | tr '\n' ' ')"
done

# The weak behaviours, each on some seed of ibta.
[[ $(count "${ibta}" reuse overwritten mixed) -ge 1 ]] ||
  fail "ibta: the peer never got the overwritten source bytes"
[[ $(count "${ibta}" flag stale partial) -ge 1 ]] ||
  fail "ibta: never stale data behind the polled flag"
[[ $(count "${ibta}" read_then_write new) -ge 1 ]] ||
  fail "ibta: the unfenced read never returned the later write's data"
# The protected forms, never.
[[ $(count "${ibta}" reuse_after_completion original) == 40 ]] ||
  fail "ibta: a buffer reused after its completion reached the peer"
[[ $(count "${ibta}" flag_then_send fresh) == 40 ]] ||
  fail "ibta: stale data behind a receive completion"
[[ $(count "${ibta}" flag_then_imm fresh) == 40 ]] ||
  fail "ibta: stale data behind an immediate"
[[ $(count "${ibta}" read_then_write_fenced old) == 40 ]] ||
  fail "ibta: a fenced write passed the read"
# always_strong NAME LINES IMM: every seed gave every check its strong
# outcome (flag_then_imm: IMM, "fresh" or "n/a" where there is no immediate).
always_strong() {
  local name="$1" lines="$2" imm="$3" check
  for check in "reuse original" "reuse_after_completion original" \
    "flag fresh" "flag_then_send fresh" "flag_then_imm ${imm}" \
    "read_then_write old" "read_then_write_fenced old"; do
    # shellcheck disable=SC2086
    [[ $(count "${lines}" ${check}) == 40 ]] ||
      fail "${name}: '${check}' not on every seed: $(grep "${check%% *}:" <<<"${lines}" | sort | uniq -c | head -3)"
  done
}
# rxe, and siw (siw0 <-> siw1 in the guest gave it too, without immediate
# data): the strong outcome every time.
always_strong rxe "${rxe}" fresh
always_strong siw "${siw}" n/a
echo "PASS"
