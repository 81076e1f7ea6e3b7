"""The production configuration on a real PostgreSQL server: one fresh database per test session
(report_pipeline_tests/postgres.py), the committed deploy/production/dagster.yaml, and the
report backend as a fixture: the primary report source and the store on the session's S3 server
(moto, loopback), op outputs and compute logs in the same bucket; only the work root is local."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import dagster as dg
import pytest

from devstack.local_s3 import CREDENTIALS, private_bucket
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import Store
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.postgres import Database, production_home, test_database
from report_pipeline_tests.s3 import S3, client


@pytest.fixture(scope="session")
def postgres() -> Iterator[Database]:
    with test_database() as database:
        yield database


STORE_PREFIX, INBOX_PREFIX = "pipeline", "incoming"


@dataclass
class Backend:
    """Where reports arrive and where the archive lives, as a code location sees them: its
    environment. Reports go to a source bucket (`incoming/<month>/`), the store to a private
    bucket with default encryption (under `pipeline/`, beside Dagster's `dagster/io/` and
    `dagster/compute_logs/`); the work root is a local folder, as on a worker host."""

    root: Path
    endpoint: str
    bucket: str  # the private bucket: store, op outputs, compute logs
    inbox_bucket: str  # where teams put their reports

    @classmethod
    def create(cls, root: Path, endpoint: str) -> Backend:
        s3 = client(endpoint)
        private, inbox = (private_bucket(s3, f"t-{uuid.uuid4().hex[:20]}") for _ in range(2))
        return cls(root, endpoint, private, inbox)

    @cached_property
    def client(self):
        return client(self.endpoint)

    @property
    def env(self) -> dict[str, str]:
        return {
            **CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint,
            "REPORT_PIPELINE_S3_BUCKET": self.bucket, "REPORT_PIPELINE_S3_PREFIX": STORE_PREFIX,
            "REPORT_PIPELINE_INBOX_BUCKET": self.inbox_bucket,
            "REPORT_PIPELINE_INBOX_PREFIX": INBOX_PREFIX,
            "REPORT_PIPELINE_WORK": str(self.root / "work"),
        }  # fmt: skip

    def drop(self, fixture: str, month: str, name: str = "report.pdf") -> None:
        """A report arrives in the primary source for `month`."""
        key = f"{INBOX_PREFIX}/{month}/{name}"
        self.client.put_object(
            Bucket=self.inbox_bucket, Key=key, Body=fixture_pdf(fixture).read_bytes()
        )

    def remove(self, month: str) -> None:
        listed = self.client.list_objects_v2(
            Bucket=self.inbox_bucket, Prefix=f"{INBOX_PREFIX}/{month}/"
        )
        for item in listed.get("Contents", []):
            self.client.delete_object(Bucket=self.inbox_bucket, Key=item["Key"])

    def store(self) -> Store:
        return S3Store(self.client, self.bucket, STORE_PREFIX)

    def keys(self, prefix: str = "") -> list[str]:
        """Every key in the private bucket under `prefix`."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def assert_on_s3(self, report_runs: list[str], other_runs: list[str] = ()) -> None:
        """Each report run's op outputs went through the S3 IO manager; every run's captured
        stdout/stderr went to S3 compute logs; every object in the private bucket is encrypted.
        (Maintenance runs have no op outputs to store.)"""
        keys = self.keys()
        for run_id in report_runs:
            assert any(k.startswith(f"dagster/io/storage/{run_id}/") for k in keys), run_id
        for run_id in [*report_runs, *other_runs]:
            logs = [k for k in keys if k.startswith(f"dagster/compute_logs/storage/{run_id}/")]
            assert {k.rsplit(".", 1)[1] for k in logs} >= {"out", "err"}, run_id
        assert any(k.startswith("pipeline/archive/") for k in keys)
        for key in keys:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
            assert head["ServerSideEncryption"] == "AES256", key


@pytest.fixture
def backend(tmp_path: Path, s3: S3, monkeypatch) -> Backend:
    """A fresh backend on the session's S3 server, in this test's environment (`s3` clears any
    AWS_* the machine has and sets dummy credentials)."""
    backend = Backend.create(tmp_path / "backend", s3.endpoint)
    for name, value in backend.env.items():
        monkeypatch.setenv(name, value)
    return backend


@pytest.fixture
def pg_env(tmp_path: Path, postgres: Database, backend: Backend, monkeypatch) -> dict[str, str]:
    """DAGSTER_PG_URL, the deployment, the backend and DAGSTER_HOME (a copy of the production
    instance file, `<tmp>/home`), in this process's environment for the test (the instance's
    compute log manager needs the bucket, its local files go under DAGSTER_HOME)."""
    home = production_home(tmp_path / "home")
    env = {"DAGSTER_PG_URL": postgres.url, "REPORT_PIPELINE_DEPLOYMENT": "production",
           "DAGSTER_HOME": str(home)}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return {**backend.env, **env}


@pytest.fixture
def production_instance(pg_env) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.from_config(pg_env["DAGSTER_HOME"]) as instance:
        yield instance
