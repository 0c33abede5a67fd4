"""Holds docs/drop-in-coverage.md to the built drop-ins (coverage_table_test.sh).

Fails, naming the calls, when:
  - a function either library exports has no row, or a row names a call
    that is neither exported nor an inline of the system's headers;
  - an inline of <infiniband/verbs.h>, <rdma/rdma_verbs.h> or
    <rdma/rdma_cma.h> has no row (names beginning with "_" are the headers'
    own plumbing and are left out);
  - the rows marked EOPNOTSUPP (and "private, EOPNOTSUPP") are not exactly
    the stubs of dropin/verbs/stubs.cc and dropin/rdmacm/stubs.cc, or one of
    those stubs, called, does not fail with EOPNOTSUPP and one line on
    stderr;
  - the "header EOPNOTSUPP" rows are not exactly the verbs coverage_probe
    saw fail in the header with EOPNOTSUPP;
  - a "private" row is not an IBVERBS_PRIVATE_* export, or such an export
    has another status; a header status names an exported function;
  - a covered row names no test, or a test that is not a target of
    dropin/tests/BUILD.bazel; an untested row names one; a "limit" row
    states none.
"""
import argparse
import ctypes
import errno
import os
import re
import subprocess
import sys
import tempfile

STATUSES = {
    "covered",
    "covered, limit",
    "covered, untested",
    "EOPNOTSUPP",
    "header EOPNOTSUPP",
    "not reachable",
    "header only",
    "private",
    "private, EOPNOTSUPP",
}
STUB_STATUSES = {"EOPNOTSUPP", "private, EOPNOTSUPP"}
PRIVATE_STATUSES = {"private", "private, EOPNOTSUPP"}
HEADER_STATUSES = {"header EOPNOTSUPP", "not reachable", "header only"}
TESTED_STATUSES = {"covered", "covered, limit"}

problems = []


def problem(text):
    problems.append(text)


def listed(names):
    return " ".join(sorted(names))


def exports(lib):
    """Name -> version node of every symbol LIB defines for other objects."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        kind, symbol = fields[1], fields[2]
        # A: a version node; lower case: a local symbol (not for programs).
        if kind == "A" or kind.islower():
            continue
        name, _, version = symbol.partition("@")
        result[name] = version.lstrip("@")
    return result


def header_inlines(paths):
    names = set()
    pattern = re.compile(
        r"\bstatic\s+(?:__inline__|__inline|inline)\b[^;{}()]*?"
        r"\b([A-Za-z_]\w*)\s*\(")
    for path in paths:
        with open(path) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        names.update(m.group(1) for m in pattern.finditer(text))
    return {n for n in names if not n.startswith("_")}


def stubs(path, macros):
    with open(path) as f:
        text = f.read()
    return set(re.findall(r"^(?:%s)\((\w+)\)" % "|".join(macros), text,
                          flags=re.M))


def rows(doc):
    """(names, status, tests, notes, line number) of every table row."""
    result = []
    with open(doc) as f:
        for number, line in enumerate(f, 1):
            if not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "call" or set(cells[0]) <= {"-", " ", ":"}:
                continue
            if len(cells) != 4:
                problem(f"line {number}: {len(cells)} cells, want 4 "
                        "(call | status | test | notes)")
                continue
            names = re.findall(r"`([A-Za-z_]\w*)`", cells[0])
            if not names:
                problem(f"line {number}: no call named")
                continue
            if cells[1] not in STATUSES:
                problem(f"line {number}: unknown status {cells[1]!r}")
                continue
            tests = re.findall(r"`([a-z0-9_]+_test)`", cells[2])
            result.append((names, cells[1], tests, cells[2], cells[3], number))
    return result


def call_stubs(verbs_lib, rdmacm_lib, verbs_stubs, rdmacm_stubs):
    """Calls every stub twice; each must fail with EOPNOTSUPP and say so
    once on stderr."""
    verbs = ctypes.CDLL(verbs_lib, use_errno=True)
    rdmacm = ctypes.CDLL(rdmacm_lib, use_errno=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as err:
        os.dup2(err.fileno(), 2)
        try:
            for lib, names, ok in (
                    (verbs, verbs_stubs, lambda rc: rc in (0, errno.EOPNOTSUPP)),
                    (rdmacm, rdmacm_stubs, lambda rc: rc == -1)):
                for name in sorted(names):
                    fn = lib[name]
                    fn.argtypes = []
                    fn.restype = ctypes.c_long if lib is rdmacm else ctypes.c_int
                    for _ in range(2):
                        ctypes.set_errno(0)
                        rc = fn()
                        e = ctypes.get_errno()
                        if not ok(rc) or e != errno.EOPNOTSUPP:
                            problem(f"{name}: returned {rc}, errno {e}; the "
                                    "table says it fails with EOPNOTSUPP")
                            break
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        said = err.read()
    for name in verbs_stubs | rdmacm_stubs:
        lines = re.findall(r"^lib(?:ibverbs|rdmacm) \(verbsim\): %s is not "
                           r"supported by the verbsim drop-in library "
                           r"\(EOPNOTSUPP\)$" % re.escape(name), said, re.M)
        if len(lines) != 1:
            problem(f"{name}: {len(lines)} stderr lines naming it over two "
                    "calls, want 1")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--doc", required=True)
    p.add_argument("--verbs", required=True)
    p.add_argument("--rdmacm", required=True)
    p.add_argument("--verbs-stubs", required=True)
    p.add_argument("--rdmacm-stubs", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--probe-output", required=True)
    p.add_argument("--header", action="append", required=True)
    a = p.parse_args()

    verbs = exports(a.verbs)
    rdmacm = exports(a.rdmacm)
    exported = set(verbs) | set(rdmacm)
    inlines = header_inlines(a.header)
    verbs_stubs = stubs(a.verbs_stubs, ["VERBSIM_STUB_INT", "VERBSIM_STUB_PTR"])
    rdmacm_stubs = stubs(a.rdmacm_stubs, ["VERBSIM_RDMACM_STUB"])
    with open(a.build) as f:
        targets = set(re.findall(r'name = "([a-z0-9_]+_test)"', f.read()))
    with open(a.probe_output) as f:
        probe = f.read()
    header_failed = set(re.findall(r"^header (\w+) EOPNOTSUPP$", probe, re.M))
    header_other = set(re.findall(r"^header (\w+) other", probe, re.M))

    status = {}
    for names, st, tests, test_cell, notes, number in rows(a.doc):
        for name in names:
            if name in status:
                problem(f"line {number}: {name} has a row already")
            status[name] = st
            if st in PRIVATE_STATUSES and not verbs.get(name, "").startswith(
                    "IBVERBS_PRIVATE_"):
                problem(f"line {number}: {name} is marked {st!r} but is not "
                        "exported under IBVERBS_PRIVATE_*")
            if st in HEADER_STATUSES and (name in exported or
                                          name not in inlines):
                problem(f"line {number}: {name} is marked {st!r} but is "
                        "exported, or is no inline of the headers")
        if st in TESTED_STATUSES and not tests:
            problem(f"line {number}: {listed(names)} is marked {st!r} and "
                    "names no test")
        for t in tests:
            if t not in targets:
                problem(f"line {number}: {t} is not a test of dropin/tests")
        if st == "covered, untested" and test_cell:
            problem(f"line {number}: {listed(names)} is marked untested but "
                    f"names {test_cell!r}")
        if st == "covered, limit" and not notes:
            problem(f"line {number}: {listed(names)} is marked with a limit "
                    "and states none")

    missing = exported - set(status)
    if missing:
        problem("exported, with no row: " + listed(missing))
    unknown = set(status) - exported - inlines
    if unknown:
        problem("rows for calls that neither library exports nor the headers "
                "define inline: " + listed(unknown))
    no_row = inlines - set(status)
    if no_row:
        problem("inlines of the headers with no row: " + listed(no_row))

    marked_stub = {n for n, st in status.items() if st in STUB_STATUSES}
    all_stubs = verbs_stubs | rdmacm_stubs
    if marked_stub - all_stubs:
        problem("marked EOPNOTSUPP but not a stub: " +
                listed(marked_stub - all_stubs))
    if all_stubs - marked_stub:
        problem("stubs not marked EOPNOTSUPP: " + listed(all_stubs - marked_stub))
    for name, version in verbs.items():
        if version.startswith("IBVERBS_PRIVATE_") and \
                status.get(name) not in PRIVATE_STATUSES | {None}:
            problem(f"{name} is exported under {version} but marked "
                    f"{status[name]!r}, not private")

    marked_header = {n for n, st in status.items() if st == "header EOPNOTSUPP"}
    if header_other:
        problem("did not fail with EOPNOTSUPP in the header: " +
                listed(header_other))
    if marked_header - header_failed:
        problem("marked header EOPNOTSUPP, not seen failing so by "
                "coverage_probe: " + listed(marked_header - header_failed))
    if header_failed - marked_header:
        problem("failing with EOPNOTSUPP in the header (coverage_probe), not "
                "marked so: " + listed(header_failed - marked_header))

    counts = {}
    for st in status.values():
        counts[st] = counts.get(st, 0) + 1
    print(f"{len(status)} calls in the table: " + ", ".join(
        f"{counts[s]} {s}" for s in sorted(counts)), flush=True)
    for text in problems:
        print("FAIL: " + text, flush=True)
    found = len(problems)

    # Only what is both a stub and marked so: a real function called without
    # its arguments could crash.
    call_stubs(a.verbs, a.rdmacm, verbs_stubs & marked_stub,
               rdmacm_stubs & marked_stub)
    for text in problems[found:]:
        print("FAIL: " + text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
