#!/usr/bin/env bash
# docs/tutorial/: every `$ bazel run //tools:verbsim -- ARGS` line of a
# ```console block runs as `verbsim ARGS` from the top of the repository and
# exits 0, and the lines quoted after it appear in its output, in order (each
# a part of one output line). Every chapter names a scenario of
# docs/scenarios/ and runs at least one command.
set -euo pipefail

verbsim="${PWD}/tools/verbsim"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
python3 - "${verbsim}" "${tmp}" docs/tutorial/*.md <<'PY'
import os, re, subprocess, sys
verbsim, tmp, chapters = sys.argv[1], sys.argv[2], sys.argv[3:]
prefix = "$ bazel run //tools:verbsim -- "
fails, commands, quoted = [], 0, 0
# Commands run in a scratch directory (files they write land there) that
# sees docs/ as the top of the repository does.
if not os.path.exists(os.path.join(tmp, "docs")):
    os.symlink(os.path.abspath("docs"), os.path.join(tmp, "docs"))
for path in chapters:
    text = open(path).read()
    name = os.path.basename(path)
    runs = 0
    for body in re.findall(r"```console\n(.*?)```", text, re.S):
        cmd, want = None, []
        def run():
            global commands, quoted
            if cmd is None:
                return
            # Quoted arguments (--faults="...") as the shell would pass them.
            args = [a.replace('"', '') for a in re.findall(r'(?:[^\s"]|"[^"]*")+', cmd)]
            p = subprocess.run([verbsim] + args, capture_output=True, text=True,
                               cwd=tmp)
            commands += 1
            if p.returncode != 0:
                fails.append("%s: verbsim %s exited %d:\n%s" %
                             (name, cmd, p.returncode, p.stderr[-500:]))
                return
            lines = p.stdout.splitlines()
            at = 0
            for w in want:
                quoted += 1
                while at < len(lines) and w not in lines[at]:
                    at += 1
                if at == len(lines):
                    fails.append("%s: verbsim %s: output lacks (in order) %r"
                                 % (name, cmd, w))
                    break
                at += 1
        for line in body.splitlines():
            if line.startswith("$ "):
                run()
                if not line.startswith(prefix):
                    fails.append("%s: a command that is not %r: %s" %
                                 (name, prefix, line))
                    cmd = None
                    continue
                cmd, want = line[len(prefix):], []
                runs += 1
            elif line.strip() and cmd is not None:
                want.append(line.strip())
        run()
    if name != "README.md":
        if runs == 0:
            fails.append("%s: no command" % name)
        for s in re.findall(r"docs/scenarios/[\w.-]+\.scenario", text) or [None]:
            if s is None or not os.path.exists(s):
                fails.append("%s: names no scenario of docs/scenarios/ (%s)"
                             % (name, s))
for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print("PASS: %d chapters, %d commands, %d quoted output lines"
      % (len(chapters), commands, quoted))
PY
