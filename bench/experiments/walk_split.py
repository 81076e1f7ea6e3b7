"""`python -m bench.experiments.walk_split PDF [--rounds 5]`: what splitting the planning walk
over the cores does to a Dagster run, paired in one process.

Each round runs `extract_report_job` on a fresh embedded instance (bench/measure.py) twice, with
the walk in one child (`walk._children` made to say 1, as before the split) and as it is (one
child per decoder), in alternating order, and `pdfimages -all` once. Prints each round's walls,
`stage_report`'s and `extract_pages`' seconds and the load average, then medians and the paired
ratios (split over one child, and each over `pdfimages -all`); writes its JSON record.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

from bench import common, measure
from bench.common import ROOT
from report_pipeline.core.plan import walk

SPLIT = walk._children


def one_child(settings, pages: int) -> int:
    return 1


def run(pdf: Path, scratch: Path, children) -> dict:
    walk._children = children
    try:
        sample = measure.dagster(pdf, scratch)
    finally:
        walk._children = SPLIT
    ops = sample["op_s"]
    return {"wall_s": sample["wall_s"], "stage_s": ops.get("stage_report", 0.0),
            "extract_s": ops.get("extract_pages", 0.0), "counts": sample["counts"]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.experiments.walk_split",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    exe = shutil.which("pdfimages")
    rounds = []
    with tempfile.TemporaryDirectory(prefix="walk-split-") as tmp:
        scratch = Path(tmp)
        run(args.pdf, scratch, SPLIT)  # warm-up
        for i in range(args.rounds):
            order = ("one", "split") if i % 2 == 0 else ("split", "one")
            got = {name: run(args.pdf, scratch, one_child if name == "one" else SPLIT)
                   for name in order}  # fmt: skip
            if got["one"]["counts"] != got["split"]["counts"]:
                print("BENCHMARK INVALID: the two runs' counts differ", file=sys.stderr)
                return 2
            got["pdfimages_s"] = measure.pdfimages(args.pdf, scratch, exe)["wall_s"] if exe else 0
            got["load"] = os.getloadavg()[0]
            rounds.append(got)
            print(f"round {i + 1}: load {got['load']:.2f}  " + "  ".join(
                f"{name} {got[name]['wall_s']:.2f} s (stage {got[name]['stage_s']:.2f}, extract "
                f"{got[name]['extract_s']:.2f})" for name in ("one", "split"))
                + f"  pdfimages {got['pdfimages_s']:.2f} s", flush=True)  # fmt: skip
    summary = {
        f"{what}_{name}": median(r[name][key] for r in rounds)
        for name in ("one", "split") for what, key in (("wall", "wall_s"), ("stage", "stage_s"))
    }  # fmt: skip
    summary["split_over_one"] = median(r["split"]["wall_s"] / r["one"]["wall_s"] for r in rounds)
    if exe:
        for name in ("one", "split"):
            summary[f"{name}_over_pdfimages"] = median(
                r[name]["wall_s"] / r["pdfimages_s"] for r in rounds
            )
    print("medians: " + "  ".join(f"{k} {v:.3f}" for k, v in summary.items()))
    record = {"machine": common.machine(), "pdf": str(args.pdf), "rounds": rounds,
              "summary": summary}  # fmt: skip
    print(f"written {common.write_json(args.out, record, 'walk-split-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
