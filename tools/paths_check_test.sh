#!/usr/bin/env bash
# tools/paths_check.py on a small repository of its own: a comment naming a
# missing file fails it, naming existing ones (and other projects' paths,
# globs, placeholders) passes. (paths-check: skip this file: the paths
# below are of the fixture.)
set -uo pipefail
check="${PWD}/tools/paths_check.py"
repo="${TEST_TMPDIR:-$(mktemp -d)}/repo"
rm -rf "${repo}"
mkdir -p "${repo}/sim" "${repo}/docs"
cd "${repo}" && git init -q . || exit 1
cat >sim/a.cc <<'CC'
// The rules: docs/rules.md; the tests in sim/ and docs/tutorial/*.md;
// rdma-core tests/utils.py is theirs; docs/tutorial/img/CHAPTER.svg is a
// placeholder.
CC
echo "# rules" >docs/rules.md
git add . && git -c user.email=t@t -c user.name=t commit -qm one
out="$(python3 "${check}" .)" || { echo "FAIL: existing paths refused: ${out}"; exit 1; }
echo "// and docs/gone.md" >>sim/a.cc
git add sim/a.cc
out="$(python3 "${check}" .)"
rc=$?
[[ ${rc} == 1 ]] || { echo "FAIL: a missing path passed (exit ${rc})"; exit 1; }
grep -q "^missing: sim/a.cc:4: docs/gone.md$" <<<"${out}" ||
  { echo "FAIL: the missing path is not named: ${out}"; exit 1; }
echo "PASS"
