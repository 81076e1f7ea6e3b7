"""A run worker SIGKILLed mid extraction under a real webserver + daemon (what `dagster dev`
runs), with the project's dagster.yaml: the run is marked failed and retried from failure
without anyone, the month ends with one complete manifest and no orphan, and the janitor
deletes the dead worker's workdir once its lease is over, with an audit event."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import janitor
from report_pipeline.core.scratch.workdir import read_lease
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline.graphql_api import DagsterApiError, GraphQLLauncher
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.intake.live import LiveDagster, running_dagster, wait_for
from report_pipeline_tests.operate.test_reexecution import MONTH, assert_one_complete_manifest

pytestmark = pytest.mark.live

LOGS = """query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection {
    events { __typename ... on MessageEvent { message stepKey } } } } }"""
SETTINGS = stage_report_run_config({"pages_per_task": 20})  # 7 tasks: op config, per run
# The same knob as resource run config: refused at launch (without the refusal the work root
# would silently be the class default; see defs/deployment/resources.py).
RESOURCE_SETTINGS = {"resources": {"settings": {"config": {"pages_per_task": 20}}}}


def events(live: LiveDagster, run_id: str) -> list[dict]:
    return live.graphql(LOGS, {"id": run_id})["logsForRun"]["events"]


def worker_pid(live: LiveDagster, run_id: str) -> int | None:
    """The run worker's pid, once it is extracting (the "Started process for run" event)."""
    found = events(live, run_id)
    extracting = any(
        e["__typename"] == "ExecutionStepStartEvent" and "extract_pages[" in (e["stepKey"] or "")
        for e in found
    )
    pids = [re.search(r"Started process for run \(pid: (\d+)\)", e.get("message") or "")
            for e in found]  # fmt: skip
    pid = next((int(m.group(1)) for m in pids if m), None)
    return pid if extracting else None


def test_killed_worker_is_retried_and_its_workdir_swept(tmp_path: Path):
    root = tmp_path
    with running_dagster(root) as live:
        state = live.sensor("sensorState { id }")["sensorState"]["id"]
        live.graphql("mutation($id: String) { stopSensor(id: $id) { __typename } }", {"id": state})
        (root / "inbox" / MONTH).mkdir(parents=True)
        shutil.copyfile(fixture_pdf("monthly_report.pdf"), root / "inbox" / MONTH / "report.pdf")
        live.start_daemon()
        refused = GraphQLLauncher(live.url, lambda stage: RESOURCE_SETTINGS)
        with pytest.raises(DagsterApiError, match='RunConfigValidationInvalid.*"work_root"'):
            refused.launch(MONTH, {}, {})
        launcher = GraphQLLauncher(live.url, lambda stage: SETTINGS)
        run_id = launcher.launch(MONTH, {}, {})

        def extracting_in_a_workdir() -> int | None:
            """The worker's pid while it holds a private workdir (killed then, it leaves one)."""
            pid = worker_pid(live, run_id)
            return pid if pid and any((root / "work").rglob("w-*")) else None

        pid = wait_for(extracting_in_a_workdir, "the worker to extract in a workdir", 120)
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()

        month = {"dagster/partition": MONTH}
        failed = wait_for(
            lambda: [r for r in live.runs(month) if r["id"] == run_id and r["status"] == "FAILURE"],
            "the killed run to be marked failed", 60,
        )  # fmt: skip
        detected = time.monotonic() - killed
        retry = wait_for(
            lambda: [r for r in live.runs({"dagster/parent_run_id": run_id})
                     if r["status"] == "SUCCESS"],
            "the retry to succeed", 120,
        )  # fmt: skip
        healed = time.monotonic() - killed
        assert failed and retry[0]["tags"]["dagster/retry_number"] == "1"
        assert retry[0]["tags"]["dagster/retry_strategy"] == "FROM_FAILURE"
        print(f"\nkill -> failure detected {detected:.2f} s, kill -> healed {healed:.2f} s")

    assert_one_complete_manifest(root)
    left = [d for d in (root / "work").rglob("w-*") if d.is_dir()]
    leases = [read_lease(d) for d in left]
    assert left and all(lease.owner.startswith(run_id) for lease in leases)
    store = LocalStore(root / "store")
    after = max(lease.removable_from() for lease in leases)
    sweep = janitor.run(store, root / "work", after + timedelta(minutes=1), RetentionPolicy())
    assert {d.item for d in sweep.deletions if d.kind == "workdir"} == {d.name for d in left}
    assert not list((root / "work").rglob("w-*"))
    audited = [json.loads((store.root / o.key).read_text()) for o in store.list("audit/")]
    assert {a["item"] for a in audited if a["kind"] == "workdir"} == {d.name for d in left}
