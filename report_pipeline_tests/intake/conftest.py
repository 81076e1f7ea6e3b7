from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.reports.sensors import new_report_sensor
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.intake.live import (
    BACKFILL,
    LiveDagster,
    finished,
    launch_backfill,
    place,
    running_dagster,
    wait_for,
)

PAST = 1_700_000_000  # an old mtime: the file has settled and is not "the newest" by accident


@pytest.fixture(scope="package")
def live(tmp_path_factory) -> Iterator[LiveDagster]:
    """One webserver and daemon (`dagster dev`'s two processes) on the committed embedded
    instance for every live test in this package (test_live, test_queue_live), started once:
    the tests use months, tags and inbox folders of their own.

    As a person would in the UI: the sensor switched off and a backfill of three months
    launched, then the daemon. Its first loop submits the backfill's runs; once they succeed
    the months' files go and the sensor is switched back on."""
    root = tmp_path_factory.mktemp("live")
    with running_dagster(root) as server:
        server.set_sensor(running=False)
        for month in BACKFILL:
            place(root, "no_images.pdf", month, "report.pdf")
        server.backfill_id = launch_backfill(server, BACKFILL)
        server.start_daemon()
        backfill = {"dagster/backfill": server.backfill_id}
        wait_for(lambda: len(finished(server, backfill)) == 3, "the backfill's runs", 240)
        for month in BACKFILL:
            shutil.rmtree(root / "inbox" / month)
        server.set_sensor(running=True)
        yield server


@pytest.fixture
def resources(tmp_path: Path) -> dict:
    return {
        "inbox": InboxResource(root=str(tmp_path / "inbox"), settle_seconds=0),
        "store": StoreResource(root=str(tmp_path / "store")),
        "settings": PipelineSettingsResource(work_root=str(tmp_path / "work")),
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
