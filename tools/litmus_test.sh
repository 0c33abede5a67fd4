#!/usr/bin/env bash
# `verbsim litmus`: the library of docs/litmus/ holds on sim:ibta, sim:rxe and
# sim:siw over 200 seeds each (nothing forbidden; every weak outcome reached
# where the profile takes the weak choice, never where it does not), and the
# tool fails where it should: an outcome the file does not list, a weak
# outcome never reached, a weak outcome on a profile without it, a syntax
# error. A seed replays as a timeline.
set -euo pipefail

verbsim="${PWD}/tools/verbsim"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

# expect WANT_STATUS PATTERN ARGS...: runs verbsim litmus, checks the exit
# status and that stdout+stderr hold PATTERN.
expect() {
  local want="$1" pattern="$2"
  shift 2
  local rc=0
  "${verbsim}" litmus "$@" >"${tmp}/out" 2>&1 || rc=$?
  if [[ "${rc}" -ne "${want}" ]]; then
    bad "verbsim litmus $* exited ${rc}, not ${want}"
    cat "${tmp}/out"
  elif [[ -n "${pattern}" ]] && ! grep -qF -- "${pattern}" "${tmp}/out"; then
    bad "verbsim litmus $*: output lacks '${pattern}':"
    cat "${tmp}/out"
  fi
}

files=(docs/litmus/*.litmus)
[[ ${#files[@]} -ge 14 ]] || bad "only ${#files[@]} litmus files"

# The library, on every profile.
expect 0 "held" "${files[@]}" --profile=ibta,rxe,siw --seeds=200 --quiet
held=$(grep -c "held: nothing forbidden" "${tmp}/out" || true)
skipped=$(grep -c ": skipped, " "${tmp}/out" || true)
if [[ $((held + skipped)) -ne $((3 * ${#files[@]})) ]]; then
  bad "expected a verdict for each of ${#files[@]} files on 3 profiles, got ${held} held and ${skipped} skipped"
fi
# Skips name what the device lacks (siw: no atomics, no immediate data, and
# it does not start a fenced READ).
[[ "${skipped}" -eq 4 ]] || bad "expected 4 skips (siw: two with atomics, one with immediate data, one with a fenced READ), got ${skipped}"
grep -q "write-then-read-fenced on sim:siw: skipped, the device does not start a fenced READ" "${tmp}/out" ||
  bad "write-then-read-fenced on siw: no skip naming the fenced READ"

# Each weak behaviour of the model shows on ibta with its rule.
expect 0 "" docs/litmus/buffer-reuse.litmus docs/litmus/mp-flag.litmus \
  docs/litmus/read-then-write.litmus --profile=ibta --seeds=200
for rule in "d=2 " "d=1/2" "d=0 " "d=0/1" "r=1 x=1"; do
  line=$(grep -F -- "  ${rule}" "${tmp}/out" | head -1)
  count=$(awk '{print $1}' <<<"${line}")
  if [[ -z "${line}" || "${count}" -eq 0 ]]; then
    bad "weak outcome '${rule}' not reached on ibta"
  fi
done
# ... and never on rxe.
expect 0 "" docs/litmus/buffer-reuse.litmus docs/litmus/mp-flag.litmus \
  docs/litmus/read-then-write.litmus --profile=rxe --seeds=200
if grep -qE "^ +[1-9][0-9]* +[^ ].* weak " "${tmp}/out"; then
  bad "a weak outcome showed on rxe:"
  cat "${tmp}/out"
fi

# An outcome the file does not list is forbidden: exit 1, and the seed.
sed '/weak W2/d' docs/litmus/mp-flag.litmus >"${tmp}/strict.litmus"
expect 1 "FORBIDDEN" "${tmp}/strict.litmus" --profile=ibta --seeds=50
grep -qF "is forbidden (first seed" "${tmp}/out" || bad "no seed named"
grep -qF -- "--seed=" "${tmp}/out" || bad "no replay command"
# ... and the same file holds on rxe, which places in order.
expect 0 "held" "${tmp}/strict.litmus" --profile=rxe --seeds=50

# A weak outcome that cannot happen is not reached: exit 1.
cat docs/litmus/buffer-reuse-inline.litmus >"${tmp}/unreached.litmus"
echo 'outcome d=2 weak B1 "impossible: inline data is copied at post"' \
  >>"${tmp}/unreached.litmus"
expect 1 "NOT REACHED" "${tmp}/unreached.litmus" --profile=ibta --seeds=20

# A weak outcome listed as strong shows on rxe as allowed, but a weak one on
# a profile that does not allow it fails: make rxe look weak by calling a
# strong outcome weak.
sed 's/^outcome d=1 strong.*/outcome d=1 weak W2 "mislabelled"/' \
  docs/litmus/mp-send.litmus >"${tmp}/mislabel.litmus"
expect 1 "NOT ON THIS PROFILE" "${tmp}/mislabel.litmus" --profile=rxe --seeds=5

# Syntax errors: file:line and what was expected; nothing runs (exit 2).
printf 'litmus x\nnodes 2\nqp q A A\n' >"${tmp}/bad1.litmus"
expect 2 "bad1.litmus:3: qp 'q'" "${tmp}/bad1.litmus"
printf 'litmus x\nbuf A.x 8 = 0\nbuf B.y 8 = 0\nqp q A B\npost q write B.y -> A.x\n' \
  >"${tmp}/bad2.litmus"
expect 2 "bad2.litmus:5: buffer 'B.y' is on node B, not A" "${tmp}/bad2.litmus"
printf 'litmus x\nbuf A.x 8 = 0\nobserve v = A.x\noutcome w=0 strong\n' \
  >"${tmp}/bad3.litmus"
expect 2 "bad3.litmus:4: an outcome names every observation" "${tmp}/bad3.litmus"
printf 'litmus x\nbuf A.x 8 = 0\nobserve v = A.x\noutcome v=0 weak Z9\n' \
  >"${tmp}/bad4.litmus"
expect 2 "no weak behaviour is governed by rule 'Z9'" "${tmp}/bad4.litmus"
expect 2 "no profile 'nope'" docs/litmus/mp-flag.litmus --profile=nope
expect 2 "--seeds wants" docs/litmus/mp-flag.litmus --seeds=0

# A seed replays as a timeline: the program's steps, the packets, the
# outcome; the same seed gives the same bytes.
expect 0 "outcome: d=0" docs/litmus/mp-flag.litmus --profile=ibta --seed=1
grep -qF "RDMA_WRITE_ONLY psn 1 len 8" "${tmp}/out" || bad "timeline lacks the flag's packet"
cp "${tmp}/out" "${tmp}/first"
expect 0 "" docs/litmus/mp-flag.litmus --profile=ibta --seed=1
cmp -s "${tmp}/first" "${tmp}/out" || bad "seed 1 replayed differently"

exit "${fail}"
