"""The production configuration live: a webserver and a daemon on deploy/production/dagster.yaml
with their own fresh Postgres database, the code location on REPORT_PIPELINE_DEPLOYMENT=
production: reports in an S3 source bucket, the store, op outputs (S3 IO manager) and compute logs
in a private S3 bucket (moto server on loopback). A three-month backfill, a sensor-triggered run
from the S3 source, then the cleanup job and the whole-archive checks; every run, event and check
result read back from Postgres, every object read back from S3."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from devstack.local_postgres import fresh_database
from report_pipeline_tests.intake.live import finished, launch_backfill, running_dagster, wait_for
from report_pipeline_tests.postgres import PRODUCTION_YAML, production_home
from report_pipeline_tests.production.conftest import Backend

pytestmark = pytest.mark.live

BACKFILL = ["2026-07", "2026-08", "2026-09"]
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
    __typename ... on LaunchRunSuccess { run { runId } } } }"""


def launch(live, job: str) -> str:
    selector = {"repositoryLocationName": "report_pipeline",
                "repositoryName": "__repository__", "jobName": job}  # fmt: skip
    launched = live.graphql(LAUNCH, {"p": {"selector": selector}})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def check_results(instance: dg.DagsterInstance, run_id: str) -> dict[str, bool]:
    evaluations = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    data = [e.dagster_event.event_specific_data for e in evaluations]
    return {d.check_name: d.passed for d in data}


def test_backfill_sensor_cleanup_and_checks_on_postgres_and_s3(
    tmp_path: Path, postgres, backend: Backend, monkeypatch
):
    root = tmp_path / "live"
    with fresh_database(postgres.server, "rp_live") as url:
        env = {**backend.env, "DAGSTER_PG_URL": url, "REPORT_PIPELINE_DEPLOYMENT": "production"}
        with running_dagster(root, PRODUCTION_YAML, env) as live:
            live.set_sensor(running=False)  # as a person would, while the backfill runs
            for month in BACKFILL:
                backend.drop("no_images.pdf", month)
            backfill_id = launch_backfill(live, BACKFILL)
            live.start_daemon()
            backfill = {"dagster/backfill": backfill_id}
            wait_for(lambda: len(finished(live, backfill)) == 3, "the backfill's runs", 120)
            for month in BACKFILL:
                backend.remove(month)

            live.set_sensor(running=True)
            backend.drop("repeated_image.pdf", "2026-10", "October report.pdf")
            sensor_runs = {"dagster/sensor_name": "new_report_sensor"}
            (run,) = wait_for(lambda: finished(live, sensor_runs), "the sensor's run", 120)
            assert run["tags"]["dagster/partition"] == "2026-10"

            cleanup, audit = launch(live, "cleanup_job"), launch(live, "retention_audit_job")
            for run_id in (cleanup, audit):
                wait_for(lambda r=run_id: _status(live, r) == "SUCCESS", f"run {run_id}", 120)

            monkeypatch.setenv("DAGSTER_PG_URL", url)
            home = production_home(tmp_path / "reader")
            monkeypatch.setenv("DAGSTER_HOME", str(home))
            with dg.DagsterInstance.from_config(str(home)) as instance:  # the same database
                # cleanup_schedule fires every 5 minutes: a scheduled janitor run may join in
                runs = [r for r in instance.get_runs() if "dagster/schedule_name" not in r.tags]
                described = [(r.job_name, r.status.value, dict(r.tags)) for r in runs]
                assert len(runs) == 6, described
                assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}, described
                checks = check_results(instance, audit)
                assert checks and all(checks.values()), checks
                month_checks = check_results(instance, run["id"])  # evaluated in the month's run
                assert month_checks.pop("report_archived_on_time") is False  # archived late
                assert month_checks and all(month_checks.values()), month_checks
            for month in [*BACKFILL, "2026-10"]:  # through the S3 store
                keys = [o.key for o in backend.store().list(f"archive/inbox-{month}/")]
                assert sum(k.endswith("/manifest.json") for k in keys) == 1, keys
            assert not list((root / "inbox").iterdir())  # nothing came through the local inbox
            reports = [r.run_id for r in runs if "dagster/partition" in r.tags]
            assert len(reports) == 4
            backend.assert_on_s3(reports, [cleanup, audit])


def _status(live, run_id: str) -> str:
    query = """query($r: ID!) { runOrError(runId: $r) { ... on Run { status } } }"""
    status = live.graphql(query, {"r": run_id})["runOrError"]["status"]
    assert status not in ("FAILURE", "CANCELED"), (run_id, status)
    return status
