"""`python -m bench.production`: the Dagster run on the production configuration against the
plain loop on local disk, in one process, as paired ratios (goal: at most 1.5x).

Production here: `build_defs("production")` (S3 inbox, S3 store, S3 IO manager) on the committed
deploy/production/dagster.yaml (Postgres storage, S3 compute logs), with PostgreSQL at
127.0.0.1:5432 when it answers (else a throwaway server) and moto's S3 server in its own process
on a loopback port. Every run gets a fresh database and fresh buckets. The embedded-default run
(`bench.measure.dagster`) runs in the same rounds, to separate Postgres + S3 from Dagster itself.
When PgBouncer is installed, the production run also runs through it (`dagster_production_pooled`:
the same database server behind a session-mode pooler, devstack/local_pgbouncer.py), since
dagster-postgres opens a new connection per event a run writes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from statistics import median

import dagster as dg

from bench import common, measure
from bench.common import ROOT, BenchError, own_cpu, proc_cpu, s3_server_pids
from bench.measure import MONTH, QUIET, Sample
from devstack import local_pgbouncer, local_s3
from devstack.local_postgres import Server, fresh_database, local_server
from report_pipeline.definitions import build_defs
from report_pipeline.defs.deployment import library_seams

INSTANCE_YAML = ROOT / "deploy" / "production" / "dagster.yaml"
VARIANTS = ["plain", "dagster", "dagster_production"]
POOLED = "dagster_production_pooled"  # through PgBouncer, when it is installed


def production(
    pdf: Path, scratch: Path, server: Server, endpoint: str, pooler: Server | None = None
) -> Sample:
    """extract_report_job for one partition, the report read from the S3 inbox (through
    `pooler` to the database when given). Besides the times: the CPU seconds moto's server and
    this process (with its decoders) spent in the run."""
    s3 = local_s3.client(endpoint)
    bucket, inbox = (local_s3.private_bucket(s3, f"b-{uuid.uuid4().hex[:16]}") for _ in "12")
    s3.put_object(Bucket=inbox, Key=f"incoming/{MONTH}/{pdf.name}", Body=pdf.read_bytes())
    with (
        measure.fresh_dir(scratch, "production-") as tmp,
        fresh_database(server, "rp_bench") as url,
    ):
        if pooler is not None:  # the same database, through the pooler
            url = pooler.url(url.rsplit("/", 1)[1])
        os.environ.update(
            {
                "DAGSTER_PG_URL": url,
                "REPORT_PIPELINE_S3_BUCKET": bucket,
                "REPORT_PIPELINE_INBOX_BUCKET": inbox,
                "REPORT_PIPELINE_INBOX_PREFIX": "incoming",
                "REPORT_PIPELINE_WORK": str(tmp / "work"),
                "DAGSTER_HOME": str(tmp / "home"),  # the instance's local files
            }
        )  # fmt: skip: read when the resources and the instance are used
        (tmp / "home").mkdir()
        shutil.copyfile(INSTANCE_YAML, tmp / "home" / "dagster.yaml")
        job = build_defs("production").resolve_job_def("extract_report_job")
        # A run process parses botocore's service models once, for its first S3 client (its
        # later clients share them, defs/deployment/library_seams.py): make each run pay that
        # parse here too, instead of only the first run of this long-lived process.
        library_seams.forget_shared_models()
        moto = s3_server_pids(endpoint)
        with dg.DagsterInstance.from_config(str(tmp / "home")) as instance:
            with measure.settled_heap():
                cpu = (sum(map(proc_cpu, moto)), own_cpu())
                start = time.perf_counter()
                result = job.execute_in_process(
                    partition_key=MONTH, instance=instance, run_config=QUIET, raise_on_error=False
                )
                wall = time.perf_counter() - start
            moto_cpu, run_cpu = sum(map(proc_cpu, moto)) - cpu[0], own_cpu() - cpu[1]
            sample = measure._summarise(result, instance, wall)  # noqa: SLF001
            sample.update(moto_cpu_s=moto_cpu, cpu_s=run_cpu)
    archived = s3.list_objects_v2(Bucket=bucket, Prefix="archive/")["KeyCount"]
    logs = s3.list_objects_v2(Bucket=bucket, Prefix="dagster/compute_logs/")["KeyCount"]
    io = s3.list_objects_v2(Bucket=bucket, Prefix="dagster/io/")["KeyCount"]
    if not (archived and logs and io):
        raise BenchError(f"production run left archive {archived}, logs {logs}, io {io} objects")
    return sample


def bench_report(
    pdf: Path, scratch: Path, server: Server, endpoint: str, repeat: int,
    pooler: Server | None = None,
) -> dict:  # fmt: skip
    runs = {
        "plain": lambda: measure.plain(pdf, scratch),
        "dagster": lambda: measure.dagster(pdf, scratch),
        "dagster_production": lambda: production(pdf, scratch, server, endpoint),
    }
    if pooler is not None:
        runs[POOLED] = lambda: production(pdf, scratch, server, endpoint, pooler)
    samples: dict[str, list[Sample]] = defaultdict(list)
    loads = []
    for i in range(repeat + 1):  # round 0: untimed warm-up
        load = os.getloadavg()[0]
        done = {name: run() for name, run in runs.items()}
        for name in list(runs)[1:]:
            measure.check_counts(done["plain"]["counts"], done[name], f"{pdf.name} {name}")
        label = "warm-up" if i == 0 else f"round {i}/{repeat}"
        times = "  ".join(f"{n} {s['wall_s']:.2f}s" for n, s in done.items())
        print(f"  {label}: {times}  (load {load:.1f})")
        for name, sample in done.items():
            if i:
                samples[name].append(sample)
        loads += [load] if i else []
    plain = [s["wall_s"] for s in samples["plain"]]
    rows = {}
    for name in runs:
        for field in ("wall_s", "run_s") if name != "plain" else ("wall_s",):
            values = [s[field] for s in samples[name]]
            rows[f"{name} {field}"] = {
                "median_s": median(values),
                "paired_ratio": median(v / p for v, p in zip(values, plain, strict=True)),
            }
    ratios = [s["wall_s"] / p for s, p in zip(samples["dagster_production"], plain, strict=True)]
    cpu = {
        "moto_cpu_s": median(s["moto_cpu_s"] for s in samples["dagster_production"]),
        "run_cpu_s": median(s["cpu_s"] for s in samples["dagster_production"]),
        # moto's CPU ran on the run's two cores: without it the wall would be somewhere between
        # wall - moto CPU (had every moto CPU second delayed the run) and the wall itself
        "wall_minus_moto_paired_ratio": median(
            (s["wall_s"] - s["moto_cpu_s"]) / p
            for s, p in zip(samples["dagster_production"], plain, strict=True)
        ),
        "paired_ratios": ratios,
    }
    return {"name": pdf.name, "rows": rows, "samples": dict(samples), "cpu": cpu, "loads": loads}


GOAL = 1.5  # Postgres + S3 run / plain loop on local disk (issue 10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.production", description=__doc__)
    parser.add_argument("--reports", nargs="+", type=Path,
                        default=[ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"])  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument(
        "--target",
        type=float,
        default=None,
        help=f"exit 1 if the wall ratio exceeds this (the issue's goal: {GOAL}x)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    common.clear_foreign_s3_settings()
    with local_server() as server, local_s3.moto_server() as endpoint, ExitStack() as stack:
        os.environ.update({**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
        kind = "throwaway" if server.throwaway else "shared"
        print(f"PostgreSQL {kind} at {server.host}:{server.port}; moto S3 at {endpoint}")
        pooler = None
        if local_pgbouncer.binary():
            pooler = stack.enter_context(local_pgbouncer.pgbouncer(server))
            print(f"PgBouncer (session pooling) in front of it at {pooler.host}:{pooler.port}")
        else:
            print(f"pgbouncer is not installed: no {POOLED} runs (Debian: pgbouncer)")
        try:
            with tempfile.TemporaryDirectory(prefix="report-bench-prod-") as scratch:
                results = [
                    bench_report(pdf, Path(scratch), server, endpoint, args.repeat, pooler)
                    for pdf in args.reports
                ]
        except BenchError as error:
            print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
            return 2
    over = []
    for result in results:
        print(f"\n{result['name']} (medians of {args.repeat} rounds; paired: per-round ratio)")
        for row, r in result["rows"].items():
            print(f"  {row:<34}{r['median_s']:>8.2f} s{r['paired_ratio']:>8.2f}x plain")
        ratio = result["rows"]["dagster_production wall_s"]["paired_ratio"]
        cpu = result["cpu"]
        print(f"  dagster_production CPU per run: moto {cpu['moto_cpu_s']:.2f} s, this process "
              f"and its decoders {cpu['run_cpu_s']:.2f} s; wall minus moto's CPU "
              f"{cpu['wall_minus_moto_paired_ratio']:.2f}x plain (a lower bound for an S3 that "
              "costs this machine no CPU)")  # fmt: skip
        print(f"  goal {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'}")
        if f"{POOLED} wall_s" in result["rows"]:
            pooled = result["rows"][f"{POOLED} wall_s"]["paired_ratio"]
            print(f"  goal {GOAL}x through PgBouncer: {'met' if pooled <= GOAL else 'NOT met'}")
        if args.target is not None and ratio > args.target:
            over.append(result["name"])
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)")
    record = {"machine": common.machine(load=load), "args": vars(args), "reports": results}
    path = common.write_json(args.out, record, prefix="production-")
    print(f"\nwritten {path}  (total {time.perf_counter() - started:.0f} s)")
    for name in over:
        print(f"OVER TARGET {name}: Postgres + S3 wall above {args.target}x", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
