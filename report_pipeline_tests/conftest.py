from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage import LocalStore
from report_pipeline.core.worker import WorkerSettings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs"


def files_under(path: Path) -> list[Path]:
    """Every file below `path` (none when it does not exist)."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def fixture_pdf(name: str) -> Path:
    path = FIXTURES / name
    assert path.is_file(), f"missing fixture {name}: run `make fixtures`"
    return path


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def settings(tmp_path: Path) -> WorkerSettings:
    return WorkerSettings(tmp_path / "work")


@pytest.fixture
def run_fixture(store: LocalStore, settings: WorkerSettings) -> Callable[..., dict]:
    """Run a fixture PDF through the core pipeline (no Dagster) and return its manifest."""

    def run(name: str, **kwargs) -> dict:
        return run_report(store, fixture_pdf(name), settings, "inbox", "2026-10", **kwargs)

    return run


@pytest.fixture
def inbox(tmp_path: Path) -> Callable[[str, str], Path]:
    """Drop a fixture into `<tmp>/inbox/<month>/` under a chosen name."""

    def drop(name: str, month: str = "2026-10", as_name: str | None = None) -> Path:
        folder = tmp_path / "inbox" / month
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copyfile(fixture_pdf(name), folder / (as_name or name)))

    return drop


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """A real persistent (sqlite) instance in a temporary DAGSTER_HOME."""
    with dg.instance_for_test() as test_instance:
        yield test_instance
