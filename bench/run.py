"""`make bench`: how much a Dagster run costs over the plain loop, and over `pdfimages -all`.

All variants run in this one process, alternating within each round after an untimed warm-up,
and are compared as ratios of medians to the plain loop, so a noisy machine mostly cancels out.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench import common, measure, report
from bench.common import ROOT, BenchError
from bench.measure import Sample
from report_pipeline.core.model.settings import DecodeSettings

DEFAULT_REPORTS = [
    ROOT / "fixtures" / "pdfs" / "monthly_report.pdf",
    ROOT.parent / "shared" / "reference" / "chelsea_pdta.pdf",  # optional: not in a user's clone
]
Variant = tuple[str, Callable[[], Sample]]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--reports", nargs="+", type=Path, help="PDFs (default: see README)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--per-page", action=argparse.BooleanOptionalAction, default=True,
                        help="also dagster_per_page: pages_per_task=1 in run config")  # fmt: skip
    parser.add_argument("--per-page-repeat", type=int, default=1,
                        help="rounds that include the slow per-page run (default 1)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--target", type=float, default=None,
                        help="exit 1 if a report's Dagster-wall ratio exceeds this")  # fmt: skip
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def default_reports() -> list[Path]:
    found = [pdf for pdf in DEFAULT_REPORTS if pdf.is_file()]
    for pdf in DEFAULT_REPORTS:
        if not pdf.is_file():
            print(f"note: {pdf} not found, skipped (only the shared workspace has it)")
    return found


def variants(pdf: Path, scratch: Path, args: argparse.Namespace, exe: str | None) -> list[Variant]:
    """The round's runs, in order; the plain loop goes first so the others can be checked."""
    runs: list[Variant] = [
        ("plain", partial(measure.plain, pdf, scratch)),
        ("pool_1", partial(measure.plain, pdf, scratch, DecodeSettings(processes=1))),
        ("pool", partial(measure.plain, pdf, scratch, DecodeSettings())),
        ("dagster", partial(measure.dagster, pdf, scratch, 0)),
    ]
    if args.per_page:
        runs.append(("dagster_per_page", partial(measure.dagster, pdf, scratch, 1)))
    if exe is not None:
        runs.append(("pdfimages", partial(measure.pdfimages, pdf, scratch, exe)))
    return runs


def one_round(runs: list[Variant], skip: set[str], label: str) -> dict[str, Sample]:
    """Each variant once, in order; Dagster counts must equal this round's plain loop's."""
    done: dict[str, Sample] = {}
    for name, run in runs:
        if name in skip:
            continue
        done[name] = run()
        if name in ("pool_1", "pool", "dagster", "dagster_per_page"):
            measure.check_counts(done["plain"]["counts"], done[name], f"{label} {name}")
    print(f"  {label}: " + "  ".join(f"{n} {s['wall_s']:.2f}s" for n, s in done.items()))
    return done


def bench_report(pdf: Path, scratch: Path, args: argparse.Namespace, exe: str | None) -> dict:
    """Warm up once (per-page excepted: same code as the default run, and slow), then
    alternate the variants for `--repeat` rounds."""
    print(f"{pdf.name}:")
    runs = variants(pdf, scratch, args, exe)
    one_round(runs, {"dagster_per_page"}, "warm-up")
    samples: dict[str, list[Sample]] = defaultdict(list)
    for i in range(args.repeat):
        skip = {"dagster_per_page"} if i >= args.per_page_repeat else set()
        for name, sample in one_round(runs, skip, f"round {i + 1}/{args.repeat}").items():
            samples[name].append(sample)
    rows = report.summarise(samples)
    ops = report.op_medians(samples["dagster"])
    return {
        "pdf": str(pdf), "name": pdf.name, "counts": samples["plain"][0]["counts"],
        "rows": rows, "dagster_op_median_s": ops, "samples": dict(samples),
    }  # fmt: skip


def print_tables(results: list[dict[str, Any]]) -> None:
    for result in results:
        rows = result["rows"]
        print()
        print(report.table(result["name"], result["counts"], rows))
        print(
            report.ops_line(result["dagster_op_median_s"], rows["dagster run duration"]["median_s"])
        )


def over_target(results: list[dict[str, Any]], target: float | None) -> list[str]:
    """Reports whose median per-round Dagster-wall / plain ratio exceeds `target`."""
    if target is None:
        return []
    return [
        f"{r['name']}: dagster wall {r['rows']['dagster wall']['paired_ratio']:.2f}x > {target}x"
        for r in results
        if r["rows"]["dagster wall"]["paired_ratio"] > target
    ]


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    exe = shutil.which("pdfimages")
    if exe is None:
        print("note: pdfimages (poppler-utils) not found, its row is skipped")
    pdfs = args.reports or default_reports()
    missing = [str(p) for p in pdfs if not p.is_file()]
    if missing or not pdfs:
        print(f"error: no such report: {', '.join(missing) or '(none)'}", file=sys.stderr)
        return 2
    facts = report.machine(exe)
    print("machine: " + "  ".join(f"{k} {v}" for k, v in facts.items()))
    try:
        with tempfile.TemporaryDirectory(prefix="report-bench-") as scratch:
            results = [bench_report(pdf, Path(scratch), args, exe) for pdf in pdfs]
    except BenchError as error:
        print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
        return 2
    print_tables(results)
    failed = over_target(results, args.target)
    total = time.perf_counter() - started
    record = {"machine": facts, "args": vars(args), "reports": results, "total_s": total,
              "target": args.target, "over_target": failed}  # fmt: skip
    print(f"\nwritten {common.write_json(args.out, record)}  (total {total:.0f} s)")
    for line in failed:
        print(f"OVER TARGET {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
