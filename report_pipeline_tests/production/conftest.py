"""The production configuration on a real PostgreSQL server: one fresh database per test session
(report_pipeline_tests/postgres.py), the committed deploy/production/dagster.yaml, and the
report backend (source and store) as a fixture: local folders until the S3 store merges."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.storage import LocalStore, Store
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.postgres import Database, production_home, test_database


@pytest.fixture(scope="session")
def postgres() -> Iterator[Database]:
    with test_database() as database:
        yield database


@pytest.fixture
def pg_env(postgres: Database, monkeypatch) -> dict[str, str]:
    """DAGSTER_PG_URL and the deployment, in this process's environment for the test."""
    env = {"DAGSTER_PG_URL": postgres.url, "REPORT_PIPELINE_DEPLOYMENT": "production"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def production_instance(tmp_path: Path, pg_env) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.from_config(str(production_home(tmp_path / "home"))) as instance:
        yield instance


@dataclass
class Backend:
    """Where reports arrive and where the archive lives, as a code location sees them: its
    environment. Local folders now; the S3 store's version sets the bucket and endpoint."""

    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {f"REPORT_PIPELINE_{name.upper()}": str(self.root / name)
                for name in ("inbox", "store", "work")}  # fmt: skip

    def drop(self, fixture: str, month: str, name: str = "report.pdf") -> None:
        """A report arrives in the primary source for `month`."""
        target = self.root / "inbox" / month / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture_pdf(fixture), target)

    def store(self) -> Store:
        return LocalStore(self.root / "store")


@pytest.fixture
def backend(tmp_path: Path, monkeypatch) -> Backend:
    backend = Backend(tmp_path / "backend")
    for name, value in backend.env.items():
        monkeypatch.setenv(name, value)
    return backend
