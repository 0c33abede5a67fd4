#!/usr/bin/env bash
# Regenerates docs/fidelity.md: builds the conformance suite and the CM
# conformance cases, runs them on the host (the sim's profiles sim, sim:rxe,
# sim:siw; the CM cases through //tests:cm_conformance_test, on the drop-in
# libraries) and in the qemu guest (hw:rxe0, hw:siw0:
# tools/guest/run_conformance.sh), and writes the table with
# tools/fidelity/fidelity.py. Prints where sim profiles and devices
# disagree. About 5 minutes warm.
#
#   bash tools/fidelity.sh [RESULTS_DIR]     (default: a new temporary one)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

results="${1:-$(mktemp -d "${TMPDIR:-/tmp}/verbsim-fidelity.XXXXXX")}"
mkdir -p "${results}"
bazel build //hw:hw_test //tests:conformance_test //tests:cm_conformance \
  //tests:cm_conformance_test
bin="$(bazel info bazel-bin)"
echo "fidelity: host run (sim, sim:rxe, sim:siw) -> ${results}/host.xml" >&2
# The suite's exit status is in the XML; a failing case is a row, not an end.
env -u VERBSIM_PROVIDER "${bin}/tests/conformance_test" \
  --gtest_output="xml:${results}/host.xml" >"${results}/host.log" 2>&1 || true
[[ -s "${results}/host.xml" ]] || { echo "fidelity: the host run wrote no XML (${results}/host.log)" >&2; exit 1; }
echo "fidelity: host CM run (sim, sim:rxe, sim:siw) -> ${results}/host_cm.xml" >&2
# A failing case is a row here too: the XML is kept whatever the test said.
bazel test //tests:cm_conformance_test --cache_test_results=no \
  >"${results}/host_cm.log" 2>&1 || true
cp "$(bazel info bazel-testlogs)/tests/cm_conformance_test/test.xml" \
  "${results}/host_cm.xml" 2>/dev/null
[[ -s "${results}/host_cm.xml" ]] || { echo "fidelity: the host CM run wrote no XML (${results}/host_cm.log)" >&2; exit 1; }
echo "fidelity: guest run (hw:rxe0, hw:siw0) -> ${results}/guest" >&2
bash tools/guest/run_conformance.sh --bin "${bin}" "${results}/guest" >&2
python3 tools/fidelity/fidelity.py --host "${results}/host.xml" \
  --host "${results}/host_cm.xml" --guest "${results}/guest" --out docs/fidelity.md
echo "fidelity: wrote docs/fidelity.md" >&2
