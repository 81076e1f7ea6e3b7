"""Whole-archive retention through Dagster: image_archive (cleanup_job), its checks
(retention_audit_job), the schedules, and a month's failed run leaving those checks alone."""

import json
from datetime import timedelta

import dagster as dg
import pytest

from report_pipeline.core.model.clock import iso, parse_iso, utc_now
from report_pipeline.definitions import defs
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.retention.checks import archive_retention_checks
from report_pipeline.defs.retention.image_archive import image_archive
from report_pipeline.defs.retention.jobs import cleanup_job, retention_audit_job
from report_pipeline_tests.defs.conftest import events

pytestmark = pytest.mark.slow

WHOLE_ARCHIVE = {"work_material_deleted_by_deadline", "archive_within_retention"}


@pytest.fixture
def run_job(instance, resources):
    def run(job_name: str, at: str = "", **tags) -> dg.ExecuteInProcessResult:
        local = dg.Definitions(
            assets=[report_manifest, manifest_table, image_archive],
            asset_checks=[archive_retention_checks],
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


def test_whole_archive_checks_belong_to_image_archive_and_no_month_selects_them():
    month = defs.resolve_job_def("extract_report_job").asset_layer.asset_graph.asset_check_keys
    audit = defs.resolve_job_def("retention_audit_job").asset_layer.asset_graph.asset_check_keys
    assert {k.asset_key.to_user_string() for k in audit} == {"image_archive"}
    assert {k.name for k in audit} == WHOLE_ARCHIVE
    assert {k.asset_key.to_user_string() for k in month} == {"report_manifest"}
    assert not {k.name for k in month} & WHOLE_ARCHIVE
    cleanup = defs.resolve_job_def("cleanup_job").asset_layer.asset_graph.asset_check_keys
    assert cleanup == audit  # every janitor pass is audited after it


def test_a_months_failed_run_never_touches_the_whole_archive_checks(run_job, instance, inbox):
    assert run_job("retention_audit_job").success
    before = _latest_whole_archive(instance)
    inbox("not_a_pdf.pdf", month="2026-09")  # refused: the month's run fails
    failed = run_job("extract_report_job", **{"dagster/partition": "2026-09"})
    assert not failed.success
    assert {e.step_key for e in events(failed, "STEP_FAILURE")} == {"report_manifest.stage_report"}
    assert _latest_whole_archive(instance) == before
    assert all(r.status.value == "SUCCEEDED" for r in before.values())


def _latest_whole_archive(instance) -> dict:
    keys = [dg.AssetCheckKey(dg.AssetKey("image_archive"), name) for name in WHOLE_ARCHIVE]
    found = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    return {key.name: record for key, record in found.items()}


def test_audit_passes_then_fails_past_the_long_clock_then_passes_after_cleanup(
    inbox, run_job, tmp_path
):
    inbox("truncated_jpeg.pdf")
    made = run_job("extract_report_job", **{"dagster/partition": "2026-10"})
    assert made.success
    audit = run_job("retention_audit_job")
    assert audit.success and set(check_results(audit)) == WHOLE_ARCHIVE
    assert all(e.passed and e.partition is None for e in check_results(audit).values())
    manifest = tmp_path / "store" / made.output_for_node("report_manifest").manifest_key
    deadline = parse_iso(json.loads(manifest.read_text())["deadlines"]["archive_delete_by"])
    later = iso(deadline + timedelta(minutes=11))
    failing = check_results(run_job("retention_audit_job", at=later))["archive_within_retention"]
    assert not failing.passed and failing.metadata["overdue_bytes"].value > 0
    assert failing.metadata["oldest_overdue_item"].value.startswith("revision ")
    cleanup = run_job("cleanup_job", at=later)
    assert cleanup.success
    (observation,) = events(cleanup, "ASSET_OBSERVATION")
    assert observation.partition == "2026-10"
    assert observation.asset_key == report_manifest.key
    assert observation.asset_observation_data.asset_observation.metadata["deletion"].value == (
        "archive"
    )
    (materialized,) = cleanup.get_asset_materialization_events()
    figures = {k: v.value for k, v in materialized.materialization.metadata.items()}
    assert materialized.asset_key == image_archive.key and materialized.partition is None
    assert figures["deleted_archive"] == 1 and figures["deleted_bytes"] > 0
    assert figures["max_cleanup_lag_seconds"] == pytest.approx(660, abs=90)
    after = check_results(cleanup)  # the pass is audited in the same run, after the deletions
    assert set(after) == WHOLE_ARCHIVE and all(e.partition is None for e in after.values())
    assert all(e.passed for e in after.values())
    lag = after["archive_within_retention"].metadata["cleanup_lag_p95_seconds"].value
    assert lag == pytest.approx(660, abs=90)


_HELD = []  # a context never exited, as in a killed process


def test_cleanup_job_removes_a_crashed_workers_dir_after_its_lease(run_job, tmp_path):
    from report_pipeline.core.scratch.workdir import new_lease, private_workdir

    held = private_workdir(tmp_path / "work", new_lease("dead/step", utc_now(), 60, 15))
    workdir = held.__enter__()  # never exited: the worker "died"
    _HELD.append(held)
    soon = run_job("cleanup_job", at=iso(utc_now() + timedelta(minutes=30)))
    assert soon.success and workdir.exists()
    late = run_job("cleanup_job", at=iso(utc_now() + timedelta(minutes=61)))
    assert late.success and not workdir.exists()
    (materialized,) = late.get_asset_materialization_events()
    assert materialized.materialization.metadata["deleted_workdir"].value == 1
