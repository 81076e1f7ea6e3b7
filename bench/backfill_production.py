"""The backfill benchmark on Celery (`python -m bench.backfill --executor celery`): the
production configuration (deploy/production/dagster.yaml: the same queue limits as the embedded
default, Postgres storage, S3 compute logs) with `REPORT_PIPELINE_EXECUTOR=celery`, every step
on one of two Celery workers (report_pipeline.celery_worker, each in its own folder), the reports
in the S3 inbox. PostgreSQL at 127.0.0.1:5432 when it answers (else a throwaway server), a fresh
database, moto's S3 server and a throwaway redis-server, all on loopback, all on this machine."""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from bench.servers import INBOX_PREFIX, PREFIX, production_stack
from devstack import local_celery
from report_pipeline.core.storage.s3_store import S3Store

WORKERS = ["w1", "w2"]
AWS_CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
               "REPORT_PIPELINE_INBOX", "REPORT_PIPELINE_STORE")  # fmt: skip


def celery_backfill(
    root: Path, args: argparse.Namespace, months: list[str], counts: dict,
    log: Callable[[str], None],
) -> dict:  # fmt: skip
    from bench.backfill_live import check_manifests, dagster_dev, run_backfill

    home = root / "home"
    home.mkdir()
    shutil.copyfile(local_celery.PRODUCTION_YAML, home / "dagster.yaml")
    with production_stack("rp_bench_backfill") as stack:
        s3, bucket, inbox, redis = stack.s3, stack.bucket, stack.inbox, stack.redis
        env = {k: v for k, v in os.environ.items() if k not in AWS_CLEARED}
        env.update({**stack.env, "REPORT_PIPELINE_EXECUTOR": "celery"})
        env.pop("REPORT_PIPELINE_FIRST_MONTH", None)
        log(f"{stack.where}; Celery workers {', '.join(WORKERS)}")
        served = {**env, "DAGSTER_HOME": str(home), "REPORT_PIPELINE_WORK": str(root / "work")}
        os.environ.update(served)  # this process reads the instance (Postgres) afterwards
        with (
            local_celery.workers(root / "workers", WORKERS, env, redis.url(0)) as workers,
            dagster_dev(root, served) as live,
        ):
            live.workers = tuple(worker.process.pid for worker in workers)
            live.stop_sensor("new_report_sensor")  # before the reports arrive
            for month in months:
                s3.put_object(Bucket=inbox, Key=f"{INBOX_PREFIX}/{month}/{args.report.name}",
                              Body=args.report.read_bytes())  # fmt: skip
            result = run_backfill(live, home, months, args)
        check_manifests(S3Store(s3, bucket, PREFIX), months, counts)
    return result
