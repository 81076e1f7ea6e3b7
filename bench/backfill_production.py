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
import uuid
from collections.abc import Callable
from pathlib import Path

from report_pipeline import local_celery, local_s3
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.local_postgres import fresh_database, local_server

PREFIX, INBOX_PREFIX = "pipeline", "incoming"
WORKERS = ["w1", "w2"]
AWS_CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
               "REPORT_PIPELINE_INBOX", "REPORT_PIPELINE_STORE")  # fmt: skip


def celery_backfill(
    root: Path, args: argparse.Namespace, months: list[str], counts: dict,
    log: Callable[[str], None],
) -> dict:  # fmt: skip
    from bench.backfill import FIXTURE, check_manifests, run_backfill
    from bench.backfill_live import dagster_dev

    home = root / "home"
    home.mkdir()
    shutil.copyfile(local_celery.PRODUCTION_YAML, home / "dagster.yaml")
    with (
        local_server() as server,
        fresh_database(server, "rp_bench_backfill") as url,
        local_s3.moto_server() as endpoint,
        local_celery.redis_server() as redis,
    ):
        s3 = local_s3.client(endpoint)
        bucket, inbox = (local_s3.private_bucket(s3, f"b-{uuid.uuid4().hex[:16]}") for _ in "12")
        env = {k: v for k, v in os.environ.items() if k not in AWS_CLEARED}
        env.update({
            **local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint,
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "DAGSTER_PG_URL": url,
            "REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_EXECUTOR": "celery",
            "REPORT_PIPELINE_S3_BUCKET": bucket, "REPORT_PIPELINE_S3_PREFIX": PREFIX,
            "REPORT_PIPELINE_INBOX_BUCKET": inbox, "REPORT_PIPELINE_INBOX_PREFIX": INBOX_PREFIX,
            **redis.env,
        })  # fmt: skip
        env.pop("REPORT_PIPELINE_FIRST_MONTH", None)
        kind = "throwaway" if server.throwaway else "shared"
        log(f"PostgreSQL {kind} {server.host}:{server.port}; moto {endpoint}; redis "
            f"127.0.0.1:{redis.port}; Celery workers {', '.join(WORKERS)}")  # fmt: skip
        served = {**env, "DAGSTER_HOME": str(home), "REPORT_PIPELINE_WORK": str(root / "work")}
        os.environ.update(served)  # this process reads the instance (Postgres) afterwards
        with (
            local_celery.workers(root / "workers", WORKERS, env, redis.url(0)) as workers,
            dagster_dev(root, served) as live,
        ):
            live.workers = tuple(worker.process.pid for worker in workers)
            live.stop_sensor("new_report_sensor")  # before the reports arrive
            for month in months:
                s3.put_object(Bucket=inbox, Key=f"{INBOX_PREFIX}/{month}/{FIXTURE.name}",
                              Body=FIXTURE.read_bytes())  # fmt: skip
            result = run_backfill(live, home, months, args)
        check_manifests(S3Store(s3, bucket, PREFIX), months, counts)
    return result
