"""`python -m bench.experiments.profile_production`: where a production run's time goes.

After an untimed warm-up, `--repeat` production runs exactly as `bench.production` makes them
(fresh database and buckets; no plain loop or embedded run beside them), each reported with:
- seconds inside each op, and the run's event-log timeline: every gap above `--gap` seconds
  before an event (what the run did between two events), and the events by type;
- every S3 request counted and timed, by who asked (the store by top-level prefix, the IO
  manager under dagster/io/, compute logs under dagster/compute_logs/, the inbox) and operation;
  the time is the caller's wall time inside botocore (threads overlap, so it can exceed the run);
- time in Postgres event writes (`store_event`), S3 IO manager loads and dumps, compute-log
  uploads;
- CPU seconds during the run of moto's server process (from /proc) and of this process with
  its decoder children (getrusage). Not Postgres's: dagster-postgres opens a connection per
  event write outside the webserver, and each backend's CPU leaves /proc when it exits.
`--cprofile FILE` profiles one more run (not counted in the medians). Linux only (/proc).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

import botocore.client

from bench import measure
from bench import production as prod
from bench.common import ROOT, own_cpu, proc_cpu, s3_server_pids
from devstack import local_s3
from devstack.local_postgres import local_server

_lock = threading.Lock()
requests: Counter = Counter()
request_s: defaultdict = defaultdict(float)
calls: Counter = Counter()
call_s: defaultdict = defaultdict(float)
timeline: list = []


def _who(params: dict[str, Any]) -> str:
    key = str(params.get("Key") or params.get("Prefix") or "")
    for prefix, who in (("dagster/io", "io manager"), ("dagster/compute_logs", "compute logs"),
                        ("incoming", "inbox")):  # fmt: skip
        if key.startswith(prefix):
            return who
    return f"store {key.split('/', 1)[0]}/" if key else "bucket"


def _count_requests() -> None:
    original = botocore.client.BaseClient._make_api_call

    def timed(self: Any, operation: str, params: dict[str, Any]) -> Any:
        start = time.perf_counter()
        try:
            return original(self, operation, params)
        finally:
            with _lock:
                requests[(_who(params), operation)] += 1
                request_s[(_who(params), operation)] += time.perf_counter() - start

    botocore.client.BaseClient._make_api_call = timed


def _time_method(owner: type, name: str, label: str) -> None:
    original: Callable = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with _lock:
                calls[label] += 1
                call_s[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def _instrument() -> None:
    from dagster_aws.s3.compute_log_manager import S3ComputeLogManager
    from dagster_aws.s3.io_manager import PickledObjectS3IOManager
    from dagster_postgres.event_log.event_log import PostgresEventLogStorage

    _count_requests()
    _time_method(PostgresEventLogStorage, "store_event", "Postgres store_event")
    _time_method(PickledObjectS3IOManager, "dump_to_path", "S3 IO manager dump")
    _time_method(PickledObjectS3IOManager, "load_from_path", "S3 IO manager load")
    _time_method(S3ComputeLogManager, "upload_to_cloud_storage", "compute log upload")
    summarise = measure._summarise  # noqa: SLF001

    def keep_timeline(result: Any, instance: Any, wall: float) -> dict:
        timeline[:] = instance.all_logs(result.run_id)
        return summarise(result, instance, wall)

    measure._summarise = keep_timeline  # noqa: SLF001


def _event_name(entry: Any) -> str:
    return entry.dagster_event.event_type_value if entry.dagster_event else "LOG"


def report(sample: dict, cpu: dict[str, float], gap: float) -> None:
    print(f"  run {sample['run_s']:.2f} s, wall {sample['wall_s']:.2f} s; CPU during it: moto "
          f"{cpu['moto']:.2f} s, this process + decoders {cpu['self']:.2f} s")  # fmt: skip
    print("  ops: " + "  ".join(f"{k} {v:.2f}" for k, v in sorted(sample["op_s"].items())))
    kinds = Counter(_event_name(e) for e in timeline)
    print(f"  events {len(timeline)}: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    for before, entry in zip(timeline, timeline[1:], strict=False):
        if entry.timestamp - before.timestamp > gap:
            print(f"    +{entry.timestamp - timeline[0].timestamp:6.2f} s after "
                  f"{entry.timestamp - before.timestamp:5.2f} s: {_event_name(entry)} "
                  f"{(entry.step_key or '')[:50]}")  # fmt: skip
    for label, total in sorted(call_s.items(), key=lambda item: -item[1]):
        print(f"  {label:<28}{calls[label]:>5} calls {total:>7.2f} s")
    print(f"  S3 requests: {sum(requests.values())}")
    for key, total in sorted(request_s.items(), key=lambda item: -item[1]):
        count = requests[key]
        print(
            f"    {key[0]:<20}{key[1]:<22}{count:>5}{total:>8.2f} s{1000 * total / count:>7.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.experiments.profile_production", description=__doc__
    )
    parser.add_argument(
        "--report", type=Path, default=ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--gap", type=float, default=0.05, help="show gaps longer than this (s)")
    parser.add_argument("--cprofile", type=Path, help="profile one more run into this file")
    args = parser.parse_args()  # fmt: skip
    _instrument()
    with local_server() as server, local_s3.moto_server() as endpoint:
        os.environ.update({**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
        moto = s3_server_pids(endpoint)
        with tempfile.TemporaryDirectory(prefix="report-profile-") as scratch:
            prod.production(args.report, Path(scratch), server, endpoint)  # warm-up
            rows = []
            for n in range(args.repeat + bool(args.cprofile)):
                profiler = cProfile.Profile() if n == args.repeat else None
                for table in (requests, request_s, calls, call_s):
                    table.clear()
                before = (sum(map(proc_cpu, moto)), own_cpu())
                load = os.getloadavg()[0]
                if profiler:
                    profiler.enable()
                sample = prod.production(args.report, Path(scratch), server, endpoint)
                if profiler:
                    profiler.disable()
                    profiler.dump_stats(args.cprofile)
                after = (sum(map(proc_cpu, moto)), own_cpu())
                spent = [b - a for a, b in zip(before, after, strict=True)]
                cpu = dict(zip(("moto", "self"), spent, strict=True))
                label = "cProfile run" if profiler else f"run {n + 1}/{args.repeat}"
                print(f"{label} (load {load:.1f}):")
                report(sample, cpu, args.gap)
                if not profiler:
                    rows.append({**cpu, "run_s": sample["run_s"], "wall_s": sample["wall_s"]})
    if rows:
        print("medians: " + ", ".join(f"{k} {median(r[k] for r in rows):.2f} s" for k in rows[0]))


if __name__ == "__main__":
    main()
