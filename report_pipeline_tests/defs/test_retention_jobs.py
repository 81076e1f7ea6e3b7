"""Retention through Dagster: cleanup_job, retention_audit_job, the checks' views, schedules."""

from datetime import timedelta

import dagster as dg
import pytest

from report_pipeline.core.retention import iso, parse_iso, utc_now
from report_pipeline.definitions import defs
from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.checks import retention_checks
from report_pipeline.defs.cleanup import cleanup_job
from report_pipeline.defs.clock import ClockResource
from report_pipeline.defs.jobs import extract_report_job, retention_audit_job
from report_pipeline_tests.defs.conftest import events


@pytest.fixture
def run_job(instance, resources):
    def run(job_name: str, at: str = "", **tags) -> dg.ExecuteInProcessResult:
        local = dg.Definitions(
            assets=[report_manifest], asset_checks=[retention_checks],
            jobs=[extract_report_job, cleanup_job, retention_audit_job],
            resources={**resources, "clock": ClockResource(fixed=at)},
        )  # fmt: skip
        job = local.resolve_job_def(job_name)
        return job.execute_in_process(instance=instance, tags=tags, raise_on_error=False)

    return run


def check_results(result) -> dict:
    return {e.asset_check_key.name: e for e in result.get_asset_check_evaluations()}


def test_schedules_run_by_default_and_name_their_jobs():
    cleanup = defs.resolve_schedule_def("cleanup_schedule")
    audit = defs.resolve_schedule_def("retention_audit_schedule")
    assert (cleanup.job_name, cleanup.cron_schedule) == ("cleanup_job", "*/5 * * * *")
    assert audit.job_name == "retention_audit_job" and audit.cron_schedule == "15 5 * * *"
    assert {cleanup.default_status, audit.default_status} == {dg.DefaultScheduleStatus.RUNNING}
    assert not defs.resolve_job_def("extract_report_job").asset_layer.asset_graph.asset_check_keys


def test_audit_passes_then_fails_past_the_long_clock_then_passes_after_cleanup(
    inbox, run_job, tmp_path
):
    inbox("truncated_jpeg.pdf")
    made = run_job("extract_report_job", **{"dagster/partition": "2026-10"})
    assert made.success
    audit = run_job("retention_audit_job")
    assert audit.success and all(e.passed for e in check_results(audit).values())
    assert set(check_results(audit)) == {"work_material_deleted_by_deadline",
        "archive_within_retention", "manifest_complete", "archive_matches_manifest"}  # fmt: skip
    expiry = made.output_for_node("report_manifest")["manifest_key"]
    deadline = _archive_deadline(tmp_path / "store" / expiry)
    later = iso(deadline + timedelta(minutes=11))
    failing = check_results(run_job("retention_audit_job", at=later))["archive_within_retention"]
    assert not failing.passed and failing.metadata["overdue_bytes"].value > 0
    assert failing.metadata["oldest_overdue_item"].value.startswith("revision ")
    cleanup = run_job("cleanup_job", at=later)
    assert cleanup.success
    (observation,) = events(cleanup, "ASSET_OBSERVATION")
    assert observation.partition == "2026-10"
    assert observation.asset_observation_data.asset_observation.metadata["deletion"].value == (
        "archive"
    )
    after = check_results(run_job("retention_audit_job", at=later))
    assert all(e.passed for e in after.values())
    lag = after["archive_within_retention"].metadata["cleanup_lag_p95_seconds"].value
    assert lag == pytest.approx(660, abs=90)


def _archive_deadline(manifest_path):
    import json

    return parse_iso(json.loads(manifest_path.read_text())["deadlines"]["archive_delete_by"])


_HELD = []  # a context never exited, as in a killed process


def test_cleanup_job_removes_a_crashed_workers_dir_after_its_lease(run_job, tmp_path):
    from report_pipeline.core.workdir import new_lease, private_workdir

    held = private_workdir(tmp_path / "work", new_lease("dead/step", utc_now(), 60, 15))
    workdir = held.__enter__()  # never exited: the worker "died"
    _HELD.append(held)
    soon = run_job("cleanup_job", at=iso(utc_now() + timedelta(minutes=30)))
    assert soon.success and workdir.exists()
    late = run_job("cleanup_job", at=iso(utc_now() + timedelta(minutes=61)))
    assert late.success and not workdir.exists()
    output = events(late, "STEP_OUTPUT")[0]
    assert output.event_specific_data.metadata["deleted_workdir"].value == 1


def test_checks_run_with_a_partition_cover_that_month(inbox, run_job):
    inbox("no_images.pdf")
    inbox("repeated_image.pdf", month="2026-09")
    assert run_job("extract_report_job", **{"dagster/partition": "2026-10"}).success
    assert run_job("extract_report_job", **{"dagster/partition": "2026-09"}).success
    everything = check_results(run_job("retention_audit_job"))
    one_month = check_results(run_job("retention_audit_job", **{"dagster/partition": "2026-09"}))
    assert everything["manifest_complete"].metadata["revisions_checked"].value == 2
    assert one_month["manifest_complete"].metadata["revisions_checked"].value == 1
