#!/usr/bin/env python3
"""Minimal replacement for Bazel's CoverageOutputGenerator (lcov only).

lcov_merger mode (called by collect_coverage.sh for each test):
  --coverage_dir=DIR --output_file=FILE [--filter_sources=REGEX]...
  [--source_file_manifest=FILE]
  Reads every *.gcov.json.gz (gcc >= 9) and *.dat (lcov) under DIR.

coverage_report_generator mode (--combined_report=lcov):
  --reports_file=FILE --output_file=FILE [--filter_sources=REGEX]...
  FILE lists one lcov report per line.

Only line and function coverage are reported; branch data is dropped.
Unknown flags are ignored.
"""

import gzip
import json
import os
import re
import sys


class Report:
    def __init__(self):
        # source path -> {"lines": {line: count}, "fns": {name: [line, count]}}
        self.files = {}

    def _entry(self, path):
        return self.files.setdefault(path, {"lines": {}, "fns": {}})

    def add_line(self, path, line, count):
        lines = self._entry(path)["lines"]
        lines[line] = lines.get(line, 0) + count

    def add_fn(self, path, name, line=None, count=0):
        fns = self._entry(path)["fns"]
        fn = fns.setdefault(name, [line if line is not None else 0, 0])
        if line is not None and not fn[0]:
            fn[0] = line
        fn[1] += count

    def read_gcov_json(self, filename):
        with gzip.open(filename, "rt") as f:
            data = json.load(f)
        for src in data.get("files", []):
            path = os.path.normpath(src.get("file", ""))
            if not path:
                continue
            for fn in src.get("functions", []):
                self.add_fn(path, fn.get("name", "?"), fn.get("start_line", 0),
                            fn.get("execution_count", 0))
            for ln in src.get("lines", []):
                self.add_line(path, ln.get("line_number", 0), ln.get("count", 0))

    def read_lcov(self, filename):
        path = None
        with open(filename, errors="replace") as f:
            for raw in f:
                line = raw.strip()
                key, _, val = line.partition(":")
                if key == "SF":
                    path = os.path.normpath(val)
                    self._entry(path)
                elif path is None:
                    continue
                elif key == "FN":
                    num, _, name = val.partition(",")
                    self.add_fn(path, name, int(num))
                elif key == "FNDA":
                    count, _, name = val.partition(",")
                    self.add_fn(path, name, None, int(count))
                elif key == "DA":
                    parts = val.split(",")
                    self.add_line(path, int(parts[0]), int(parts[1]))
                elif line == "end_of_record":
                    path = None

    def filter(self, patterns, keep):
        for path in list(self.files):
            if any(p.fullmatch(path) for p in patterns) or (
                    keep is not None and path not in keep):
                del self.files[path]

    def write_lcov(self, filename):
        out = []
        for path in sorted(self.files):
            entry = self.files[path]
            out.append("SF:%s" % path)
            fns = sorted(entry["fns"].items(), key=lambda kv: (kv[1][0], kv[0]))
            for name, (line, _) in fns:
                out.append("FN:%d,%s" % (line, name))
            for name, (_, count) in fns:
                out.append("FNDA:%d,%s" % (count, name))
            out.append("FNF:%d" % len(fns))
            out.append("FNH:%d" % sum(1 for _, (_, c) in fns if c > 0))
            lines = sorted(entry["lines"].items())
            for line, count in lines:
                out.append("DA:%d,%d" % (line, count))
            out.append("LH:%d" % sum(1 for _, c in lines if c > 0))
            out.append("LF:%d" % len(lines))
            out.append("end_of_record")
        os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
        with open(filename, "w") as f:
            f.write("\n".join(out) + ("\n" if out else ""))


def parse_flags(argv):
    flags = {}
    for arg in argv:
        if arg.startswith("--") and "=" in arg:
            key, _, val = arg[2:].partition("=")
            flags.setdefault(key, []).append(val)
    return flags


def main(argv):
    flags = parse_flags(argv)
    output = flags.get("output_file", [None])[-1]
    if not output:
        sys.stderr.write("coverage_tool: --output_file is required\n")
        return 1
    patterns = [re.compile(p) for p in flags.get("filter_sources", [])]
    report = Report()
    keep = None

    if "reports_file" in flags:
        with open(flags["reports_file"][-1]) as f:
            for name in f.read().split():
                if os.path.isfile(name):
                    report.read_lcov(name)
    else:
        coverage_dir = flags.get("coverage_dir", ["."])[-1]
        out_abs = os.path.abspath(output)
        for root, _, names in os.walk(coverage_dir):
            for name in sorted(names):
                full = os.path.join(root, name)
                if os.path.abspath(full) == out_abs:
                    continue
                if name.endswith(".gcov.json.gz"):
                    report.read_gcov_json(full)
                elif name.endswith(".dat"):
                    report.read_lcov(full)
        manifest = flags.get("source_file_manifest", [None])[-1]
        if manifest and os.path.isfile(manifest):
            with open(manifest) as f:
                listed = {os.path.normpath(l.strip()) for l in f if l.strip()}
            sources = {p for p in listed
                       if not p.endswith((".gcno", ".gcda", ".profraw"))}
            if sources:
                keep = sources

    report.filter(patterns, keep)
    report.write_lcov(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
