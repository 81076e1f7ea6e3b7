"""`python -m bench.production`: the Dagster run on the production configuration against the
plain loop on local disk, in one process, as paired ratios (goal: at most 1.5x).

Production here: `build_defs("production")` (S3 inbox, S3 store, S3 IO manager) on the committed
deploy/production/dagster.yaml (Postgres storage, S3 compute logs), with PostgreSQL at
127.0.0.1:5432 when it answers (else a throwaway server) and moto's S3 server in its own process
on a loopback port. Every run gets a fresh database and fresh buckets. The embedded-default run
(`bench.measure.dagster`) runs in the same rounds, to separate Postgres + S3 from Dagster itself.
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
from pathlib import Path
from statistics import median

import dagster as dg

from bench import common, measure
from bench.common import ROOT, BenchError
from bench.measure import MONTH, QUIET, Sample
from report_pipeline import local_s3
from report_pipeline.definitions import build_defs
from report_pipeline.local_postgres import Server, fresh_database, local_server

INSTANCE_YAML = ROOT / "deploy" / "production" / "dagster.yaml"
VARIANTS = ["plain", "dagster", "dagster_production"]


def production(pdf: Path, scratch: Path, server: Server, endpoint: str) -> Sample:
    """extract_report_job for one partition, the report read from the S3 inbox."""
    s3 = local_s3.client(endpoint)
    bucket, inbox = (local_s3.private_bucket(s3, f"b-{uuid.uuid4().hex[:16]}") for _ in "12")
    s3.put_object(Bucket=inbox, Key=f"incoming/{MONTH}/{pdf.name}", Body=pdf.read_bytes())
    with (
        measure.fresh_dir(scratch, "production-") as tmp,
        fresh_database(server, "rp_bench") as url,
    ):
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
        with dg.DagsterInstance.from_config(str(tmp / "home")) as instance:
            start = time.perf_counter()
            result = job.execute_in_process(
                partition_key=MONTH, instance=instance, run_config=QUIET, raise_on_error=False
            )
            sample = measure._summarise(result, instance, time.perf_counter() - start)  # noqa: SLF001
    archived = s3.list_objects_v2(Bucket=bucket, Prefix="archive/")["KeyCount"]
    logs = s3.list_objects_v2(Bucket=bucket, Prefix="dagster/compute_logs/")["KeyCount"]
    io = s3.list_objects_v2(Bucket=bucket, Prefix="dagster/io/")["KeyCount"]
    if not (archived and logs and io):
        raise BenchError(f"production run left archive {archived}, logs {logs}, io {io} objects")
    return sample


def bench_report(pdf: Path, scratch: Path, server: Server, endpoint: str, repeat: int) -> dict:
    runs = {
        "plain": lambda: measure.plain(pdf, scratch),
        "dagster": lambda: measure.dagster(pdf, scratch),
        "dagster_production": lambda: production(pdf, scratch, server, endpoint),
    }
    samples: dict[str, list[Sample]] = defaultdict(list)
    for i in range(repeat + 1):  # round 0: untimed warm-up
        done = {name: run() for name, run in runs.items()}
        for name in VARIANTS[1:]:
            measure.check_counts(done["plain"]["counts"], done[name], f"{pdf.name} {name}")
        label = "warm-up" if i == 0 else f"round {i}/{repeat}"
        print(f"  {label}: " + "  ".join(f"{n} {s['wall_s']:.2f}s" for n, s in done.items()))
        for name, sample in done.items():
            if i:
                samples[name].append(sample)
    plain = [s["wall_s"] for s in samples["plain"]]
    rows = {}
    for name in VARIANTS:
        for field in ("wall_s", "run_s") if name != "plain" else ("wall_s",):
            values = [s[field] for s in samples[name]]
            rows[f"{name} {field}"] = {
                "median_s": median(values),
                "paired_ratio": median(v / p for v, p in zip(values, plain, strict=True)),
            }
    return {"name": pdf.name, "rows": rows, "samples": dict(samples)}


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
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
                 "REPORT_PIPELINE_S3_PREFIX", "REPORT_PIPELINE_INBOX"):  # fmt: skip
        os.environ.pop(name, None)
    with local_server() as server, local_s3.moto_server() as endpoint:
        os.environ.update({**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
        kind = "throwaway" if server.throwaway else "shared"
        print(f"PostgreSQL {kind} at {server.host}:{server.port}; moto S3 at {endpoint}")
        try:
            with tempfile.TemporaryDirectory(prefix="report-bench-prod-") as scratch:
                results = [
                    bench_report(pdf, Path(scratch), server, endpoint, args.repeat)
                    for pdf in args.reports
                ]
        except BenchError as error:
            print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
            return 2
    over = []
    for result in results:
        print(f"\n{result['name']} (medians of {args.repeat} rounds; paired: per-round ratio)")
        for row, r in result["rows"].items():
            print(f"  {row:<28}{r['median_s']:>8.2f} s{r['paired_ratio']:>8.2f}x plain")
        ratio = result["rows"]["dagster_production wall_s"]["paired_ratio"]
        print(f"  goal {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'}")
        if args.target is not None and ratio > args.target:
            over.append(result["name"])
    record = {"machine": common.machine(), "args": vars(args), "reports": results}
    path = common.write_json(args.out, record, prefix="production-")
    print(f"\nwritten {path}  (total {time.perf_counter() - started:.0f} s)")
    for name in over:
        print(f"OVER TARGET {name}: Postgres + S3 wall above {args.target}x", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
