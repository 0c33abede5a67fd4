#!/usr/bin/env bash
# A differential campaign (docs/fidelity.md "Differential runs"): verbdiff's
# generated programs on sim:rxe vs hw:rxe0 and sim:siw vs hw:siw0, in one
# boot of the rdma_guest.sh guest, several verbdiff processes per device on
# disjoint seed ranges. Prints, per device, the programs run, the
# divergences (known, new, timing, racy) and the programs a second.
#
#   tools/difftest/campaign.sh [--seeds=FIRST:END] [--jobs=N] [--out=DIR]
#                              [--update-known]
#
#   --seeds         seeds per device (default 0:10000)
#   --jobs          verbdiff processes per device (default 2; more than the
#                   guest's CPUs make the devices late, and late devices add
#                   divergences that a rerun does not repeat)
#   --out           where the logs go (default: a new temporary directory)
#   --update-known  run the fixed set (0:200) twice instead and rewrite
#                   tools/difftest/known_rxe.txt and known_siw.txt from it
#
# Builds //tools/difftest:verbdiff first. Exit status: 0 when no new
# divergence was found, 1 when one was, 125 when the guest failed.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${repo}"
first=0 end=10000 jobs=2 out="" update=0
for arg in "$@"; do
  case "${arg}" in
    --seeds=*) IFS=: read -r first end <<<"${arg#--seeds=}" ;;
    --jobs=*) jobs="${arg#--jobs=}" ;;
    --out=*) out="${arg#--out=}" ;;
    --update-known) update=1 first=0 end=200 ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if ! [[ "${first}" =~ ^[0-9]+$ && "${end}" =~ ^[0-9]+$ && "${jobs}" =~ ^[1-9][0-9]*$ ]] ||
    (( end <= first )); then
  echo "campaign: bad --seeds or --jobs" >&2
  exit 2
fi
[[ -n "${out}" ]] || out="$(mktemp -d "${TMPDIR:-/tmp}/verbdiff-campaign.XXXXXX")"
mkdir -p "${out}"
# The default build: a program's time is the devices' (settle and the last
# poll), not the sim's.
bazel build //tools/difftest:verbdiff >&2 || exit 2
# The guest sees the host's files read-only: copy the binary beside the logs.
cp -f "$(bazel info bazel-bin)/tools/difftest/verbdiff" "${out}/verbdiff"

cat >"${out}/in_guest.sh" <<GUEST
#!/bin/bash
cd "${repo}"
run() {  # kind, first, end, log, known?
  "${out}/verbdiff" --a=sim:\$1 --b=hw:\${1}0 --seeds=\$2:\$3 --no-shrink --hang-s=60 \\
    \${5:+--known=tools/difftest/known_\$1.txt} >"\$4" 2>&1
}
for kind in rxe siw; do
  if [[ ${update} == 1 ]]; then
    ( run \${kind} 0 200 "\${VERBSIM_GUEST_OUT}/\${kind}.1.log" &&
      true; run \${kind} 0 200 "\${VERBSIM_GUEST_OUT}/\${kind}.2.log" ) &
    continue
  fi
  step=\$(( (${end} - ${first} + ${jobs} - 1) / ${jobs} ))
  for (( j = 0; j < ${jobs}; ++j )); do
    a=\$(( ${first} + j * step )); b=\$(( a + step < ${end} ? a + step : ${end} ))
    (( a < b )) && run \${kind} \${a} \${b} "\${VERBSIM_GUEST_OUT}/\${kind}.\${j}.log" known &
  done
done
wait
GUEST
chmod +x "${out}/in_guest.sh"
start=$(date +%s)
VERBSIM_GUEST_TIMEOUT="${VERBSIM_GUEST_TIMEOUT:-14400}" \
  tools/guest/rdma_guest.sh --out "${out}" -- "${out}/in_guest.sh"
rc=$?
took=$(( $(date +%s) - start ))
guest_failed=0
if [[ "${rc}" -ne 0 ]]; then
  # A device that oopses leaves its verbdiff stuck and the guest ends
  # without a status; the logs written so far are still summed up below.
  echo "campaign: the guest run failed (exit ${rc}); logs in ${out}" >&2
  [[ "${update}" == 1 ]] && exit 125
  guest_failed=1
fi
if [[ "${update}" == 1 ]]; then
  for kind in rxe siw; do
    python3 tools/difftest/known_from_logs.py "${kind}" \
      "${out}/${kind}.1.log" "${out}/${kind}.2.log" \
      >"tools/difftest/known_${kind}.txt"
    echo "campaign: tools/difftest/known_${kind}.txt: $(grep -c '^[0-9]' "tools/difftest/known_${kind}.txt") seeds"
  done
  exit 0
fi
status=0
for kind in rxe siw; do
  python3 - "${kind}" "${took}" "${out}"/"${kind}".*.log <<'PY' || status=1
import re, sys
kind, took, logs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
n = d = known = new = timing = racy = 0
hangs = []
for log in logs:
    text = open(log).read()
    m = re.search(r"(\d+) programs, (\d+) diverge \((\d+) known, (\d+) new, "
                  r"(\d+) timing, (\d+) racy\)", text)
    hang = re.search(r"seed (\d+) hangs", text)
    if hang:
        hangs.append(hang.group(1))
    if not m:
        print(f"campaign: {log} has no summary" +
              (f" (seed {hang.group(1)} hangs)" if hang else ""),
              file=sys.stderr)
        continue
    n, d, known, new, timing, racy = (
        x + int(y) for x, y in zip((n, d, known, new, timing, racy),
                                   m.groups()))
print(f"campaign: sim:{kind} vs hw:{kind}0: {n} programs, {d} diverge "
      f"({known} known, {new} new, {timing} timing, {racy} racy), "
      f"{n / max(took, 1):.1f} "
      f"programs/s over {took} s" +
      (f"; hung at seeds {', '.join(hangs)}" if hangs else ""))
sys.exit(1 if new or hangs else 0)
PY
done
echo "campaign: logs in ${out}"
if [[ "${guest_failed}" == 1 && "${status}" == 0 ]]; then
  status=125
fi
exit "${status}"
