"""Tests of fidelity.py on small hand-written gtest XML files."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity  # noqa: E402


def case_xml(suite, test, param, outcome="passed", completions="", errnos="",
             message="", values=""):
    props = ""
    if completions or errnos or values:
        props = "<properties>"
        if completions:
            props += f'<property name="completions" value="{completions}"/>'
        if errnos:
            props += f'<property name="errnos" value="{errnos}"/>'
        if values:
            props += f'<property name="values" value="{values}"/>'
        props += "</properties>"
    body = props
    if outcome == "failed":
        body += f'<failure message="{message}"/>'
    elif outcome == "skipped":
        body += f'<skipped message="x.cc:1&#10;{message}"/>'
    result = "skipped" if outcome == "skipped" else "completed"
    return (f'<testcase name="{test}/{param}" classname="Providers/{suite}" '
            f'status="run" result="{result}">{body}</testcase>')


def write_xml(path, cases):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write('<?xml version="1.0"?><testsuites><testsuite name="s">'
                + "".join(cases) + "</testsuite></testsuites>")


class FidelityTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.host = os.path.join(self.dir, "host.xml")
        self.guest = os.path.join(self.dir, "guest")
        self.sources = os.path.join(self.dir, "sources.tsv")
        with open(self.sources, "w") as f:
            f.write("# kind\tpattern\tsource\n"
                    "rxe\tBadRkeyTest.*\trxe_resp.c\n"
                    "siw\tBadRkeyTest.*\tsiw_verbs.c\n")
        os.makedirs(self.guest)
        with open(os.path.join(self.guest, "environment.txt"), "w") as f:
            f.write("kernel=6.1.0-test\nkernel_package=6.1.1-1\nrdma_core=44.0-2\n")

    def write(self, sim_rxe_status, hw_rxe_status, siw_outcome="skipped"):
        # BadRkeyTest differs from the spec on rxe; SendTest agrees everywhere.
        write_xml(self.host, [
            case_xml("BadRkeyTest", "Write", "sim", completions="REM_ACCESS_ERR"),
            case_xml("BadRkeyTest", "Write", "sim_rxe", completions=sim_rxe_status),
            case_xml("BadRkeyTest", "Write", "sim_siw", siw_outcome, message="no atomics"),
            case_xml("SendTest", "Works", "sim_rxe_64", completions="SUCCESS"),
            case_xml("SendTest", "Works", "sim_64", completions="SUCCESS"),
            case_xml("SendTest", "Works", "sim_siw_64", completions="SUCCESS"),
            case_xml("SendTest", "Works", "hw", "skipped", message="no RDMA device"),
        ])
        write_xml(os.path.join(self.guest, "rxe0", "conformance_test.xml"), [
            case_xml("BadRkeyTest", "Write", "hw_rxe0", completions=hw_rxe_status),
            case_xml("SendTest", "Works", "hw_rxe0_64", completions="SUCCESS"),
        ])
        write_xml(os.path.join(self.guest, "siw0", "conformance_test.xml"), [
            case_xml("BadRkeyTest", "Write", "hw_siw0", "skipped", message="no atomics"),
            case_xml("SendTest", "Works", "hw_siw0_64", completions="SUCCESS"),
        ])

    def run_tool(self, *extra):
        out = io.StringIO()
        err = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = fidelity.main(["--host", self.host, "--guest", self.guest,
                                "--sources", self.sources, *extra])
        return rc, out.getvalue() + err.getvalue()

    def test_agreement_passes_strict_and_writes_the_table(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        doc = os.path.join(self.dir, "fidelity.md")
        rc, out = self.run_tool("--strict", "--out", doc)
        self.assertEqual(rc, 0, out)
        self.assertIn("sim:rxe vs hw:rxe0: 2 cases, 0 disagree", out)
        with open(doc) as f:
            text = f.read()
        self.assertIn("6.1.0-test", text)
        self.assertIn("| `BadRkeyTest.Write` | pass REM_ACCESS_ERR | pass REM_OP_ERR | "
                      "pass REM_OP_ERR | skip [1] | skip [1] | rxe: rxe_resp.c; "
                      "siw: siw_verbs.c |", text)
        self.assertIn("| `SendTest.Works/64` |", text)
        self.assertIn("1. no atomics", text)
        # The table is stable: checking it against itself passes.
        rc, out = self.run_tool("--strict", "--check-doc", doc)
        self.assertEqual(rc, 0, out)

    def test_a_disagreement_fails_strict_and_names_the_case(self):
        self.write("REM_OP_ERR", "REM_ACCESS_ERR")
        rc, out = self.run_tool("--strict")
        self.assertEqual(rc, 1)
        self.assertIn("sim:rxe vs hw:rxe0: 2 cases, 1 disagree", out)
        self.assertIn("BadRkeyTest.Write: sim:rxe passed [REM_OP_ERR] / "
                      "hw:rxe0 passed [REM_ACCESS_ERR]", out)
        rc, _ = self.run_tool()
        self.assertEqual(rc, 0)  # without --strict it only reports

    def test_a_race_of_the_device_counts_as_the_profiles_answer(self):
        self.write("REM_OP_ERR", "REM_ACCESS_ERR")
        races = os.path.join(self.dir, "races.tsv")
        with open(races, "w") as f:
            f.write("# kind\tpattern\tSTATUS=INSTEAD\tsource\n"
                    "rxe\tBadRkeyTest.*\tREM_ACCESS_ERR=REM_OP_ERR\trxe_comp.c\n")
        rc, out = self.run_tool("--strict", "--races", races)
        self.assertEqual(rc, 0, out)
        self.assertIn("sim:rxe vs hw:rxe0: 2 cases, 0 disagree", out)
        # Another status than the raced one still disagrees.
        self.write("REM_OP_ERR", "LOC_QP_OP_ERR")
        rc, out = self.run_tool("--strict", "--races", races)
        self.assertEqual(rc, 1, out)

    def test_a_deviation_without_a_source_fails_strict(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        with open(self.sources, "w") as f:
            f.write("siw\tBadRkeyTest.*\tsiw_verbs.c\n")
        rc, out = self.run_tool("--strict")
        self.assertEqual(rc, 1)
        self.assertIn("1 deviations without a source", out)
        self.assertIn("rxe: BadRkeyTest.Write", out)

    def test_a_stale_doc_fails(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        doc = os.path.join(self.dir, "fidelity.md")
        with open(doc, "w") as f:
            f.write("old\n")
        rc, out = self.run_tool("--check-doc", doc)
        self.assertEqual(rc, 1)
        self.assertIn("differs from this run", out)
        rc, out = self.run_tool("--warn-doc", doc)
        self.assertEqual(rc, 0)
        self.assertIn("differs from this run", out)

    def test_excluded_cases_are_not_disagreements(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        write_xml(os.path.join(self.guest, "rxe0", "conformance_test.xml"), [
            case_xml("SendTest", "Works", "hw_rxe0_64", completions="SUCCESS"),
        ])
        with open(os.path.join(self.guest, "rxe0", "excluded.txt"), "w") as f:
            f.write("*BadRkeyTest.Write/*\tkernel oops\n")
        rc, out = self.run_tool("--strict")
        self.assertEqual(rc, 0, out)

    def test_a_profile_that_did_not_run_is_not_compared(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        with open(self.host) as f:
            text = f.read()
        import re
        text = re.sub(r'<testcase name="[^"]*/sim_siw[^"]*".*?</testcase>', "", text)
        with open(self.host, "w") as f:
            f.write(text)
        rc, out = self.run_tool("--strict")
        self.assertEqual(rc, 0, out)
        self.assertIn("sim:siw vs hw:siw0: no sim:siw results", out)

    def test_a_missing_guest_result_is_bad_input(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        os.remove(os.path.join(self.guest, "siw0", "conformance_test.xml"))
        rc, out = self.run_tool()
        self.assertEqual(rc, 2)
        self.assertIn("siw0", out)

    # The CM cases: a second host XML (//tests:cm_conformance_test's) and
    # <device>/cm_conformance.xml in the guest.
    def write_cm(self, sim_rxe_values, hw_rxe_values, guest=True):
        self.cm_host = os.path.join(self.dir, "cm_host.xml")
        write_xml(self.cm_host, [
            case_xml("CmTest", "ConnectToNobody", "sim", values="client=REJECTED status=8"),
            case_xml("CmTest", "ConnectToNobody", "sim_rxe", values=sim_rxe_values),
            case_xml("CmTest", "ConnectToNobody", "sim_siw", errnos="ECONNREFUSED"),
        ])
        if guest:
            write_xml(os.path.join(self.guest, "rxe0", "cm_conformance.xml"), [
                case_xml("CmTest", "ConnectToNobody", "hw_rxe0", values=hw_rxe_values),
            ])
            write_xml(os.path.join(self.guest, "siw0", "cm_conformance.xml"), [
                case_xml("CmTest", "ConnectToNobody", "hw_siw0", errnos="ECONNREFUSED"),
            ])
        with open(self.sources, "a") as f:
            f.write("siw\tCmTest.ConnectToNobody\tsiw_cm.c\n")

    def test_cm_cases_from_a_second_host_file_are_compared(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        self.write_cm("client=REJECTED status=8", "client=REJECTED status=8")
        doc = os.path.join(self.dir, "fidelity.md")
        rc, out = self.run_tool("--strict", "--host", self.cm_host, "--out", doc)
        self.assertEqual(rc, 0, out)
        self.assertIn("sim:rxe vs hw:rxe0: 3 cases, 0 disagree", out)
        with open(doc) as f:
            text = f.read()
        self.assertIn("| `CmTest.ConnectToNobody` | pass client=REJECTED status=8 | "
                      "pass client=REJECTED status=8 | pass client=REJECTED status=8 | "
                      "pass ECONNREFUSED | pass ECONNREFUSED | siw: siw_cm.c |", text)

    def test_a_cm_disagreement_fails_strict(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        self.write_cm("client=REJECTED status=8", "client=REJECTED status=28")
        rc, out = self.run_tool("--strict", "--host", self.cm_host)
        self.assertEqual(rc, 1, out)
        self.assertIn("CmTest.ConnectToNobody: sim:rxe passed [client=REJECTED status=8] / "
                      "hw:rxe0 passed [client=REJECTED status=28]", out)

    def test_cm_cases_the_guest_did_not_run_fail_strict(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        self.write_cm("client=REJECTED status=8", "", guest=False)
        rc, out = self.run_tool("--strict", "--host", self.cm_host)
        self.assertEqual(rc, 1, out)
        self.assertIn("CmTest.ConnectToNobody: sim:rxe passed [client=REJECTED status=8] / "
                      "hw:rxe0 not run", out)

    def test_a_case_in_two_host_files_is_bad_input(self):
        self.write("REM_OP_ERR", "REM_OP_ERR")
        rc, out = self.run_tool("--host", self.host)
        self.assertEqual(rc, 2)
        self.assertIn("in another file too", out)


if __name__ == "__main__":
    unittest.main()
