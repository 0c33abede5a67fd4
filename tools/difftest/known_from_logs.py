#!/usr/bin/env python3
"""Writes a known-divergence list (tools/difftest/known_<kind>.txt) from
verbdiff logs: every seed that diverged in any of them, with the classes of
its differences.

    known_from_logs.py rxe LOG... > the known list of rxe (known_rxe.txt)
"""
import re
import sys


def classes(differences):
    """The classes of one program's difference lines (docs/fidelity.md)."""
    joined = " ".join(differences)
    out = []
    if any(d.startswith("call:") for d in differences):
        out.append("a post answered differently")
    if "RETRY_EXC_ERR" in joined:
        out.append("retries run out on one side only")
    if re.search(r"LOC_\w+_ERR", joined) and "WR_FLUSH_ERR" in joined:
        out.append("local error against flush")
    if "recv: " in joined:
        out.append("receive flushes")
    if "bytes of" in joined:
        out.append("memory")
    return "; ".join(dict.fromkeys(out)) or "completions"


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kind, logs = sys.argv[1], sys.argv[2:]
    seeds = {}
    for log in logs:
        with open(log) as f:
            text = f.read()
        for block in re.split(r"(?m)^(?=DIVERGES)", text)[1:]:
            seed = int(re.search(r"seed (\d+)", block).group(1))
            lines = [l.strip() for l in block.split("\n")[1:]
                     if l.startswith("  completions") or l.startswith("  call")
                     or l.startswith("  bytes")]
            seeds.setdefault(seed, lines)
    print(f"# Seeds of the fixed set (verbdiff --seeds=0:200) on which "
          f"sim:{kind} and")
    print(f"# hw:{kind}0 are known to diverge, each with the classes of its "
          f"differences.")
    print("# The classes are open findings, listed in docs/fidelity.md")
    print("# (\"Differential runs\"); a seed leaves this list when its class "
          "is fixed.")
    print("# Written by tools/difftest/campaign.sh --update-known.")
    for seed in sorted(seeds):
        print(f"{seed}\t{classes(seeds[seed])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
