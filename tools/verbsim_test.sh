#!/usr/bin/env bash
# The verbsim CLI: every file of docs/scenarios/ runs with its expectations
# (alone and as the tour), syntax errors give file:line:column, failed
# expectations exit 1, wrong flags get a clear message, the JSON trace parses
# with one slice per work request, the SVG sequence diagram is XML and the
# same bytes every time, and every example of docs/cli.md runs.
set -euo pipefail

verbsim="${PWD}/tools/verbsim"
root="${PWD}"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

# expect_run WANT_STATUS STDERR_PATTERN ARGS...: runs verbsim, checks both.
expect_run() {
  local want="$1" pattern="$2"
  shift 2
  local rc=0
  "${verbsim}" "$@" >"${tmp}/out" 2>"${tmp}/err" || rc=$?
  if [[ "${rc}" -ne "${want}" ]]; then
    bad "verbsim $* exited ${rc}, not ${want}"
    cat "${tmp}/err"
  elif [[ -n "${pattern}" ]] && ! grep -qF -- "${pattern}" "${tmp}/err"; then
    bad "verbsim $*: stderr lacks '${pattern}':"
    cat "${tmp}/err"
  fi
}

# 1. Every scenario file, with its expectations, and the JSON trace.
count=0
for f in docs/scenarios/*.scenario; do
  name=$(basename "${f}" .scenario)
  count=$((count + 1))
  rc=0
  "${verbsim}" run "${f}" --trace-json="${tmp}/${name}.json" \
    --svg="${tmp}/${name}.svg" >"${tmp}/${name}.txt" 2>&1 || rc=$?
  if [[ "${rc}" -ne 0 ]]; then
    bad "${f} exited ${rc}"
    cat "${tmp}/${name}.txt"
    continue
  fi
  if awk 'length > 80 { exit 1 }' "${tmp}/${name}.txt"; then :; else
    bad "${f}: timeline wider than 80 columns"
  fi
  posts=$(grep -cE '^ +[0-9.]+ +sim[0-9]+ +[0-9]+ +post ' "${tmp}/${name}.txt" || true)
  failed_posts=$(grep -cE '^ +[0-9.]+ +sim[0-9]+ +[0-9]+ +post .*: failed,' \
    "${tmp}/${name}.txt" || true)
  if ! python3 - "${tmp}/${name}.json" "$((posts - failed_posts))" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
begins = [e for e in events if e["ph"] == "b"]
ends = [e for e in events if e["ph"] == "e"]
want = int(sys.argv[2])
if len(begins) != want or len(ends) != want:
    sys.exit("%d slices begin, %d end, %d work requests posted"
             % (len(begins), len(ends), want))
tracks = {(e["pid"], e["tid"]) for e in events
          if e["ph"] == "M" and e["name"] == "thread_name"}
for e in begins + [e for e in events if e["ph"] == "i"]:
    if (e["pid"], e["tid"]) not in tracks:
        sys.exit("event on an unnamed track: %r" % e)
for b in begins:
    e = [x for x in ends if x["id"] == b["id"]][0]
    if e["ts"] < b["ts"]:
        sys.exit("slice %r ends before it begins" % b["name"])
if not any(e["ph"] == "i" for e in events):
    sys.exit("no packet instants")
PY
  then
    bad "${f}: JSON trace"
  fi
  # The SVG: an XML document whose root is <svg>, with an arrow per packet
  # (up to the cap) and a mark per completion.
  packets=$(grep -cE '^ +[0-9.]+ +sim[0-9]+ +[0-9]+ +-> ' "${tmp}/${name}.txt" || true)
  if ! python3 - "${tmp}/${name}.svg" "${packets}" <<'PY'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
root = doc.documentElement
if root.tagName != "svg" or root.getAttribute("version") != "1.1":
    sys.exit("root is not an SVG 1.1 <svg>")
texts = [t.firstChild.data for t in doc.getElementsByTagName("text")
         if t.firstChild is not None]
labels = [t for t in texts if " psn " in t]
# Duplicates and resends arrive as their own arrows; a label per send.
if len(labels) < min(int(sys.argv[2]), 48):
    sys.exit("%d packet labels, %s packets sent" % (len(labels), sys.argv[2]))
PY
  then
    bad "${f}: SVG"
  fi
done
# The same scenario and seed draw the same bytes.
"${verbsim}" run docs/scenarios/09-go-back-n.scenario --quiet --seed=3 \
  --svg "${tmp}/again.svg"
"${verbsim}" run docs/scenarios/09-go-back-n.scenario --quiet --seed=3 \
  --svg "${tmp}/09-go-back-n.svg"
cmp -s "${tmp}/again.svg" "${tmp}/09-go-back-n.svg" || bad "--svg differs between runs"
grep -q "stroke-width=\"2.5\"" "${tmp}/again.svg" || bad "no X for the lost packet"
[[ "${count}" -ge 10 ]] || bad "only ${count} scenarios in docs/scenarios"

# 2. The tour runs them all, from the copies built into the binary.
rc=0
"${verbsim}" tour >"${tmp}/tour.txt" 2>&1 || rc=$?
[[ "${rc}" -eq 0 ]] || { bad "tour exited ${rc}"; tail -20 "${tmp}/tour.txt"; }
steps=$(grep -c '^== ' "${tmp}/tour.txt" || true)
[[ "${steps}" -eq "${count}" ]] || bad "tour has ${steps} steps, not ${count}"
grep -q 'What the spec guarantees:' "${tmp}/tour.txt" || bad "tour cites no rule"
awk 'length > 80 { exit 1 }' "${tmp}/tour.txt" || bad "tour wider than 80"
"${verbsim}" tour --list >"${tmp}/list.txt"
[[ $(wc -l <"${tmp}/list.txt") -eq "${count}" ]] || bad "tour --list"
expect_run 0 "" tour --step=9 --quiet --trace-json="${tmp}/t9.json"
expect_run 2 "--step wants 1 to ${count}" tour --step=99

# 3. Syntax errors: file:line:column and what was expected; nothing runs.
syntax() {  # line-text expected-message
  printf 'endpoint a sim0\nendpoint b sim1\nmr m a 64\n%s\n' "$1" \
    >"${tmp}/bad.scenario"
  expect_run 2 "$2" run "${tmp}/bad.scenario"
  if [[ -s "${tmp}/out" ]]; then bad "output from a file with a syntax error"; fi
}
syntax 'connect a c' "bad.scenario:4:11: expected an endpoint name (one of a, b), got 'c'"
syntax 'post write a wr=1 mr=m rkye=5' "bad.scenario:4:24: expected one of wr="
syntax 'post send a wr=x mr=m' "bad.scenario:4:16: expected a number for wr, got 'x'"
syntax 'expect completion REM_ACCES_ERR' "bad.scenario:4:19: expected a completion status"
syntax 'frobnicate a' "bad.scenario:4:1: expected a command (title, spec"
syntax 'post read a wr=1 mr=m' "bad.scenario:4:22: expected remote=<value> at the end of the line"
syntax 'faults drop op=WRITE' "bad.scenario:4:16: expected a fault rule (docs/faults.md): unknown opcode 'WRITE'"
syntax 'fill m "unterminated' "bad.scenario:4:8: expected a closing '\"'"
syntax 'mr m2 a 64 access=REMOTE_FLY' "bad.scenario:4:19: expected access flags"
syntax 'modify a RTR' "expected peer=<value> at the end of the line"
syntax 'endpoint u sim0 type=xd' "bad.scenario:4:22: expected a QP type (rc, uc or ud), got 'xd'"
syntax 'post read a wr=1 mr=m remote=m rkey=win' "bad.scenario:4:37: expected an rkey for rkey (a 32-bit number or a window name), got 'win'"
syntax 'bind w a wr=1 mr=m access=REMOTE_READ' "bad.scenario:4:6: expected a window name (none is defined yet: use \`mw\`), got 'w'"
syntax 'mw w a type=3' "bad.scenario:4:13: expected a number up to 2 for type, got '3'"
syntax 'expect grh m src=sim0' "expected dst=<value> at the end of the line"
syntax 'post send a wr=1 mr=m ah=x dest=b' "bad.scenario:4:23: expected one of wr="
syntax 'expect completion SUCCESS flags=GRH|IMM' "bad.scenario:4:33: expected completion flags such as GRH|WITH_IMM|WITH_INV"
# UD endpoints are not connected, and a UD QP has no peer.
printf 'endpoint u sim0 type=ud\nendpoint v sim1 type=ud\nconnect u v\n' \
  >"${tmp}/bad.scenario"
expect_run 2 "bad.scenario:3:9: expected an RC or UC endpoint (UD is not connected" \
  run "${tmp}/bad.scenario"
printf 'endpoint u sim0 type=ud\nendpoint v sim1 type=ud\nmodify u RTR peer=v\n' \
  >"${tmp}/bad.scenario"
expect_run 2 "bad.scenario:3:14: expected the end of the line (a UD QP has no peer), got 'peer=v'" \
  run "${tmp}/bad.scenario"

# 4. A failed expectation: reported with file:line, exit 1; the run goes on.
printf 'endpoint a sim0\nendpoint b sim1\nexpect state a RTS\nexpect state b RESET\n' \
  >"${tmp}/fails.scenario"
expect_run 1 "fails.scenario:3: expectation failed: expected state a RTS, got RESET" \
  run "${tmp}/fails.scenario"
grep -q "1 of 2 expectations held" "${tmp}/out" || bad "summary of a failing run"
# A post that fails without `expect error` stops the run.
printf 'endpoint a sim0\nmr m a 8\npost send a wr=1 mr=m\n' >"${tmp}/stop.scenario"
expect_run 1 "stop.scenario:3: EINVAL" run "${tmp}/stop.scenario"

# 5. The command line.
expect_run 2 "unknown option '--pcpa'; did you mean --pcap?" run x --pcpa=1
expect_run 2 "unknown command 'rnu'" rnu
expect_run 2 "--seed wants a number, got 'x'" run x --seed=x
expect_run 2 "option '--pcap' needs a value" run x --pcap
expect_run 2 "--pcap, --trace-json, --packets and --svg need the sim provider" \
  run x --svg=x.svg --provider=hw
expect_run 2 "which scenario file?" run
expect_run 2 "cannot open" run "${tmp}/no-such.scenario"
expect_run 1 "--faults: EINVAL: fault text, column 1: unknown action 'smash'" \
  run docs/scenarios/01-connect.scenario --faults="smash prob=1"
expect_run 0 "" help
grep -q "usage: verbsim <command>" "${tmp}/out" || bad "help"
for c in run tour; do
  expect_run 0 "" "${c}" --help
  grep -q "usage: verbsim ${c}" "${tmp}/out" || bad "${c} --help"
  expect_run 0 "" help "${c}"
done
expect_run 2 ""

# 6. docs/cli.md: every ```scenario block is a file, every `$ verbsim` line
# of a ```console block runs with the status it states (0 unless `# exit N`).
mkdir -p "${tmp}/docs"
cp -r docs/scenarios docs/litmus "${tmp}/docs/"
chmod -R u+w "${tmp}/docs"
python3 - "${root}/docs/cli.md" "${tmp}/docs" "${tmp}/commands" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
cmds = []
for kind, body in blocks:
    if kind == "scenario":
        name = re.match(r"# file: (\S+)", body).group(1)
        open(sys.argv[2] + "/../" + name, "w").write(body)
    elif kind == "console":
        for line in body.splitlines():
            if line.startswith("$ verbsim "):
                m = re.search(r"\s+#\s*exit (\d+)\s*$", line)
                want = m.group(1) if m else "0"
                cmd = line[len("$ verbsim "):]
                if m:
                    cmd = cmd[:m.start() - len("$ verbsim ")]
                cmds.append(want + "\t" + cmd.strip())
if len(cmds) < 5:
    sys.exit("only %d commands in docs/cli.md" % len(cmds))
open(sys.argv[3], "w").write("\n".join(cmds) + "\n")
PY
verbsim_() { "${verbsim}" "$@"; }
while IFS=$'\t' read -r want cmd; do
  rc=0
  (cd "${tmp}" && eval "verbsim_ ${cmd}") >"${tmp}/doc.out" 2>&1 || rc=$?
  if [[ "${rc}" -ne "${want}" ]]; then
    bad "docs/cli.md: verbsim ${cmd} exited ${rc}, not ${want}"
    tail -5 "${tmp}/doc.out"
  fi
done <"${tmp}/commands"
# The messages docs/cli.md quotes are the ones printed.
(cd "${tmp}" && "${verbsim}" run typo.scenario 2>&1 || true) >"${tmp}/typo.out"
grep -qF "$(grep -o 'typo.scenario:4:16: .*' "${root}/docs/cli.md")" \
  "${tmp}/typo.out" || bad "docs/cli.md quotes another typo message"

if [[ "${fail}" -eq 0 ]]; then echo "PASS: ${count} scenarios, the tour, errors, docs"; fi
exit "${fail}"
