#!/usr/bin/env bash
# The CM conformance cases (//tests:cm_conformance) on the host: the drop-in
# librdmacm.so.1 and libibverbs.so.1 over the sim, once per profile (ibta:
# the column "sim", rxe: "sim_rxe", siw: "sim_siw"), two nodes in one
# process. The three runs' gtest XML become one (Bazel's test.xml, which
# tools/test.sh hands to tools/fidelity/fidelity.py with the guest's
# hw:rxe0 and hw:siw0 runs of the same binary). Fails when a run fails.
set -uo pipefail
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/dropin/tests/dropin_env.sh"
bin="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/cm_conformance"
[[ -x "${bin}" ]] || fail "no binary ${bin}"
work="${TEST_TMPDIR:-$(mktemp -d)}"
export VERBSIM_NODES=2
unset VERBSIM_PROVIDER VERBSIM_UDP
status=0
xmls=()
for profile in ibta rxe siw; do
  xml="${work}/cm_${profile}.xml"
  rm -f "${xml}"
  echo "== VERBSIM_PROFILE=${profile}"
  VERBSIM_PROFILE="${profile}" run_bounded 600 "${bin}" --gtest_output="xml:${xml}"
  rc=$?
  [[ -s "${xml}" ]] || { echo "FAIL: profile ${profile}: no XML (exit ${rc})" >&2; status=1; continue; }
  [[ ${rc} -eq 0 ]] || { echo "FAIL: profile ${profile}: exit ${rc}" >&2; status=1; }
  xmls+=("${xml}")
done
# One document with every run's suites, where Bazel reads a test's XML.
if [[ -n "${XML_OUTPUT_FILE:-}" && ${#xmls[@]} -gt 0 ]]; then
  python3 - "${XML_OUTPUT_FILE}" "${xmls[@]}" <<'PY' || status=1
import sys
import xml.etree.ElementTree as ET
out = ET.Element("testsuites", name="AllTests")
for path in sys.argv[2:]:
    for suite in ET.parse(path).getroot().iter("testsuite"):
        out.append(suite)
ET.ElementTree(out).write(sys.argv[1], encoding="UTF-8", xml_declaration=True)
PY
fi
[[ ${status} -eq 0 ]] && echo "PASS"
exit "${status}"
