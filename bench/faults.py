"""Months under injected storage faults: per-month attempts, retries and wall time.

    uv run python -m bench.faults --months 12 --rate 0.2 --store local|s3 [--seed 7] [--json]

One run of `extract_report_job` per month, one after another, in this process, on a real
instance: the embedded default (LocalStore, a sqlite instance in a temporary DAGSTER_HOME) or
production (the S3 store on a local moto server, a Postgres instance: 127.0.0.1:5432 or a
throwaway server). Not a daemon's backfill (the tests run that: report_pipeline_tests/faults/);
here the figures are the runs' own, without the daemon's and the queue's waits. Faults come from
the fault layer (devstack/faults.py) put in front of the deployment's store, with a journal in
the scratch folder. Each month is then checked through the
store without faults (devstack/fault_runs.py: archived once, attempts as recorded, every object a
faulted extraction had created found again by its retry); a failed check or run is reported,
not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from bench import common
from bench.common import ROOT
from devstack import faults, local_s3
from devstack.fault_runs import (
    months_from,
    not_refound,
    read_journal,
    run_months,
    struck_after_writes,
    verify_month,
)
from devstack.local_postgres import fresh_database, local_server
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import Store

PDF = ROOT / "fixtures" / "pdfs" / "image_paths.pdf"
INSTANCE_YAML = ROOT / "deploy" / "production" / "dagster.yaml"


@contextmanager
def local(tmp: Path, pdf: Path, months: list[str]) -> Setup:
    for name in ("INBOX", "STORE", "WORK"):
        os.environ[f"REPORT_PIPELINE_{name}"] = str(tmp / name.lower())
    for month in months:
        (tmp / "inbox" / month).mkdir(parents=True)
        shutil.copyfile(pdf, tmp / "inbox" / month / pdf.name)
    (tmp / "home").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp / "home")) as instance:
        yield instance, LocalStore(tmp / "store")


Setup = Iterator[tuple[dg.DagsterInstance, Store]]


@contextmanager
def production(tmp: Path, pdf: Path, months: list[str]) -> Setup:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
                 "REPORT_PIPELINE_S3_PREFIX"):  # fmt: skip
        os.environ.pop(name, None)
    with local_server() as server, local_s3.moto_server() as endpoint:
        s3 = local_s3.client(endpoint)
        bucket, inbox = (local_s3.private_bucket(s3, f"f-{uuid.uuid4().hex[:16]}") for _ in "12")
        for month in months:
            s3.put_object(Bucket=inbox, Key=f"incoming/{month}/{pdf.name}", Body=pdf.read_bytes())
        with fresh_database(server, "rp_faults") as url:
            os.environ.update({
                **local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "DAGSTER_PG_URL": url,
                "REPORT_PIPELINE_S3_BUCKET": bucket, "REPORT_PIPELINE_INBOX_BUCKET": inbox,
                "REPORT_PIPELINE_INBOX_PREFIX": "incoming",
                "REPORT_PIPELINE_WORK": str(tmp / "work"), "DAGSTER_HOME": str(tmp / "home"),
            })  # fmt: skip
            (tmp / "home").mkdir()
            shutil.copyfile(INSTANCE_YAML, tmp / "home" / "dagster.yaml")
            with dg.DagsterInstance.from_config(str(tmp / "home")) as instance:
                yield instance, S3Store(s3, bucket)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--rate", type=float, default=0.2, help="transient faults per step attempt")
    parser.add_argument("--store", choices=["local", "s3"], default="local")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--pdf", type=Path, default=PDF)
    parser.add_argument("--pages-per-task", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the JSON record at the end")
    args = parser.parse_args(argv)
    months = months_from("2025-01", args.months)
    os.environ["REPORT_PIPELINE_FIRST_MONTH"] = months[0]
    deployment = "production" if args.store == "s3" else "local"
    os.environ["REPORT_PIPELINE_DEPLOYMENT"] = deployment
    setup = production if args.store == "s3" else local
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="report-bench-faults-") as scratch,
        setup(Path(scratch), args.pdf, months) as (instance, store),
    ):
        journal_file = Path(scratch) / "faults.jsonl"
        spec = f"transient={args.rate},seed={args.seed},journal={journal_file}"
        from report_pipeline.definitions import build_defs  # reads the environment above

        defs = faults.with_store_faults(build_defs(deployment), spec)
        job = defs.resolve_job_def("extract_report_job")
        started = time.perf_counter()
        runs = run_months(job, instance, months, args.pages_per_task)
        wall = time.perf_counter() - started
        problems = {}
        for run in runs:
            try:
                verify_month(store, run)
            except AssertionError as error:
                problems[run.month] = str(error) or "check failed"
        journal = read_journal(journal_file, {run.run_id for run in runs})
    struck = struck_after_writes(journal)
    missed = {f["session"]: keys for f in struck if (keys := not_refound(journal, f))}
    problems.update({session: f"not found again by its retry: {keys}"
                     for session, keys in missed.items()})  # fmt: skip
    rows = [{**run.row(), **fault_counts(journal, run.run_id)} for run in runs]
    print(f"{args.store}: {args.months} months, transient {args.rate} per step attempt, "
          f"seed {args.seed}, {args.pdf.name}, {args.pages_per_task} pages per task")  # fmt: skip
    print(f"{'month':<9}{'ok':>4}{'steps':>7}{'attempts':>10}{'retries':>9}{'max':>5}"
          f"{'drawn':>7}{'faults':>8}{'after writes':>14}{'wall s':>9}")  # fmt: skip
    for r in rows:
        ok = "yes" if r["success"] else "NO"
        print(f"{r['month']:<9}{ok:>4}{r['steps']:>7}{r['attempts']:>10}{r['retries']:>9}"
              f"{r['max_step_attempts']:>5}{r['drawn']:>7}{r['faults']:>8}"
              f"{r['after_writes']:>14}{r['wall_s']:>9.2f}")  # fmt: skip
    attempts, drawn = sum(r["attempts"] for r in rows), sum(r["drawn"] for r in rows)
    print(
        f"{attempts} step attempts: {drawn} drawn faulty ({100 * drawn / attempts:.1f}%), "
        f"{sum(r['faults'] for r in rows)} faulted; {len(struck)} struck an extraction after "
        f"it had created images ({sum(bool(f['created']) for f in struck)} after an upload had "
        f"completed), {len(struck) - len(missed)} re-found them all on retry"
    )
    print(f"total {wall:.1f} s; faults injected {dict(faults.injected)}; load at start {load:.1f}, "
          f"at end {os.getloadavg()[0]:.1f}")  # fmt: skip
    for month, problem in problems.items():
        print(f"CHECK FAILED {month}: {problem}", file=sys.stderr)
    record = {"machine": common.machine(load=os.getloadavg()),
              "args": {**vars(args), "pdf": args.pdf.name}, "months": rows, "wall_s": wall,
              "injected": dict(faults.injected), "struck_after_writes": len(struck),
              "problems": problems}  # fmt: skip
    if args.json:
        print(json.dumps(record, indent=2, default=str))
    return 1 if problems or not all(r["success"] for r in rows) else 0


def fault_counts(journal: list[dict], run_id: str) -> dict[str, int]:
    """The run's step attempts drawn faulty, the faults that struck, and those that struck an
    extraction after it had created images."""
    lines = [line for line in journal if line["scope"] == run_id]
    return {"drawn": sum(line["event"] == "draw" for line in lines),
            "faults": sum(line["event"] == "fault" for line in lines),
            "after_writes": len(struck_after_writes(lines))}  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
