"""`python -m bench.experiments.celery_launcher`: dagster-celery's `CeleryRunLauncher` (each run is
a task in a long-lived Celery worker) against the default launcher (the code server spawns a new
interpreter per run), for a UI launch of one month's report_manifest (issue 31, items 2 and 4).

An experiment, not the product. Each sitting is bench.ui_launch's measurement (`dagster dev` on a
throwaway DAGSTER_HOME holding the committed dagster_home/dagster.yaml, the intake sensor off, a
fresh month per round launched as the UI's Materialize button does, polled to SUCCESS), once with
the default launcher and once with that dagster.yaml plus

    run_launcher: {module: dagster_celery.launcher, class: CeleryRunLauncher,
                   config: {broker: redis://127.0.0.1:PORT/0, backend: redis://...:PORT/1}}

a throwaway `redis-server` on a free loopback port (devstack/local_celery.py) and ONE worker,
`celery -A dagster_celery.app worker --concurrency 1` (what `dagster-celery worker start` runs),
on the same DAGSTER_HOME and roots, its broker and backend from a `dagster_celery_config` module
on its PYTHONPATH (as `dagster-celery worker start -y` writes one). The launcher is the
instance's, so the two cannot alternate round by round in one `dagster dev`: the sittings
alternate (`--sittings`, default default celery default celery), each with a warm-up round
(not counted; on Celery it is the worker's first run) and `--rounds` timed rounds. `celery1`:
the same worker with `--max-tasks-per-child 1`, so each run gets a new child forked from the
worker, which has imported Dagster (dagster_celery.app) but not the definitions.

Per round: click → Success and its segments (bench.ui_launch), and the CPU seconds of every
process of dagster dev's group and of the Celery worker's (the run's own included), click to
Success. A run that does not succeed, or a month without exactly one manifest with the same
counts as the others, voids the result (exit 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import date
from pathlib import Path
from statistics import median

import dagster as dg

from bench import common
from bench.backfill import EMBEDDED, FIXTURE, embedded_home, keep_logs, month_names
from bench.backfill_live import Live, dagster_dev, wait
from bench.common import ROOT, BenchError
from bench.ui_launch import UiLaunch, check_manifests, segments
from devstack import local_celery
from report_pipeline.core.storage.local_store import LocalStore

TOTAL = "total: click → Success"
SHOWN = {"STARTING → RUN_START": "worker",
         "  launch, worker spawn, Dagster import, instance": "to process",
         "  definitions load → RUN_START": "defs→start",
         "run duration (RUN_START → RUN_SUCCESS)": "run", TOTAL: "total"}  # fmt: skip
LAUNCHER = """
run_launcher:
  module: dagster_celery.launcher
  class: CeleryRunLauncher
  config:
    broker: {broker}
    backend: {backend}
"""


@contextmanager
def celery_worker(
    root: Path, env: dict[str, str], redis: local_celery.Redis, fresh: bool = False
) -> Iterator[int]:
    """One `celery -A dagster_celery.app worker` with one prefork child (`fresh`: a new child,
    forked from the worker, for every run), ready: its pgid."""
    config = root / "celery-config"
    config.mkdir()
    (config / "dagster_celery_config.py").write_text(
        f"broker_url = {redis.url(0)!r}\nresult_backend = {redis.url(1)!r}\n"
    )
    log = root / "celery-worker.log"
    path = os.pathsep.join(p for p in (str(config), env.get("PYTHONPATH", "")) if p)
    command = [str(Path(sys.executable).parent / "celery"), "-A", "dagster_celery.app", "worker",
               "--prefetch-multiplier=1", "--concurrency", "1", "-Q", "dagster",
               "-n", "bench@%h", "--loglevel", "INFO"]  # fmt: skip
    command += ["--max-tasks-per-child", "1"] if fresh else []
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env={**env, "PYTHONPATH": path}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:

        def ready() -> bool:
            if process.poll() is not None:
                raise BenchError(f"the Celery worker exited; see {log}")
            return b" ready." in log.read_bytes()

        wait(ready, "the Celery worker", 120, log)
        yield process.pid
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def sitting(root: Path, launcher: str, months: list[str], args) -> list[dict]:
    """One `dagster dev` with `launcher`: a warm-up round then the timed ones, one month each."""
    root.mkdir()
    home, env = embedded_home(root, args.instance)
    env["REPORT_PIPELINE_FIRST_MONTH"] = args.first_month  # the partitions start there
    with (
        launcher_stack(launcher, root, home, env) as workers,
        dagster_dev(root, env) as live,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        live.workers = workers
        live.stop_sensor("new_report_sensor")
        ui = UiLaunch(live, instance, args)
        rounds = []
        for i, month in enumerate(months):
            one = one_round(live, ui, root, month, args)
            said = ", ".join(f"{v} {one['segments'][k]:.2f}" for k, v in SHOWN.items())
            cpu = ", ".join(f"{k} {v:.2f}" for k, v in sorted(one["cpu_s"].items()))
            label = "warm-up" if i == 0 else f"round {i}"
            print(f"  {launcher:<8} {label} {month}: {said}; "
                  f"CPU {sum(one['cpu_s'].values()):.2f} s ({cpu})", flush=True)  # fmt: skip
            rounds.append(one)
        ui.idle()
    check_manifests(LocalStore(root / "store"), months)
    return rounds


@contextmanager
def launcher_stack(launcher: str, root: Path, home: Path, env: dict) -> Iterator[tuple]:
    """Nothing for the default launcher; for Celery, Redis, the launcher in dagster.yaml and the
    worker (its process group)."""
    if launcher == "default":
        yield ()
        return
    with local_celery.redis_server() as redis:
        with open(home / "dagster.yaml", "a") as yaml:
            yaml.write(LAUNCHER.format(broker=redis.url(0), backend=redis.url(1)))
        with celery_worker(root, env, redis, fresh=launcher == "celery1") as pgid:
            yield (pgid,)


def one_round(live: Live, ui: UiLaunch, root: Path, month: str, args) -> dict:
    (root / "inbox" / month).mkdir()
    shutil.copyfile(args.report, root / "inbox" / month / args.report.name)
    ui.idle()
    time.sleep(args.settle)
    before = live.cpu()
    one = ui.click(month)
    after = live.cpu()
    one["cpu_s"] = {k: after[k] - before.get(k, 0.0) for k in after if after[k] > before.get(k, 0)}
    one["segments"] = segments(one)
    del one["early_events"]
    return one


def summary(sittings: list[tuple[str, list[dict]]]) -> dict:
    found: dict = {}
    for launcher in dict.fromkeys(name for name, _ in sittings):
        timed = [r for name, rounds in sittings if name == launcher for r in rounds[1:]]
        warm = [rounds[0] for name, rounds in sittings if name == launcher]
        found[launcher] = {
            "rounds": len(timed),
            "median_s": {k: median(r["segments"][k] for r in timed) for k in SHOWN},
            "median_cpu_s": median(sum(r["cpu_s"].values()) for r in timed),
            "warm_up_total_s": [r["segments"][TOTAL] for r in warm],
            "warm_up_cpu_s": [sum(r["cpu_s"].values()) for r in warm],
        }
    return found


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.experiments.celery_launcher",
                                     description=__doc__, formatter_class=raw)  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds a sitting (5)")
    parser.add_argument("--sittings", nargs="+", choices=["default", "celery", "celery1"],
                        default=["default", "celery", "default", "celery"])  # fmt: skip
    parser.add_argument("--report", type=Path, default=FIXTURE)
    parser.add_argument("--instance", type=Path, default=EMBEDDED)
    parser.add_argument("--settle", type=float, default=1.0)
    parser.add_argument("--poll", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()
    print(f"UI launches of report_manifest, {args.report.name}, sittings {args.sittings}, "
          f"{args.rounds} rounds each; load {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}",
          flush=True)  # fmt: skip
    count = (args.rounds + 1) * len(args.sittings)
    today = date.today()  # every month ended: the current one's partition does not exist yet
    first = today.year * 12 + today.month - 1 - count
    args.first_month = f"{first // 12:04d}-{first % 12 + 1:02d}"
    months = month_names(count, args.first_month)
    done: list[tuple[str, list[dict]]] = []
    with tempfile.TemporaryDirectory(prefix="report-bench-celery-launcher-") as scratch:
        try:
            for i, launcher in enumerate(args.sittings):
                mine = months[i * (args.rounds + 1) : (i + 1) * (args.rounds + 1)]
                done.append((launcher, sitting(Path(scratch) / f"s{i}", launcher, mine, args)))
        except BenchError as error:
            kept = keep_logs(Path(scratch), args.out)
            print(f"BENCHMARK INVALID: {error}" + (f"; logs: {kept}" if kept else ""),
                  file=sys.stderr)  # fmt: skip
            return 2
    found = summary(done)
    end = os.getloadavg()
    print(f"\nmedians (s; load at the end {end[0]:.2f} / {end[1]:.2f} / {end[2]:.2f}):")
    for launcher, f in found.items():
        said = ", ".join(f"{v} {f['median_s'][k]:.2f}" for k, v in SHOWN.items())
        warm = " ".join(f"{t:.2f}/{c:.2f}" for t, c in
                        zip(f["warm_up_total_s"], f["warm_up_cpu_s"], strict=True))  # fmt: skip
        print(f"  {launcher:<8} {f['rounds']} rounds: {said}; CPU {f['median_cpu_s']:.2f} s; "
              f"warm-up total/CPU {warm}")  # fmt: skip
    record = {"args": {k: str(v) for k, v in vars(args).items()}, "summary": found,
              "sittings": done, "load_start": load, "load_end": end,
              "machine": common.machine()}  # fmt: skip
    print(f"written {common.write_json(args.out, record, prefix='celery-launcher-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
