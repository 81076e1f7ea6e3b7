"""Re-execute from failure on a persistent instance: after a dead letter (docs/operate.md's recovery
path) and after a run worker killed mid fan-out (what run retries do). Either way the month ends
with exactly one complete manifest and an archive that matches it, no orphan objects."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.operate import reexec_job
from report_pipeline_tests.operate.reexec_job import FAULT

pytestmark = pytest.mark.live

MONTH = "2026-10"
WORKER = f"""
import dagster as dg
from report_pipeline_tests.operate import reexec_job
with dg.DagsterInstance.get() as instance:
    dg.execute_job(dg.reconstructable(reexec_job.job), instance,
                   tags={{"dagster/partition": "{MONTH}"}})
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    return prepare_root(tmp_path, monkeypatch)


def prepare_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture report in MONTH's inbox folder, the roots (inbox, store, work) in the
    environment as the project reads them, DAGSTER_HOME at `home/` with telemetry off."""
    (tmp_path / "inbox" / MONTH).mkdir(parents=True)
    (tmp_path / "inbox" / MONTH / "report.pdf").write_bytes(
        fixture_pdf("monthly_report.pdf").read_bytes()
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    for name in ["inbox", "store", "work"]:
        monkeypatch.setenv(f"REPORT_PIPELINE_{name.upper()}", str(tmp_path / name))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.fixture
def instance(root: Path):
    with dg.DagsterInstance.from_config(str(root / "home")) as persistent:
        yield persistent


def job() -> dg.ReconstructableJob:
    return dg.reconstructable(reexec_job.job)


def from_failure(instance: dg.DagsterInstance, run_id: str) -> dg.ExecuteJobResult:
    options = dg.ReexecutionOptions.from_failure(run_id, instance)
    tags = {"dagster/partition": MONTH}  # as the UI's re-execution copies the parent's tags
    return dg.execute_job(
        job(), instance, reexecution_options=options, raise_on_error=False, tags=tags
    )


def assert_one_complete_manifest(root: Path) -> Manifest:
    store = LocalStore(root / "store")
    keys = [o.key for o in store.list("archive/") if o.key.endswith("/manifest.json")]
    assert len(keys) == 1, keys
    manifest = read_manifest(store, keys[0])
    assert manifest.state == "complete" and manifest.counts.pages_unaccounted == 0
    outcomes = retention_audit.audit_all(
        store, root / "work", utc_now(), RetentionPolicy(), month=MONTH
    )
    matches = {o.name: o for o in outcomes}["archive_matches_manifest"]
    assert matches.passed, matches.metadata  # every listed object, and no orphan
    assert not list(store.list("work/")) and not list(store.list("staged/"))
    return manifest


def step_events(result: dg.ExecuteJobResult, kind: str) -> list[str]:
    return sorted(e.step_key for e in result.all_events if e.event_type_value == kind)


def test_dead_letter_then_reexecute_from_failure(root, instance, monkeypatch):
    # the first archive step's write of its child records
    monkeypatch.setenv(FAULT, "put_bytes:1:archive/*/children/*")
    with dg.execute_job(job(), instance, tags={"dagster/partition": MONTH}) as first:
        assert not first.success
        (failed,) = step_events(first, "STEP_FAILURE")
        assert failed.startswith("report_manifest.archive_pages[")
        assert len(step_events(first, "STEP_SUCCESS")) == 1 + 7 + 6  # stage, extracts, archives
    with from_failure(instance, first.run_id) as second:
        assert second.success
        assert step_events(second, "STEP_SUCCESS") == [
            "manifest_table", failed, "report_manifest.publish_manifest"
        ]  # fmt: skip
    manifest = assert_one_complete_manifest(root)
    assert manifest.counts.pages == 140


def wait_for_step(instance: dg.DagsterInstance, prefix: str, count: int) -> str:
    """The run id once `count` steps starting with `prefix` have started."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for run in instance.get_runs():
            starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
            if sum(e.step_key.startswith(prefix) for e in starts) >= count:
                return run.run_id
        time.sleep(0.05)
    raise AssertionError(f"no run reached {count} x {prefix}")


@pytest.mark.parametrize("started", [1, 3])  # killed in the first extraction, or mid fan-out
def test_killed_worker_then_reexecute_from_failure(root, instance, started):
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER], env=dict(os.environ),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        run_id = wait_for_step(instance, "report_manifest.extract_pages[", started)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    run = instance.get_run_by_id(run_id)
    assert run.status == dg.DagsterRunStatus.STARTED  # nobody noticed: a dead CLI-style worker
    instance.report_run_failed(run, "worker killed by the test")
    with from_failure(instance, run_id) as second:
        assert second.success, step_events(second, "STEP_FAILURE")
        (publish,) = [
            e for e in second.all_events
            if e.event_type_value == "STEP_OUTPUT" and "publish_manifest" in e.step_key
            and e.step_output_data.output_name == "result"
        ]  # fmt: skip
        completed = publish.step_output_data.metadata["tasks_completed_here"].value
        assert completed >= 6 - (started - 1)  # the tasks Dagster's selection left out
    assert_one_complete_manifest(root)
