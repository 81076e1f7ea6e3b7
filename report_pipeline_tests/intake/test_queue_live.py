"""The run queue and the revision claims through the real path: a real webserver and daemon
(`dagster dev`, the package's `live` server) with the committed dagster_home/dagster.yaml, and
`submit` over GraphQL.

- Two dead report runs hold both report slots: queued report runs wait, and the janitor
  (`cleanup_job`) is dequeued and runs anyway.
- Twenty concurrent submits of one report make exactly one run; the sensor then finds it."""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import dagster as dg
import pytest

from report_pipeline.core.intake import submission
from report_pipeline.core.intake.sources import registered_name
from report_pipeline.core.intake.submission import REVISION_TAG
from report_pipeline.definitions import defs
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline.graphql_api import GraphQLLauncher
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.intake.live import LiveDagster, wait_for

pytestmark = pytest.mark.live

SUBMITTERS = 20


def status(live: LiveDagster, run_id: str) -> str:
    query = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
    return live.graphql(query, {"id": run_id})["runOrError"]["status"]


def launch_cleanup(live: LiveDagster) -> str:
    """cleanup_job launched as its schedule or the UI does: no partition, no config."""
    launched = live.graphql(
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
            __typename ... on LaunchRunSuccess { run { runId } } } }""",
        {"p": {"selector": {"repositoryLocationName": "report_pipeline",
                            "repositoryName": "__repository__", "jobName": "cleanup_job"}}},
    )["launchRun"]  # fmt: skip
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def test_the_janitor_runs_while_dead_report_runs_hold_every_report_slot(live):
    job = defs.resolve_job_def("extract_report_job")
    with dg.DagsterInstance.from_config(str(live.root / "home")) as instance:
        dead = [  # runs whose process died: STARTED for ever (until run monitoring fails them)
            instance.create_run_for_job(job, tags={"dagster/partition": month},
                                        status=dg.DagsterRunStatus.STARTED)
            for month in ("2026-01", "2026-02")
        ]  # fmt: skip
        reports = GraphQLLauncher(live.url, stage_report_run_config)
        waiting = [reports.launch(month, {}, {}) for month in ("2026-03", "2025-12")]
        try:
            janitor, started = launch_cleanup(live), time.monotonic()
            assert wait_for(lambda: status(live, janitor) == "SUCCESS", "the janitor's run", 120)
            took = time.monotonic() - started
            assert [status(live, run_id) for run_id in waiting] == ["QUEUED", "QUEUED"]
        finally:  # free the slots for the next test; those months have no report anyway
            for run in dead:
                instance.report_run_failed(run)
            cancel = "mutation($id: String!) { terminateRun(runId: $id) { __typename } }"
            for run_id in waiting:
                live.graphql(cancel, {"id": run_id})
    print(f"janitor queued→SUCCESS in {took:.1f} s behind two dead report runs")


def test_twenty_concurrent_submits_make_one_run_and_the_sensor_finds_it(live):
    upload = live.root / "inbox" / "uploads" / "race.pdf"
    upload.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(fixture_pdf("truncated_jpeg.pdf"), upload)
    inbox = InboxResource(root=str(live.root / "inbox"))
    store = StoreResource(root=str(live.root / "store")).get_store()
    settings = PipelineSettingsResource(work_root=str(live.root / "work")).settings()
    barrier = threading.Barrier(SUBMITTERS)

    def one_submit(_: int) -> submission.Submitted:
        launcher = GraphQLLauncher(live.url, stage_report_run_config)
        barrier.wait()
        return submission.submit(
            str(upload), "2026-04", inbox.report_sources(), settings,
            monthly_partitions.has_partition_key, launcher, store,
        )  # fmt: skip

    with ThreadPoolExecutor(SUBMITTERS) as pool:
        answers = list(pool.map(one_submit, range(SUBMITTERS)))
    revision = answers[0].admission.revision
    runs = live.runs({REVISION_TAG: revision})
    print(f"{SUBMITTERS} concurrent submits → {len(runs)} run(s)")
    assert len(runs) == 1
    assert sorted(a.status for a in answers) == ["duplicate"] * (SUBMITTERS - 1) + ["launched"]
    assert {a.run_id for a in answers} == {runs[0]["id"]}
    assert wait_for(lambda: status(live, runs[0]["id"]) == "SUCCESS", "the run", 180)
    registered = f"2026-04/{registered_name(answers[0].admission.source_hash)}"
    seen = f"inbox {registered}: revision {revision} already has run {runs[0]['id']}"
    wait_for(lambda: seen in live.skip_reasons(), "the sensor to find the submitted report", 60)
    assert len(live.runs({REVISION_TAG: revision})) == 1
    manifests = list((live.root / "store" / "archive" / "inbox-2026-04").glob("*/manifest.json"))
    assert len(manifests) == 1
