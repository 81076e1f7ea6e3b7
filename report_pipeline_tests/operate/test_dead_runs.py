"""`dead_run_sensor` against a real killed worker: `dagster asset materialize` (its own process,
nobody watching it) is SIGKILLed mid extraction; the sensor marks the run failed and asks for a
fresh run of the month, which heals it. A live run is left alone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline import definitions
from report_pipeline.defs.deployment.deployment import deployment
from report_pipeline.defs.reports.dead_runs import (
    REPLACES_TAG,
    dead_report_runs,
    dead_run_sensor,
    process_alive_since,
)
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.operate.test_reexecution import MONTH, assert_one_complete_manifest

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]


def start_cli_run(root: Path) -> subprocess.Popen:
    home = root / "home"
    home.mkdir()
    shutil.copyfile(REPO / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    (root / "inbox" / MONTH).mkdir(parents=True)
    shutil.copyfile(fixture_pdf("monthly_report.pdf"), root / "inbox" / MONTH / "report.pdf")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.update({f"REPORT_PIPELINE_{n.upper()}": str(root / n) for n in ["inbox", "store", "work"]})
    command = [str(Path(sys.executable).parent / "dagster"), "asset", "materialize",
               "-m", "report_pipeline.definitions", "--select", "report_manifest",
               "--partition", MONTH]  # fmt: skip
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def extraction_started(instance: dg.DagsterInstance) -> str | None:
    for run in instance.get_runs():
        starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
        if any("extract_pages[" in (e.step_key or "") for e in starts):
            return run.run_id
    return None


def test_process_alive_since():
    assert process_alive_since(os.getpid(), time.time())
    assert not process_alive_since(os.getpid(), time.time() - 10**6)  # started after: reused pid
    assert not process_alive_since(2**22 + 1, time.time())  # no such process


def test_killed_cli_run_is_failed_and_replaced(tmp_path: Path, monkeypatch):
    for name in ["inbox", "store", "work"]:
        monkeypatch.setenv(f"REPORT_PIPELINE_{name.upper()}", str(tmp_path / name))
    # Loaded now, as a code location with these roots loads them (the roots are wired then).
    project = definitions.build_defs(deployment())
    worker = start_cli_run(tmp_path)
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        try:
            deadline = time.monotonic() + 60
            while not (run_id := extraction_started(instance)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert run_id, "extraction never started"
            assert dead_report_runs(instance) == []  # alive: left alone
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        killed_at = time.monotonic()
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED

        context = dg.build_sensor_context(instance=instance, definitions=project)
        (request,) = dead_run_sensor(context)
        detected = time.monotonic() - killed_at
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
        assert request.tags[REPLACES_TAG] == run_id and request.partition_key == MONTH
        assert dead_report_runs(instance) == []

        job = project.resolve_job_def("extract_report_job")
        healed = job.execute_in_process(
            instance=instance, partition_key=MONTH, tags=request.tags,
            run_config=request.run_config,
        )  # fmt: skip
        assert healed.success
        print(
            f"kill -> failed {detected:.2f} s, kill -> healed {time.monotonic() - killed_at:.2f} s"
        )
    assert_one_complete_manifest(tmp_path)
