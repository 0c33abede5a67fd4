#!/usr/bin/env python3
"""Every repository path named in a comment or a document exists.

Scans the files git tracks (source, BUILD files, scripts, Markdown) for
words that name a path of this repository: they start with one of its
top-level directories (core/, sim/, hw/, dropin/, tests/, tools/, docs/,
fuzz/, bench/, examples/, third_party/) and name a file with an extension
or a directory ending in '/'. Globs and placeholders (*, <...>, NAME) and
build outputs (bazel-bin) are skipped, and so are paths of other projects that happen to share a
directory name: a path on a line that names rdma-core, the kernel, UCX or
libfabric, or that continues a path of theirs (drivers/...,
providers/...), is theirs. A file that says "paths-check: skip this file"
(the checker's own test, whose paths are its fixture's) is not scanned.

  tools/paths_check.py [REPO]     exit 0, or 1 listing each missing path
"""
import os
import re
import subprocess
import sys

TOP = ("core", "sim", "hw", "dropin", "tests", "tools", "docs", "fuzz",
       "bench", "examples", "third_party")
PATH = re.compile(
    r"(?<![\w./-])((?:%s)/[\w./-]*[\w/])" % "|".join(TOP))
OTHERS = re.compile(
    r"rdma-core|rdma-unit-test|kernel|linux|libfabric|ucx|openucx|"
    r"perftest|pyverbs|drivers/|providers/|librdmacm/|libibverbs/",
    re.IGNORECASE)
SCANNED = re.compile(r"\.(cc|h|c|py|sh|md|bazel|bzl|scenario|txt|map)$|"
                     r"(^|/)(BUILD|WORKSPACE|Makefile|CMakeLists\.txt)$")


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    files = subprocess.check_output(["git", "-C", repo, "ls-files"],
                                    text=True).split()
    tracked = set(files)
    dirs = {os.path.dirname(f) for f in files}
    for f in list(dirs):
        while f:
            f = os.path.dirname(f)
            dirs.add(f)
    missing = []
    for name in files:
        if not SCANNED.search(name) or name.startswith("fuzz/corpus/"):
            continue
        try:
            text = open(os.path.join(repo, name), encoding="utf-8").read()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        if "paths-check: skip this file" in text:
            continue  # its paths are of a fixture, not of this tree
        for number, line in enumerate(text.splitlines(), 1):
            if OTHERS.search(line) or "bazel-bin" in line or "${bin}" in line:
                continue
            for m in PATH.finditer(line):
                path = m.group(1).rstrip(".")
                if any(c in line[m.start():m.end() + 1] for c in "*<"):
                    continue
                last = path.rstrip("/").rsplit("/", 1)[-1]
                if re.search(r"\.(a|lo|so)(\.\d+)?$", path):
                    continue  # a build output named by its place in bazel-bin
                if re.search(r"\b[A-Z]{2,}\b", path):
                    continue  # a placeholder: docs/tutorial/img/CHAPTER.svg
                if not path.endswith("/") and "." not in last:
                    continue  # a word like sim/tests or a Bazel target
                bare = path.rstrip("/")
                if bare in tracked or bare in dirs:
                    continue
                # A Bazel label's package path (//dropin/tests:x) or a
                # bazel-bin path is not a file of the tree.
                if line[max(0, m.start() - 2):m.start()] == "//":
                    continue
                missing.append("%s:%d: %s" % (name, number, path))
    for m in missing:
        print("missing: " + m)
    print("paths_check: %d files, %d missing paths" % (len(files),
                                                        len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
