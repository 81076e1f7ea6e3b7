"""The production stack the Celery benchmarks run on, all on loopback on this machine:
PostgreSQL at 127.0.0.1:5432 when it answers (else a throwaway server) with a fresh database,
moto's S3 server with two private buckets (store, inbox), and a throwaway redis-server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from devstack import local_celery, local_s3
from devstack.local_postgres import fresh_database, local_server

PREFIX, INBOX_PREFIX = "pipeline", "incoming"


@dataclass
class Stack:
    s3: Any  # a boto3 client on the moto server
    bucket: str
    inbox: str
    redis: Any  # local_celery's RedisServer
    env: dict[str, str]  # what every process of the deployment needs (no DAGSTER_HOME, no PATH)
    where: str  # a line saying what runs where


@contextmanager
def production_stack(database: str) -> Iterator[Stack]:
    with (
        local_server() as server,
        fresh_database(server, database) as url,
        local_s3.moto_server() as endpoint,
        local_celery.redis_server() as redis,
    ):
        s3 = local_s3.client(endpoint)
        bucket, inbox = (local_s3.private_bucket(s3, f"b-{uuid.uuid4().hex[:16]}") for _ in "12")
        env = {
            **local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint,
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "DAGSTER_PG_URL": url,
            "REPORT_PIPELINE_DEPLOYMENT": "production",
            "REPORT_PIPELINE_S3_BUCKET": bucket, "REPORT_PIPELINE_S3_PREFIX": PREFIX,
            "REPORT_PIPELINE_INBOX_BUCKET": inbox, "REPORT_PIPELINE_INBOX_PREFIX": INBOX_PREFIX,
            **redis.env,
        }  # fmt: skip
        kind = "throwaway" if server.throwaway else "shared"
        where = (f"PostgreSQL {kind} {server.host}:{server.port}; moto {endpoint}; "
                 f"redis 127.0.0.1:{redis.port}")  # fmt: skip
        yield Stack(s3, bucket, inbox, redis, env, where)
