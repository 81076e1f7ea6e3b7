"""`python -m bench.backfill`: a backfill's throughput against the plain loop.

throughput_ratio = months x (the plain loop's seconds for one report) / (the backfill's wall
seconds, from its launch to the moment it is marked completed, both as the instance records
them). Above 1: the backfill did the months faster than the loop does them one after another.

How: the plain loop (`run_report`, decoding in one process: bench/measure.py) times one report
(a warm-up, then `--plain-repeat` rounds; more rounds after the backfill). Then `dagster dev`
(webserver, daemon, code server: what `make dev` runs) starts on the embedded default instance
(a temporary DAGSTER_HOME holding the committed dagster_home/dagster.yaml, or `--instance`), the
intake sensor is switched off (it would launch its own runs for the same reports), the fixture
report is copied into each month's inbox folder, and a partition backfill is launched through
GraphQL as the UI launches it: `--kind job` (default) from extract_report_job's partitions page,
`--kind asset` from report_manifest's page. Every run must succeed and every month's manifest
must have the plain loop's counts, or the result is void (exit 2).

`--executor celery`: the same on the production configuration (Postgres, moto S3, the reports in
the S3 inbox) with every step on one of two Celery workers (bench/backfill_production.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

from bench import backfill_production, common, measure
from bench.backfill_live import check_manifests, dagster_dev, run_backfill
from bench.backfill_timeline import describe
from bench.common import ROOT, BenchError
from report_pipeline.core.storage.local_store import LocalStore

FIXTURE = ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"
EMBEDDED = ROOT / "dagster_home" / "dagster.yaml"
GOAL = 1.6
CLEARED = ("REPORT_PIPELINE_DEPLOYMENT", "REPORT_PIPELINE_EXECUTOR", "REPORT_PIPELINE_FIRST_MONTH")


def month_names(count: int, first: str = "2025-01") -> list[str]:
    year, month = map(int, first.split("-"))
    names = []
    for _ in range(count):
        names.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return names


def plain_seconds(
    report: Path, scratch: Path, rounds: int, log: Callable[[str], None]
) -> tuple[list, list, dict]:
    """The plain loop's wall and CPU seconds per report, and its counts."""
    measure.plain(report, scratch)  # warm-up: imports, page cache
    samples = [measure.plain(report, scratch) for _ in range(rounds)]
    times = ", ".join(f"{s['wall_s']:.2f}" for s in samples)
    log(f"plain loop: {times} s per report")
    return [s["wall_s"] for s in samples], [s["cpu_s"] for s in samples], samples[0]["counts"]


def embedded_home(root: Path, instance: Path) -> tuple[Path, dict[str, str]]:
    """A DAGSTER_HOME under `root` holding `instance` (a dagster.yaml), an empty inbox, and the
    environment `dagster dev` runs in there: (the home, the environment)."""
    home = root / "home"
    home.mkdir()
    shutil.copyfile(instance, home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update({"DAGSTER_HOME": str(home), **{f"REPORT_PIPELINE_{name.upper()}": str(root / name)
                                              for name in ("inbox", "store", "work")}})  # fmt: skip
    (root / "inbox").mkdir()
    return home, env


def local_backfill(root: Path, args: argparse.Namespace, months: list[str], counts: dict) -> dict:
    home, env = embedded_home(root, args.instance)
    with dagster_dev(root, env) as live:
        live.stop_sensor("new_report_sensor")  # before the reports arrive
        for month in months:
            (root / "inbox" / month).mkdir()
            shutil.copyfile(args.report, root / "inbox" / month / args.report.name)
        result = run_backfill(live, home, months, args)
    check_manifests(LocalStore(root / "store"), months, counts)
    return result


def keep_logs(root: Path, out: Path) -> Path | None:
    """The servers' logs of a void benchmark (dagster dev's, the workers'), copied out of the
    scratch folder before it goes: `out/backfill-invalid-<time>/`, or None if there were none."""
    logs = sorted(root.rglob("*.log"))
    if not logs:
        return None
    kept = out / f"backfill-invalid-{time.strftime('%Y%m%dT%H%M%S')}"
    kept.mkdir(parents=True, exist_ok=True)
    for log in logs:
        shutil.copyfile(log, kept / "_".join(log.relative_to(root).parts))
    return kept


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__,
                                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--months", type=int, default=12, help="partitions (default 12)")
    parser.add_argument("--kind", choices=["job", "asset"], default="job",
                        help="the UI's job backfill (default) or asset backfill")  # fmt: skip
    parser.add_argument("--executor", choices=["in_process", "celery"], default="in_process",
                        help="celery: production configuration, two Celery workers")  # fmt: skip
    parser.add_argument("--instance", type=Path, default=EMBEDDED,
                        help="the dagster.yaml (local; default: the committed one)")  # fmt: skip
    parser.add_argument("--tick-wait", type=float, default=15.0,
                        help="launch this many seconds before the backfill daemon's next loop "
                        "(0-30; default 15, the mean for a click at a random moment)")  # fmt: skip
    parser.add_argument("--plain-repeat", type=int, default=3, help="plain-loop rounds (3)")
    parser.add_argument("--report", type=Path, default=FIXTURE,
                        help="the PDF every month gets (default: the monthly fixture)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=600, help="seconds for the backfill")
    parser.add_argument("--json", action="store_true", help="print the result as JSON only")
    parser.add_argument("--target", type=float, default=None,
                        help=f"exit 1 below this ratio (the issue's goal: {GOAL})")  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    if args.months < 1 or args.plain_repeat < 1:
        parser.error("--months and --plain-repeat must be at least 1")
    if not 0 <= args.tick_wait < 30:
        parser.error("--tick-wait must be at least 0 and under 30 (the daemon's loop)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so `dagster dev` and the servers are stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    months, load = month_names(args.months), os.getloadavg()
    log(f"backfill of {args.months} months ({months[0]}..{months[-1]}), {args.kind} backfill, "
        f"{args.executor}; load {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="report-bench-backfill-") as scratch:
        root = Path(scratch)
        try:
            plain, plain_cpu, counts = plain_seconds(args.report, root, args.plain_repeat, log)
            if args.executor == "celery":
                result = backfill_production.celery_backfill(root, args, months, counts, log)
            else:
                result = local_backfill(root, args, months, counts)
            after = [measure.plain(args.report, root) for _ in range(2)]
            plain += [s["wall_s"] for s in after]
            plain_cpu += [s["cpu_s"] for s in after]
        except BenchError as error:
            kept = keep_logs(root, args.out)
            print(f"BENCHMARK INVALID: {error}" + (f"; the servers' logs: {kept}" if kept else ""),
                  file=sys.stderr)  # fmt: skip
            return 2
    plain_s, wall = median(plain), result["marked_completed_s"]
    cores = len(os.sched_getaffinity(0))
    cpu_per_report = sum(result["dagster_cpu_s"].values()) / args.months
    end_load = os.getloadavg()
    record = {
        "throughput_ratio": args.months * plain_s / wall,
        # without the backfill daemon's two waits: the runs' creation to the last run's end
        "runs_ratio": args.months * plain_s / result["runs_span_s"],
        "months": args.months, "kind": args.kind, "executor": args.executor,
        "tick_wait_s": args.tick_wait, "cpu_per_report_s": cpu_per_report,
        # the best ratio these CPU seconds allow on this machine's cores, with no waiting at all
        "cpu_bound_ratio": cores * plain_s / cpu_per_report,
        # CPU per report against the plain loop's CPU (this process and its children)
        "plain_cpu_s": median(plain_cpu), "cpu_ratio": cpu_per_report / median(plain_cpu),
        "report": args.report.name,
        "instance": str(args.instance), "plain_s": plain_s, "plain_samples_s": plain,
        "wall_s": wall, "load_start": load, "load_end": end_load, **result,
        "machine": common.machine(),
    }  # fmt: skip
    path = common.write_json(args.out, record, prefix="backfill-")
    for line in describe(result):
        log(line)
    log(f"plain loop {plain_s:.2f} s per report (median of {len(plain)}): {args.months} reports "
        f"{args.months * plain_s:.1f} s; backfill {wall:.1f} s launch → completed, runs "
        f"{result['runs_span_s']:.1f} s first created → last ended")  # fmt: skip
    log(
        "CPU per report in dagster dev's processes (runs, daemon, webserver, code server) and "
        "any Celery workers' (not Postgres, moto, Redis): "
        f"{cpu_per_report:.2f} s against the plain loop's {median(plain_cpu):.2f} s of CPU "
        f"({record['cpu_ratio']:.2f}x) and ~{plain_s:.2f} s of wall: at best "
        f"{record['cpu_bound_ratio']:.2f} on {cores} cores; by process: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(result["dagster_cpu_s"].items()))
    )
    log(f"throughput_ratio {record['throughput_ratio']:.2f} (goal {GOAL}); over the runs' span "
        f"{record['runs_ratio']:.2f}; load at the end {end_load[0]:.2f} / {end_load[1]:.2f} / "
        f"{end_load[2]:.2f}; written {path}")  # fmt: skip
    if args.json:
        print(json.dumps(record, indent=2, sort_keys=True, default=str))
    return 1 if args.target is not None and record["throughput_ratio"] < args.target else 0


if __name__ == "__main__":
    sys.exit(main())
