"""Where the fault tests run, on both deployments: the embedded default (LocalStore, a sqlite
instance) and production (the S3 store on moto's server, a Postgres instance; the fixtures of
report_pipeline_tests/production/conftest.py). `backfill`: a live webserver and daemon
(live_backfill.py); `target`: runs executed in this process, on a real instance."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from devstack.faults import with_store_faults
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.defs.conftest import resources  # noqa: F401 - a fixture
from report_pipeline_tests.faults.live_backfill import REPORT, LiveBackfill, embedded, production
from report_pipeline_tests.production.conftest import (  # noqa: F401 - fixtures
    backend,
    pg_env,
    postgres,
    production_instance,
)


@dataclass
class Target:
    deployment: str  # local | production
    instance: dg.DagsterInstance
    store: Store  # the store itself, without faults: what the tests read back
    drop: Callable[[str], None]  # a month's report arrives in the primary source
    monkeypatch: pytest.MonkeyPatch

    def job(self, faults: str) -> dg.JobDefinition:
        """extract_report_job as the deployment loads it, with the fault layer (`faults`, none
        when empty) in front of its store."""
        from report_pipeline.definitions import build_defs

        defs = with_store_faults(build_defs(self.deployment), faults)
        return defs.resolve_job_def("extract_report_job")

    def audit_job(self) -> dg.JobDefinition:
        from report_pipeline.definitions import build_defs

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


@pytest.fixture(params=["local", "production"])
def backfill(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveBackfill]:
    """A live webserver (the daemon starts when the test asks) with the fault spec the test
    module's SPEC names, on the embedded default or production."""
    spec, root = request.module.SPEC, tmp_path / "live"
    if request.param == "production":
        postgres, backend = request.getfixturevalue("postgres"), request.getfixturevalue("backend")
        with production(root, spec, postgres, backend, monkeypatch) as live:
            yield live
        return
    with embedded(root, spec, monkeypatch) as live:
        yield live
