"""Medians, ratios to the plain loop, the printed table, machine facts and the JSON record."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from statistics import median
from typing import Any

import dagster as dg
import pymupdf

from bench import common
from bench.measure import Sample

# (row label, variant, field): the variants are the keys run.py records samples under.
ROWS = [
    ("plain loop (run_report + table)", "plain", "wall_s"),
    ("isolated, 1 decoder", "pool_1", "wall_s"),
    ("isolated, 1 per core", "pool", "wall_s"),
    ("dagster wall", "dagster", "wall_s"),
    ("dagster run duration", "dagster", "run_s"),
    ("per-page dagster wall", "dagster_per_page", "wall_s"),
    ("per-page run duration", "dagster_per_page", "run_s"),
    ("pdfimages -all", "pdfimages", "wall_s"),
    ("plain loop CPU", "plain", "cpu_s"),
    ("isolated CPU, 1 per core", "pool", "cpu_s"),
    ("dagster CPU", "dagster", "cpu_s"),
]


def summarise(samples: dict[str, list[Sample]]) -> dict[str, dict[str, Any]]:
    """Per row: median/min/max seconds, ratio of medians to the plain loop's median, and the
    median of per-round ratios (each run divided by the plain run of the same round). CPU
    rows (`cpu_s`: this process and the children it reaped) against the plain loop's CPU."""
    rows: dict[str, dict[str, Any]] = {}
    for label, variant, key in ROWS:
        runs = samples.get(variant, [])
        if not runs or key not in runs[0]:
            continue
        plain = [s[key if key == "cpu_s" else "wall_s"] for s in samples["plain"]]
        base = median(plain)
        values = [s[key] for s in runs]
        paired = [v / p for v, p in zip(values, plain, strict=False)]
        rows[label] = {
            "n": len(values), "median_s": median(values), "min_s": min(values),
            "max_s": max(values), "ratio": median(values) / base, "paired_ratio": median(paired),
            "steps": runs[0].get("steps"), "tasks": runs[0].get("tasks"), "values_s": values,
        }  # fmt: skip
    return rows


def op_medians(runs: list[Sample]) -> dict[str, float]:
    """Median seconds per op (summed over its mapped steps) across the Dagster runs."""
    per_op: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for op, seconds in run["op_s"].items():
            per_op[op].append(seconds)
    return {op: median(values) for op, values in per_op.items()}


def _cell(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def table(name: str, counts: dict[str, Any], rows: dict[str, dict[str, Any]]) -> str:
    """The per-report table, ratios relative to the plain loop's median."""
    lines = [
        f"{name}: {counts['pages']} pages, {counts['expected']} image occurrences, "
        f"{counts['distinct_images']} distinct, {counts['quarantined']} quarantined",
        f"  {'variant':<25}{'n':>3}{'median s':>10}{'min s':>8}{'max s':>8}"
        f"{'x plain':>9}{'paired x':>10}{'steps':>7}{'tasks':>7}",
    ]
    for label, r in rows.items():
        lines.append(
            f"  {label:<25}{r['n']:>3}{r['median_s']:>10.2f}{r['min_s']:>8.2f}{r['max_s']:>8.2f}"
            f"{r['ratio']:>9.2f}{r['paired_ratio']:>10.2f}"
            f"{_cell(r['steps'], 'd'):>7}{_cell(r['tasks'], 'd'):>7}"
        )
    return "\n".join(lines)


def ops_line(ops: dict[str, float], run_s: float) -> str:
    """Where the default Dagster run's time goes: seconds inside each op, and the rest."""
    inside = sum(ops.values())
    parts = "  ".join(f"{op} {s:.2f}" for op, s in sorted(ops.items(), key=lambda i: -i[1]))
    return f"  dagster ops (median s): {parts}  | outside ops {run_s - inside:.2f} of {run_s:.2f}"


def _pdfimages_version(exe: str | None) -> str | None:
    if exe is None:
        return None
    done = subprocess.run([exe, "-v"], capture_output=True, text=True, check=False)
    text = (done.stderr or done.stdout).strip()
    return text.splitlines()[0].removeprefix("pdfimages version ") if text else None


def machine(pdfimages_exe: str | None) -> dict[str, Any]:
    """The common facts plus the versions the pipeline benchmark depends on."""
    return common.machine(
        dagster=dg.__version__, pymupdf=pymupdf.__version__,
        pdfimages=_pdfimages_version(pdfimages_exe),
    )  # fmt: skip
