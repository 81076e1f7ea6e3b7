"""Where a fault backfill runs: the embedded default (LocalStore, a sqlite instance) or the
production deployment (the S3 store on moto's server, a Postgres instance; the fixtures of
report_pipeline_tests/production/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.resources import FAULTS_ENV
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.production.conftest import (  # noqa: F401 - fixtures
    backend,
    pg_env,
    postgres,
    production_instance,
)

REPORT = "image_paths.pdf"  # 9 pages, 12 draws of 11 distinct images, every way a page draws


@dataclass
class Target:
    deployment: str  # local | production
    instance: dg.DagsterInstance
    store: Store  # the store itself, without faults: what the tests read back
    drop: Callable[[str], None]  # a month's report arrives in the primary source
    monkeypatch: pytest.MonkeyPatch

    def job(self, faults: str) -> dg.JobDefinition:
        """extract_report_job as the deployment loads it, with REPORT_PIPELINE_STORAGE_FAULTS
        set to `faults` (unset when empty) where the definitions load."""
        from report_pipeline.definitions import build_defs

        if faults:
            self.monkeypatch.setenv(FAULTS_ENV, faults)
        else:
            self.monkeypatch.delenv(FAULTS_ENV, raising=False)
        return build_defs(self.deployment).resolve_job_def("extract_report_job")

    def audit_job(self) -> dg.JobDefinition:
        from report_pipeline.definitions import build_defs

        self.monkeypatch.delenv(FAULTS_ENV, raising=False)
        return build_defs(self.deployment).resolve_job_def("retention_audit_job")


@pytest.fixture(params=["local", "production"])
def target(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    if request.param == "production":
        request.getfixturevalue("pg_env")
        s3 = request.getfixturevalue("backend")
        instance = request.getfixturevalue("production_instance")
        return Target("production", instance, s3.store(), lambda m: s3.drop(REPORT, m), monkeypatch)
    for name in ("INBOX", "STORE", "WORK"):
        monkeypatch.setenv(f"REPORT_PIPELINE_{name}", str(tmp_path / name.lower()))
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)

    def drop(month: str) -> None:
        folder = tmp_path / "inbox" / month
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.pdf").write_bytes(fixture_pdf(REPORT).read_bytes())

    instance = request.getfixturevalue("instance")
    return Target("local", instance, LocalStore(tmp_path / "store"), drop, monkeypatch)
