"""`python -m bench.celery`: what a step costs on Celery against in-process, and what the
Celery task size (core/model/settings.py TARGET_UNITS) costs a report large enough to spread out.

Everything runs on the production configuration on this machine: PostgreSQL (127.0.0.1:5432
when it answers, else a throwaway server), moto's S3 server in its own process, and a throwaway
`redis-server` on a free loopback port. Each run is `dagster asset materialize` of one month of
`report_manifest` in its own process, as a person would start it, with
`REPORT_PIPELINE_EXECUTOR` unset (in-process: that process runs every step) or `celery` (that
process submits steps to Redis; `report_pipeline.celery_worker` processes run them). The figure
compared is the run's own duration (RUN_START to RUN_SUCCESS in the event log), which leaves
out the CLI's start. Every run uses a month of its own (a fresh revision: nothing is reused),
and must leave a complete manifest with the plain loop's counts.

Part 1, per-step cost: the fixture report at 1..N page groups (`pages_per_task` in run config)
on each executor, Celery with ONE worker (so nothing overlaps: the difference is cost, not
parallelism). A least-squares line through (steps, run seconds) per executor: its slope is what
one more step costs. Celery runs also split each step's time from the event log: queue (submit
to a worker taking it), worker set-up (taking it to STEP_START: instance from the ref, plan,
resources), the op itself, and the hand-back (STEP_SUCCESS to the orchestrator's next poll).

Part 2, sizing: a large report (the fixture repeated `--scale` times, built here with PyMuPDF)
with the default sizing of each executor (no run config): in-process, Celery with one worker
(overhead = its run / the in-process run - 1; the goal is under 25%) and with two workers.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median

from bench import common
from bench.celery_runs import FIXTURE, Bench, fit, scaled_report
from bench.common import ROOT, BenchError
from bench.servers import production_stack
from devstack import local_celery
from report_pipeline.core.model.settings import TARGET_UNITS

FIRST_MONTH = "2000-01"  # many months: each run gets one of its own
GOAL = 0.25  # Celery's overhead over in-process, for a report large enough to spread out


@contextmanager
def servers(scratch: Path) -> Iterator[tuple]:
    with production_stack("rp_bench_celery") as stack:
        env = {"PATH": os.environ["PATH"], **stack.env, "REPORT_PIPELINE_FIRST_MONTH": FIRST_MONTH}
        os.environ.update({**env, "DAGSTER_HOME": str(scratch / "reader")})  # the reader
        print(stack.where, flush=True)
        yield env, stack.s3, stack.bucket, stack.inbox, stack.redis


def show(label: str, sample: dict) -> None:
    split = "  ".join(f"{k} {v:.2f}" for k, v in sorted(sample["split"].items()))
    split += "  | ops " + " ".join(f"{k[:7]} {v:.1f}" for k, v in sorted(sample["op_s"].items()))
    print(f"  {label:<34} run {sample['run_s']:6.2f} s  wall {sample['wall_s']:6.2f} s  "
          f"steps {sample['steps']:3d}  groups {sample['groups']:3d}  | {split}",
          flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.celery", description=__doc__,
                                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 4, 9, 18],
                        help="page groups for the per-step fit (default 1 4 9 18)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=2, help="rounds of part 1 (default 2)")
    parser.add_argument("--scale", type=int, default=14,
                        help="part 2: the fixture repeated this many times (14)")  # fmt: skip
    parser.add_argument("--sizing-repeat", type=int, default=3, help="rounds of part 2 (3)")
    parser.add_argument("--sizing-groups", type=int, nargs="*", default=[],
                        help="part 2 also: Celery, 1 worker, at these group counts")  # fmt: skip
    parser.add_argument("--no-sizing", action="store_true", help="part 1 only")
    parser.add_argument("--no-cost", action="store_true", help="part 2 only")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    record: dict = {"machine": common.machine(), "args": vars(args), "targets": TARGET_UNITS}
    pages = 140
    with tempfile.TemporaryDirectory(prefix="report-bench-celery-") as scratch_dir:
        scratch = Path(scratch_dir)
        with servers(scratch) as (env, s3, bucket, inbox, redis):
            bench = Bench(scratch, env, s3, bucket, inbox)
            broker = redis.url(0)
            try:
                if not args.no_cost:
                    record["cost"] = cost(bench, env, broker, args, pages)
                if not args.no_sizing:
                    record["sizing"] = sizing(bench, env, broker, args)
            except BenchError as error:
                print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
                return 2
    path = common.write_json(args.out, record, prefix="celery-")
    print(f"\nwritten {path}  (total {time.perf_counter() - started:.0f} s)")
    return 0


def cost(bench: Bench, env: dict, broker: str, args, pages: int) -> dict:
    print(f"\nPart 1: per-step cost, {FIXTURE.name}, 1 Celery worker", flush=True)
    samples: dict[str, list[dict]] = defaultdict(list)
    with local_celery.workers(bench.scratch / "workers1", ["w1"], env, broker):
        bench.run(FIXTURE, "celery", math.ceil(pages / 4))  # warm-up: imports, first instance
        bench.run(FIXTURE, "in_process", math.ceil(pages / 4))
        for i in range(args.repeat):
            for groups in args.groups:
                for executor in ("in_process", "celery"):
                    sample = bench.run(FIXTURE, executor, math.ceil(pages / groups))
                    samples[executor].append(sample)
                    show(f"round {i + 1} {executor} {groups} groups", sample)
    result: dict = {"samples": samples}
    for executor, runs in samples.items():
        fixed, per_step = fit([(s["steps"], s["run_s"]) for s in runs])
        result[executor] = {"fixed_s": fixed, "per_step_s": per_step}
        print(f"  {executor:<10} run = {fixed:.2f} s + {per_step:.3f} s per step")
    celery_runs = samples["celery"]
    split = {k: median(s["split"][k] for s in celery_runs) for k in celery_runs[0]["split"]}
    result["celery_split"] = split
    extra = result["celery"]["per_step_s"] - result["in_process"]["per_step_s"]
    result["celery_extra_per_step_s"] = extra
    print(f"  a step costs {extra:.2f} s more on Celery; medians per Celery step: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in split.items()), flush=True)  # fmt: skip
    return result


def sizing(bench: Bench, env: dict, broker: str, args) -> dict:
    report = scaled_report(args.scale, bench.scratch)
    print(f"\nPart 2: default sizing, {report.name} ({140 * args.scale} pages); targets "
          f"{TARGET_UNITS}", flush=True)  # fmt: skip
    samples: dict[str, list[dict]] = defaultdict(list)
    paired: dict[str, list[float]] = defaultdict(list)  # run / in-process run of the same round
    for workers in (1, 2):
        names = [f"w{i + 1}" for i in range(workers)]
        with local_celery.workers(bench.scratch / f"workers{workers}", names, env, broker):
            for i in range(args.sizing_repeat):
                base = bench.run(report, "in_process")
                samples[f"in_process_{workers}w"].append(base)
                show(f"round {i + 1} in_process", base)
                variants = [(f"celery_{workers}w", 0)] + [
                    (f"celery_1w_{g}_groups", math.ceil(140 * args.scale / g))
                    for g in (args.sizing_groups if workers == 1 else [])
                ]
                for name, pages in variants:
                    sample = bench.run(report, "celery", pages)
                    samples[name].append(sample)
                    paired[name].append(sample["run_s"] / base["run_s"])
                    show(f"round {i + 1} {name}", sample)
                    if name == "celery_1w":  # in-process on Celery's plan: the cost of Celery alone
                        pages = math.ceil(140 * args.scale / sample["groups"])
                        same = bench.run(report, "in_process", pages)
                        samples["in_process_celery_plan"].append(same)
                        paired["in_process_celery_plan"].append(same["run_s"] / base["run_s"])
                        paired["celery_1w_vs_same_plan"].append(sample["run_s"] / same["run_s"])
                        show(f"round {i + 1} in_process, Celery's plan", same)
    result: dict = {"report_pages": 140 * args.scale, "samples": samples}
    for name, runs in samples.items():
        ratio = median(paired[name]) if name in paired else 1.0
        result[name] = {"run_s": median(s["run_s"] for s in runs), "paired_x": ratio}
        print(f"  {name:<22} {result[name]['run_s']:7.2f} s  {ratio:5.2f}x in-process (paired)  "
              f"({runs[0]['groups']} groups, {runs[0]['steps']} steps)")  # fmt: skip
    same = median(paired["celery_1w_vs_same_plan"])
    result["celery_1w_vs_same_plan"] = same
    print(f"  celery_1w / in-process on the same plan: {same:.2f}x (paired)")
    overhead = result["celery_1w"]["paired_x"] - 1
    result["celery_overhead"] = overhead
    print(f"  Celery overhead (1 worker vs in-process, default sizing): {overhead:.0%}; goal < "
          f"{GOAL:.0%}: {'met' if overhead < GOAL else 'NOT met'}")  # fmt: skip
    return result


if __name__ == "__main__":
    sys.exit(main())
