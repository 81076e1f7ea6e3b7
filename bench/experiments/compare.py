"""`python -m bench.experiments.compare --rounds 5 REV [REV ...]`: bench.production at several
commits, as paired rounds in one run.

Each commit is exported (`git archive`) to a temporary folder once. Each round then runs every
commit's own `python -m bench.production --repeat 1` in its own process (its own warm-up, its
own moto server and fresh databases), in turn, reversing the order every other round, so the
load of this shared machine hits every commit alike; `WORKTREE` stands for the working tree. A
round's ratio is that process's production wall over its own plain loop. Medians per commit,
with each op's seconds; every sample goes to bench/results/compare-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from bench import common
from bench.common import ROOT


def export(rev: str, into: Path) -> Path:
    if rev == "WORKTREE":
        return ROOT
    folder = into / rev
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def one_round(source: Path, out: Path) -> dict:
    """`bench.production --repeat 1` with `source`'s code (first on sys.path) and this venv."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.production", "--repeat", "1", "--out", str(out)],
        cwd=source, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"bench.production failed in {source}:\n{done.stderr[-3000:]}")
    (record,) = (json.loads(p.read_text()) for p in out.glob("*.json"))
    samples = record["reports"][0]["samples"]
    plain, embedded, prod = (samples[n][0] for n in ("plain", "dagster", "dagster_production"))
    return {
        "plain_s": plain["wall_s"],
        "production_s": prod["wall_s"],
        "ratio": prod["wall_s"] / plain["wall_s"],
        "embedded_ratio": embedded["wall_s"] / plain["wall_s"],
        "op_s": prod["op_s"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.experiments.compare", description=__doc__
    )
    parser.add_argument("revs", nargs="+", help="commits (or WORKTREE) to compare")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {rev: [] for rev in args.revs}
    with tempfile.TemporaryDirectory(prefix="report-compare-") as tmp:
        sources = {rev: export(rev, Path(tmp)) for rev in args.revs}
        for n in range(args.rounds):
            for rev in args.revs if n % 2 == 0 else args.revs[::-1]:
                load = os.getloadavg()[0]
                out = Path(tempfile.mkdtemp(dir=tmp))
                sample = {**one_round(sources[rev], out), "load": load}
                results[rev].append(sample)
                print(f"round {n + 1}/{args.rounds} {rev[:12]:<12} load {load:4.1f}  plain "
                      f"{sample['plain_s']:.2f} s  production {sample['production_s']:.2f} s  "
                      f"{sample['ratio']:.2f}x  (embedded {sample['embedded_ratio']:.2f}x)",
                      flush=True)  # fmt: skip
    print()
    for rev, rows in results.items():
        ratios = [r["ratio"] for r in rows]
        ops = {op: median(r["op_s"][op] for r in rows) for op in rows[0]["op_s"]}
        print(f"{rev[:12]:<12} paired {median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}), "
              f"production {median(r['production_s'] for r in rows):.2f} s, plain "
              f"{median(r['plain_s'] for r in rows):.2f} s, embedded "
              f"{median(r['embedded_ratio'] for r in rows):.2f}x")  # fmt: skip
        print("    " + "  ".join(f"{op} {s:.2f}" for op, s in sorted(ops.items())))
    record = {"machine": common.machine(load=os.getloadavg()), "args": vars(args),
              "results": results}  # fmt: skip
    print(f"\nwritten {common.write_json(args.out, record, prefix='compare-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
