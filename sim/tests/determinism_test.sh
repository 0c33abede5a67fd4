#!/usr/bin/env bash
# The same seeded runs in three processes, each with its own heap layout
# (determinism_main's argument) and address-space layout (ASLR): every
# trace hash the same. The hashes also differ between seeds, so they do
# reflect the runs. And they are pinned: determinism_golden.txt holds them,
# so a change of the sim that moves any packet, completion or timing shows
# here. A change that means to do so pins them anew:
#   bazel run //sim/tests:determinism_main -- 1 > sim/tests/determinism_golden.txt
set -uo pipefail
bin="${TEST_SRCDIR}/${TEST_WORKSPACE}/sim/tests/determinism_main"
fail=0
outs=()
for perturb in 1 7777 424242; do
  out="$("${bin}" "${perturb}")" || { echo "FAIL: determinism_main ${perturb} exited $?"; exit 1; }
  outs+=("${out}")
done
echo "${outs[0]}"
[[ $(grep -c "^cq_overflow seed" <<<"${outs[0]}") == 3 ]] || { echo "FAIL: no cq_overflow lines"; fail=1; }
for i in 1 2; do
  if [[ "${outs[$i]}" != "${outs[0]}" ]]; then
    echo "FAIL: another heap layout gave other hashes:"
    diff <(echo "${outs[0]}") <(echo "${outs[$i]}")
    fail=1
  fi
done
distinct=$(grep "^cq_overflow" <<<"${outs[0]}" | awk '{print $NF}' | sort -u | wc -l)
[[ "${distinct}" == 3 ]] || { echo "FAIL: three seeds gave ${distinct} distinct cq_overflow hashes"; fail=1; }
golden="${TEST_SRCDIR}/${TEST_WORKSPACE}/sim/tests/determinism_golden.txt"
if [[ "${outs[0]}" != "$(cat "${golden}")" ]]; then
  echo "FAIL: the trace hashes moved from sim/tests/determinism_golden.txt:"
  diff "${golden}" <(echo "${outs[0]}")
  fail=1
fi
[[ ${fail} == 0 ]] && echo "PASS"
exit "${fail}"
