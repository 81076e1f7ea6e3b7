"""A partition backfill as the UI launches one, on a live webserver and daemon
(report_pipeline_tests/intake/live.py), on either deployment: the embedded default (LocalStore, a
sqlite instance from a copy of dagster_home/dagster.yaml) or production (the S3 store on moto's
server, Postgres, deploy/production/dagster.yaml). REPORT_PIPELINE_STORAGE_FAULTS is set in the
code location's environment, so every run worker has the fault layer; the test reads the runs
back through its own instance on the same storage, and the store without faults."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import dagster as dg
import pytest

from devstack.fault_runs import MonthRun, step_attempts
from devstack.faults import FAULTS_ENV
from devstack.local_postgres import fresh_database
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline_tests.intake.live import EMBEDDED, LiveDagster, place, running_dagster
from report_pipeline_tests.postgres import PRODUCTION_YAML, Database, production_home
from report_pipeline_tests.production.conftest import Backend

REPORT = "image_paths.pdf"  # 9 pages, 13 draws of 11 distinct images, every way a page draws
LAUNCH = """mutation($p: [String!], $c: RunConfigData) { launchPartitionBackfill(backfillParams: {
    assetSelection: [{path: ["report_manifest"]}], partitionNames: $p, runConfigData: $c}) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status } } }"""


@dataclass
class LiveBackfill:
    deployment: str  # local | production
    live: LiveDagster
    instance: dg.DagsterInstance  # this process's view of the same instance storage
    store: Store  # the store itself, without faults: what the test reads back
    drop: Callable[[str], None]  # a month's report arrives in the primary source
    journal: Path  # the fault layer's journal (devstack/faults.py), from every run worker
    backfill_id: str = ""

    def launch(self, months: list[str], pages_per_task: int) -> str:
        """Materialize → partitions → Launch backfill, as the UI sends it; the run config sets
        `stage_report`'s page groups (the UI's config editor)."""
        config = stage_report_run_config({"pages_per_task": pages_per_task})
        launched = self.live.graphql(LAUNCH, {"p": months, "c": config})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        self.backfill_id = launched["backfillId"]
        return self.backfill_id

    def status(self) -> str:
        """The backfill's status once the daemon has settled it ("" while REQUESTED)."""
        found = self.live.graphql(STATUS, {"id": self.backfill_id})["partitionBackfillOrError"]
        return found["status"] if found["status"] != "REQUESTED" else ""

    def month_runs(self) -> list[MonthRun]:
        """The backfill's runs, by month: status, wall time and each step's attempts."""
        runs = []
        tags = {"dagster/backfill": self.backfill_id}
        for record in self.instance.get_run_records(dg.RunsFilter(tags=tags)):
            run = record.dagster_run
            wall = (record.end_time or 0) - (record.start_time or 0)
            success = run.status == dg.DagsterRunStatus.SUCCESS
            month = run.tags["dagster/partition"]
            runs.append(MonthRun(month, run.run_id, success, wall,
                                 step_attempts(self.instance, run.run_id)))  # fmt: skip
        return sorted(runs, key=lambda r: r.month)

    def enqueued(self, run_id: str) -> bool:
        """The run waited in the run queue (the daemon's QueuedRunCoordinator) before it ran."""
        return bool(self.instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_ENQUEUED))

    def overlap(self) -> int:
        """The most backfill runs that were running at the same moment."""
        tags = {"dagster/backfill": self.backfill_id}
        spans = [(r.start_time, r.end_time) for r in self.instance.get_run_records(
            dg.RunsFilter(tags=tags))]  # fmt: skip
        return max(sum(s <= start < e for s, e in spans) for start, _ in spans)

    def audit_job(self) -> dg.JobDefinition:
        """retention_audit_job as this deployment loads it, here and without faults (the
        whole-archive checks have no retry policy)."""
        from report_pipeline.definitions import build_defs

        return build_defs(self.deployment).resolve_job_def("retention_audit_job")


def partition_limit(instance: dg.DagsterInstance) -> int:
    """The run queue's limit on report runs (tag `dagster/partition`, any value), from the
    instance's committed `concurrency: runs:` settings, as the daemon's queue reads them."""
    config = instance.get_concurrency_config().run_queue_config
    (limit,) = [
        c["limit"] for c in config.tag_concurrency_limits
        if c["key"] == "dagster/partition" and "value" not in c
    ]  # fmt: skip
    return limit


@contextmanager
def embedded(root: Path, spec: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveBackfill]:
    """The embedded default, `dagster dev`'s way: the local inbox, store and work roots."""
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    journal = root / "faults.jsonl"
    with running_dagster(root, EMBEDDED, {FAULTS_ENV: f"{spec},journal={journal}"}) as live:
        for name, value in live.env.items():  # for the whole-archive checks run afterwards
            monkeypatch.setenv(name, value)

        def drop(month: str) -> None:
            place(root, REPORT, month, "report.pdf")

        with dg.DagsterInstance.from_config(str(root / "home")) as instance:
            yield LiveBackfill("local", live, instance, LocalStore(root / "store"), drop, journal)


@contextmanager
def production(
    root: Path, spec: str, postgres: Database, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LiveBackfill]:
    """Production: a fresh Postgres database, the S3 store and S3 source on moto's server."""
    journal = root / "faults.jsonl"
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_DEPLOYMENT", "production")
    with fresh_database(postgres.server, "rp_faults") as url:
        env = {**backend.env, "DAGSTER_PG_URL": url, "REPORT_PIPELINE_DEPLOYMENT": "production",
               FAULTS_ENV: f"{spec},journal={journal}"}  # fmt: skip
        with running_dagster(root, PRODUCTION_YAML, env) as live:
            monkeypatch.setenv("DAGSTER_PG_URL", url)
            home = production_home(root / "reader")
            monkeypatch.setenv("DAGSTER_HOME", str(home))
            with dg.DagsterInstance.from_config(str(home)) as instance:
                drop = partial(backend.drop, REPORT)  # (month)
                yield LiveBackfill("production", live, instance, backend.store(), drop, journal)
