"""`python -m bench.cold`: one report per fresh process, as a run worker runs it (`dagster api
execute_run` loads the code location, runs one run and exits), against the plain loop run the
same way, as a one-off script would.

Variants, each sample its own process, alternating, the order reversed every other round:
- `plain`: the plain loop (`bench.measure.plain`) on local disk, without the definitions,
  leaving the job's artifacts: the manifest and the manifest table (pandas, CSV);
- `manifest_only`: the same loop without the table (the baseline before 2026-11-30: the job's
  manifest_table asset imports pandas and writes a table, which that baseline did not);
- `frozen`: imports report_pipeline.definitions, which freezes what it loaded (gc.freeze(), as
  shipped), then runs extract_report_job for one partition on the production configuration
  through PgBouncer exactly as `bench.production` does (Postgres at 127.0.0.1:5432 or a
  throwaway one; moto's server, started here once, on loopback);
- `thawed`: the same with gc.unfreeze() right after the import (the code before the freeze).
Nothing is warmed up: every first use (imports done lazily, botocore's models, PyMuPDF) is paid
inside the run, as a run worker pays it. Every collection inside the timed run is timed with
gc.callbacks (not those of the set-up: server, buckets, definitions, instance).
Printed: per sample and as medians, the wall, the CPU of the process and its decoders, the
seconds spent collecting and the full (generation 2) passes; and the paired ratios (a round's
production wall over its plain wall, and over its manifest_only wall).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from bench import common
from bench.common import ROOT

VARIANTS = ["plain", "manifest_only", "frozen", "thawed"]
RUNS = VARIANTS[2:]  # the production runs
FIXTURE = ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"


def sample(variant: str, endpoint: str, report: str = str(FIXTURE)) -> dict:
    """One run in this (fresh) process: the `--child` side."""
    from devstack import local_s3

    os.environ.update({**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
    if variant in RUNS:
        import report_pipeline.definitions  # noqa: F401  (the code location, loaded and frozen)
    if variant == "thawed":
        gc.unfreeze()
    from bench import measure

    measure.SETTLE = False  # this process's heap is the one under test
    passes: list[tuple[int, float]] = []
    started: list[float] = []

    def timed(phase: str, info: dict) -> None:  # collections inside the timed run only
        if phase == "start":
            started.append(time.perf_counter())
        elif measure.TIMING:
            passes.append((info["generation"], time.perf_counter() - started.pop()))
        else:
            started.pop()

    with tempfile.TemporaryDirectory() as scratch:
        gc.callbacks.append(timed)
        run = _run(variant, Path(scratch), endpoint, Path(report))
        gc.callbacks.remove(timed)
    return {
        "variant": variant, "wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
        "gc_s": sum(s for _, s in passes), "passes": len(passes),
        "full_passes_s": [round(s, 3) for g, s in passes if g == 2],
    }  # fmt: skip


def _run(variant: str, scratch: Path, endpoint: str, report: Path) -> dict:
    if variant not in RUNS:
        from bench import measure
        from bench.common import own_cpu

        cpu = own_cpu()
        run = measure.plain(report, scratch, table=variant == "plain")
        return {**run, "cpu_s": own_cpu() - cpu}
    from bench import production
    from devstack import local_pgbouncer
    from devstack.local_postgres import local_server

    with local_server() as server, local_pgbouncer.pgbouncer(server) as pooler:
        return production.production(report, scratch, server, endpoint, pooler)


def child(variant: str, endpoint: str, report: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cold", "--child", variant, endpoint, str(report)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise common.BenchError(f"{variant} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.cold", description=__doc__,
                                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--report", type=Path, default=FIXTURE, help="the PDF (default: fixture)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # variant, endpoint, report
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(sample(*args.child)))
        return 0
    from devstack import local_s3

    samples: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    ratios: dict[str, list[float]] = {f"{v}/{p}": [] for v in RUNS for p in VARIANTS[:2]}
    with local_s3.moto_server() as endpoint:
        for i in range(args.rounds):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
            done = {v: child(v, endpoint, args.report.resolve()) for v in order}
            for variant, one in done.items():
                samples[variant].append(one)
            for pair, values in ratios.items():
                run, baseline = pair.split("/")
                values.append(done[run]["wall_s"] / done[baseline]["wall_s"])
            print(f"  round {i + 1}: " + "  ".join(
                f"{v} {s['wall_s']:.2f} s (gc {s['gc_s']:.2f}, full {s['full_passes_s']})"
                for v, s in done.items()), flush=True)  # fmt: skip
    print(f"\n{args.report.name}, one run per fresh process (medians of {args.rounds} rounds)")
    for variant, runs in samples.items():
        fields = {k: median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "gc_s")}
        full = median(sum(r["full_passes_s"]) for r in runs)
        ratio = "  ".join(f"{median(v):.2f}x {pair.split('/')[1]}" for pair, v in ratios.items()
                          if pair.startswith(f"{variant}/"))  # fmt: skip
        print(f"  {variant:<13} wall {fields['wall_s']:.2f} s  cpu {fields['cpu_s']:.2f} s  "
              f"collecting {fields['gc_s']:.3f} s (full passes {full:.3f} s)  {ratio}")  # fmt: skip
    print("  (ratios: paired, a round's wall over the same round's baseline)")
    record = {"machine": common.machine(), "samples": samples, "paired": ratios}
    print(f"written {common.write_json(args.out, record, prefix='cold-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
