"""`python -m bench.janitor`: the janitor's cost follows what has expired, not what is stored.

Each scenario builds a fresh state (untimed; see `bench/janitor_state.py`), then times one
`janitor.run` pass and a second pass right after at the same `now` (which must delete nothing).
Scenarios alternate within each round after an untimed warm-up; medians over rounds.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

from bench.common import ROOT, BenchError, machine, write_json
from bench.janitor_state import Spread, build, check_first, check_second
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import janitor

BIG, SMALL = (10_000, 1_000), (1_000, 100)  # (working directories, archived revisions)
LEASE_HOUR = Spread(work_future=timedelta(minutes=60))  # what the default 60-minute lease gives


@dataclass(frozen=True)
class Scenario:
    name: str
    workdirs: int
    revisions: int
    expired: float
    spread: Spread = field(default_factory=Spread)


SCENARIOS = [
    Scenario("small 0%", *SMALL, 0.0),
    Scenario("small 10%", *SMALL, 0.10),
    Scenario("big 0%", *BIG, 0.0),
    Scenario("big 1%", *BIG, 0.01),
    Scenario("big 10%", *BIG, 0.10),
    Scenario("big 50%", *BIG, 0.50),
    Scenario("big 0% lease-hour", *BIG, 0.0, LEASE_HOUR),
]
RATIOS = [("big 0%", "small 0%"), ("big 10%", "big 1%"), ("big 50%", "big 10%"),
          ("big 10%", "small 10%"), ("big 0% lease-hour", "big 0%")]  # fmt: skip


def default_scratch() -> Path | None:
    """tmpfs when there is one: building 10,000 directories on this VM's ext4 takes 6-35 s and
    varies from run to run (inode allocation), which would swamp the janitor's own cost."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.janitor", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--scratch", type=Path, default=default_scratch(),
                        help="where states are built (default: /dev/shm if present)")  # fmt: skip
    parser.add_argument("--scale", type=float, default=1.0,
                        help="scenario sizes times this (default 1)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not 0 < args.scale <= 1:
        parser.error("--scale must be in (0, 1]")
    if args.scratch is not None and not args.scratch.is_dir():
        parser.error(f"--scratch {args.scratch} is not a folder")
    return args


def scaled(scale: float) -> list[Scenario]:
    """The scenarios with their sizes times `scale` (at least one of each)."""
    return [replace(s, workdirs=max(1, round(s.workdirs * scale)),
                    revisions=max(1, round(s.revisions * scale))) for s in SCENARIOS]  # fmt: skip


def sample(scenario: Scenario, scratch: Path, now: datetime, seed: int) -> dict[str, Any]:
    """Build a fresh state, time two passes, check them, remove the state."""
    policy, root = RetentionPolicy(), Path(tempfile.mkdtemp(prefix="janitor-", dir=scratch))
    try:
        start = time.perf_counter()
        sizes = (scenario.workdirs, scenario.revisions, scenario.expired)
        state = build(root, sizes, now, scenario.spread, policy, seed)
        build_s = time.perf_counter() - start
        os.sync()  # the build's writeback must not land inside the timed pass
        gc.collect()
        start = time.perf_counter()
        first = janitor.run(state.store, state.work_root, now, policy)
        first_s = time.perf_counter() - start
        second = janitor.run(state.store, state.work_root, now, policy)
        second_s = time.perf_counter() - start - first_s
        check_first(state, first)
        check_second(second)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "build_s": build_s, "first_s": first_s, "second_s": second_s,
        "deleted": len(first.deletions), "bytes_deleted": first.bytes_deleted,
        "due_workdirs": len(state.due_workdirs), "due_revisions": len(state.due_revisions),
        "buckets_first": first.buckets_opened, "buckets_second": second.buckets_opened,
        "entries_due": first.entries_due,
    }  # fmt: skip


def summarise(scenario: Scenario, samples: list[dict[str, Any]]) -> dict[str, Any]:
    first = median(s["first_s"] for s in samples)
    deleted = samples[0]["deleted"]
    return {
        "scenario": scenario.name, "workdirs": scenario.workdirs,
        "revisions": scenario.revisions, "expired": scenario.expired,
        "due_workdirs": samples[0]["due_workdirs"], "due_revisions": samples[0]["due_revisions"],
        "deleted": deleted, "n": len(samples), "first_median_s": first,
        "ms_per_deleted": 1000 * first / deleted if deleted else None,
        "second_median_s": median(s["second_s"] for s in samples),
        "buckets_first": samples[0]["buckets_first"],
        "buckets_second": samples[0]["buckets_second"],
        "build_median_s": median(s["build_s"] for s in samples), "samples": samples,
    }  # fmt: skip


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"  {'scenario':<19}{'workdirs':>14}{'revisions':>12}{'n':>3}{'1st pass s':>12}"
        f"{'ms/deleted':>12}{'2nd pass s':>12}{'buckets':>9}{'build s':>9}"
    ]
    for r in rows:
        per = "-" if r["ms_per_deleted"] is None else f"{r['ms_per_deleted']:.3f}"
        lines.append(
            f"  {r['scenario']:<19}{r['workdirs']:>7}/{r['due_workdirs']:<6}"
            f"{r['revisions']:>6}/{r['due_revisions']:<5}{r['n']:>3}{r['first_median_s']:>12.4f}"
            f"{per:>12}{r['second_median_s']:>12.4f}"
            f"{r['buckets_first']:>5}/{r['buckets_second']:<3}{r['build_median_s']:>9.1f}"
        )
    return "\n".join(lines)


def ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """First-pass median of one scenario over another's."""
    by_name = {r["scenario"]: r["first_median_s"] for r in rows}
    return {f"{a} / {b}": by_name[a] / by_name[b] for a, b in RATIOS}


def run_rounds(args: argparse.Namespace, scratch: Path, now: datetime) -> list[dict[str, Any]]:
    """An untimed warm-up, then every scenario once per round, in turn."""
    scenarios = scaled(args.scale)
    sample(scenarios[1], scratch, now, seed=0)
    samples: dict[str, list[dict[str, Any]]] = {s.name: [] for s in scenarios}
    for i in range(args.repeat):
        for n, scenario in enumerate(scenarios):
            samples[scenario.name].append(sample(scenario, scratch, now, seed=1000 * i + n + 1))
        print(f"  round {i + 1}/{args.repeat}: " + "  ".join(
            f"{s.name} {samples[s.name][-1]['first_s']:.3f}s" for s in scenarios))  # fmt: skip
    return [summarise(s, samples[s.name]) for s in scenarios]


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    # Half past the hour: the current hour bucket holds what becomes due in the next 30 min.
    now = utc_now().replace(minute=30, second=0, microsecond=0)
    facts = machine()
    print("machine: " + "  ".join(f"{k} {v}" for k, v in facts.items()) + f"  now {iso(now)}")
    try:
        with tempfile.TemporaryDirectory(prefix="janitor-bench-", dir=args.scratch) as scratch:
            rows = run_rounds(args, Path(scratch), now)
    except BenchError as error:
        print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
        return 2
    print("\n" + table(rows))
    found = ratios(rows)
    print("\n" + "\n".join(f"  {name}: {value:.2f}" for name, value in found.items()))
    total = time.perf_counter() - started
    record = {"machine": facts, "args": vars(args), "now": iso(now), "rows": rows,
              "ratios": found, "total_s": total}  # fmt: skip
    print(f"\nwritten {write_json(args.out, record, 'janitor-')}  (total {total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
