#!/usr/bin/env bash
# docs/tutorial/img/: every chapter embeds its picture, img/CHAPTER.svg, with
# the command that draws it under it; drawing them all again
# (tools/tutorial_pictures.sh, which runs those commands) gives the same
# bytes as the committed files, so the pictures cannot go stale; each is an
# XML document with an <svg> root; no picture belongs to no chapter.
set -euo pipefail

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail=0
bad() {
  echo "FAIL: $*"
  fail=1
}

VERBSIM="${PWD}/tools/verbsim" bash tools/tutorial_pictures.sh "${tmp}/img" \
  || bad "tools/tutorial_pictures.sh failed"

count=0
for chapter in docs/tutorial/[0-9]*.md; do
  name="$(basename "${chapter}" .md)"
  picture="docs/tutorial/img/${name}.svg"
  count=$((count + 1))
  grep -qE "^!\[[^]]+\]\(img/${name}\.svg\)$" "${chapter}" \
    || bad "${chapter} does not embed img/${name}.svg (![...](img/${name}.svg))"
  if [[ ! -f "${picture}" ]]; then
    bad "${picture} is missing: run bash tools/tutorial_pictures.sh"
    continue
  fi
  if ! cmp -s "${picture}" "${tmp}/img/${name}.svg"; then
    bad "${picture} is stale: run bash tools/tutorial_pictures.sh"
    diff "${picture}" "${tmp}/img/${name}.svg" | head -10 || true
  fi
  python3 - "${picture}" <<'PY' || bad "${picture} is not an SVG document"
import sys, xml.dom.minidom
root = xml.dom.minidom.parse(sys.argv[1]).documentElement
if root.tagName != "svg" or root.getAttribute("xmlns") != "http://www.w3.org/2000/svg":
    sys.exit("root element is %r" % root.tagName)
PY
done
[[ "${count}" -ge 7 ]] || bad "only ${count} chapters"
for picture in docs/tutorial/img/*.svg; do
  [[ -f "docs/tutorial/$(basename "${picture}" .svg).md" ]] \
    || bad "${picture} belongs to no chapter"
done

if [[ "${fail}" -eq 0 ]]; then echo "PASS: ${count} pictures, all current"; fi
exit "${fail}"
