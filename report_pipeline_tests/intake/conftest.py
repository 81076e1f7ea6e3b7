from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    StoreResource,
    WorkerResource,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.reports.sensors import new_report_sensor
from report_pipeline_tests.conftest import fixture_pdf

PAST = 1_700_000_000  # an old mtime: the file has settled and is not "the newest" by accident


@pytest.fixture
def resources(tmp_path: Path) -> dict:
    return {
        "inbox": InboxResource(root=str(tmp_path / "inbox"), settle_seconds=0),
        "store": StoreResource(root=str(tmp_path / "store")),
        "settings": WorkerResource(work_root=str(tmp_path / "work")),
        "checks": CheckSettingsResource(),
    }


@pytest.fixture
def defs(resources: dict) -> dg.Definitions:
    """The report asset, its job and the sensor, on the tests' resources."""
    return dg.Definitions(
        assets=[report_manifest, manifest_table], jobs=[extract_report_job],
        sensors=[new_report_sensor], resources=resources,
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> LocalInboxSource:
    return LocalInboxSource("inbox", tmp_path / "inbox")


@pytest.fixture
def drop(tmp_path: Path) -> Callable[..., Path]:
    """Put a fixture into `<tmp>/inbox/<folder>/<name>` with a given age (mtime offset)."""

    def put(fixture: str, folder: str = "2026-10", name: str = "", age: int = 0) -> Path:
        target = tmp_path / "inbox" / folder / (name or fixture)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixture_pdf(fixture), target)
        os.utime(target, (PAST - age, PAST - age))
        return target

    return put
