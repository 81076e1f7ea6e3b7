"""Per-month checks: evaluated by the month's own run, recorded on its partition, never a
"Skipped" row beside "Passed"; thresholds as settings; blocking checks stop manifest_table."""

import dagster as dg
import pytest

from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.reports.month_checks import CHECKS
from report_pipeline_tests.defs.conftest import events, materialization

pytestmark = pytest.mark.slow

MONTH = "2026-10"


def ui_materialize(instance, resources, month=MONTH, **overrides) -> dg.ExecuteInProcessResult:
    """As the UI's "Materialize" of one partition: the asset, with every check declared on it."""
    return dg.materialize(
        [report_manifest, manifest_table], partition_key=month, instance=instance,
        resources={**resources, **overrides}, raise_on_error=False,
    )  # fmt: skip


def records(instance, name: str) -> list:
    key = dg.AssetCheckKey(report_manifest.key, name)
    return instance.event_log_storage.get_asset_check_execution_history(key, limit=10)


def test_a_launch_records_exactly_the_months_checks_all_passed_none_skipped(
    inbox, instance, resources, clock
):
    month = clock.latest_partition  # archived now, within 31 days of its end: on time
    inbox("repeated_image.pdf", month=month)
    result = ui_materialize(instance, resources, month, checks=CheckSettingsResource(due_day=31))
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert sorted(e.check_name for e in evaluations) == sorted(CHECKS)
    assert all(e.passed and e.partition == month for e in evaluations)
    assert all(e.metadata["month"].value == month for e in evaluations)
    for name in CHECKS:  # one row per check: SUCCEEDED on the month; no PLANNED row left over
        (record,) = records(instance, name)
        assert (record.status.value, record.partition, record.run_id) == (
            "SUCCEEDED", month, result.run_id,
        )  # fmt: skip
    revision = materialization(result)["revision"]
    assert {e.metadata["revision"].value for e in evaluations if "revision" in e.metadata} == {
        revision
    }


def test_per_month_figures_cover_that_month_only(inbox, instance, resources):
    inbox("repeated_image.pdf", month="2026-09")  # 2 distinct images
    inbox("no_images.pdf")
    september = ui_materialize(instance, resources, month="2026-09")
    october = ui_materialize(instance, resources)

    def verified(result):
        (match,) = [
            e for e in result.get_asset_check_evaluations()
            if e.check_name == "archive_matches_manifest"
        ]  # fmt: skip
        return match.metadata["objects_verified"].value

    assert (verified(september), verified(october)) == (2, 0)  # each month's own objects


def test_thresholds_are_settings_and_a_warning_does_not_block(inbox, instance, resources):
    inbox("truncated_jpeg.pdf")  # one of two images quarantined, on its first attempt
    strict = CheckSettingsResource(max_quarantine_pct=1.0, max_queue_age_p95_seconds=0.0)
    result = ui_materialize(instance, resources, checks=strict)
    assert result.success
    by_name = {e.check_name: e for e in result.get_asset_check_evaluations()}
    first, rate, age = (by_name[n] for n in ("first_attempt_validation", "quarantine_rate",
                                             "queue_age_p95"))  # fmt: skip
    assert first.passed and first.metadata["validated_first_attempt_pct"].value == 100.0
    assert not rate.passed and rate.severity == dg.AssetCheckSeverity.WARN
    assert rate.metadata["quarantined_pct"].value == 50.0
    assert rate.metadata["threshold_pct"].value == 1.0
    assert age.severity == dg.AssetCheckSeverity.WARN
    assert isinstance(age.metadata["decode_peak_rss_mib"].value, float)
    assert materialization(result, "manifest_table")["dagster/row_count"] == 2
    assert materialization(result)["quarantined_pct"] == 50.0  # plotted beside the other
    lenient = CheckSettingsResource(max_quarantine_pct=50.0, max_queue_age_p95_seconds=3600)
    again = ui_materialize(instance, resources, checks=lenient)
    late = "report_archived_on_time"  # October, archived now: late whatever the thresholds
    assert all(e.passed for e in again.get_asset_check_evaluations() if e.check_name != late)


def test_a_failing_blocking_check_stops_manifest_table_and_is_not_retried(
    inbox, instance, resources, tmp_path
):
    inbox("repeated_image.pdf")
    assert ui_materialize(instance, resources).success
    store = LocalStore(tmp_path / "store")
    (image, *_) = [o.key for o in store.list("archive") if "/images/" in o.key]
    (store.root / image).write_bytes(b"tampered")
    result = ui_materialize(instance, resources)  # same revision: the manifest is reused
    assert not result.success
    by_name = {e.check_name: e for e in result.get_asset_check_evaluations()}
    match = by_name["archive_matches_manifest"]
    assert not match.passed and match.metadata["hash_mismatches"].value == 1
    assert match.partition == MONTH
    assert events(result, "STEP_UP_FOR_RETRY") == []
    assert [e.asset_key for e in result.get_asset_materialization_events()] == [
        report_manifest.key
    ]  # the month's record stands; its table is not built from a bad archive
    (failure,) = events(result, "STEP_FAILURE")
    assert failure.step_key == "report_manifest.publish_manifest"
    assert "blocking asset check failed" in failure.step_failure_data.error.message
    assert events(result, "STEP_START", "manifest_table") == []


def test_a_month_without_a_report_succeeds_unmaterialized_and_warns_overdue(
    inbox, instance, resources
):
    inbox("no_images.pdf")
    assert ui_materialize(instance, resources).success
    empty = "2026-09"  # long past its due day (the 5th of the month after)
    result = ui_materialize(instance, resources, month=empty)
    assert result.success and result.get_asset_materialization_events() == []
    assert events(result, "STEP_FAILURE") == []
    (observation,) = [e.asset_observation_data.asset_observation for e in result.all_events
                      if e.event_type_value == "ASSET_OBSERVATION"]  # fmt: skip
    assert observation.partition == empty
    assert observation.description == f"no report: no report (*.pdf) for {empty} in the inbox"
    by_name = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert sorted(by_name) == sorted(CHECKS) and {e.partition for e in by_name.values()} == {empty}
    overdue = by_name.pop("report_archived_on_time")
    assert (overdue.passed, overdue.severity) == (False, dg.AssetCheckSeverity.WARN)
    assert overdue.description == f"no report archived for {empty}: overdue"
    for check in by_name.values():  # no revision to check: said, and not "Skipped"
        assert check.passed and check.description == f"no report for {empty}: no revision to check"
    for name in CHECKS:
        latest = {r.partition: r.status.value for r in records(instance, name)}
        # October keeps its results (archived now: late); September has every check evaluated
        # in a successful run: never "Execution failed", never "Skipped"
        late = "FAILED" if name == "report_archived_on_time" else "SUCCEEDED"
        assert (latest[MONTH], latest[empty]) == (late, late)
    assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.SUCCESS


def test_an_archived_month_whose_report_left_the_inbox_is_checked_on_its_revision(
    inbox, instance, resources
):
    report = inbox("repeated_image.pdf")
    first = ui_materialize(instance, resources)
    report.unlink()
    again = ui_materialize(instance, resources)
    assert again.success and again.get_asset_materialization_events() == []
    before = {e.check_name: (e.passed, e.description) for e in first.get_asset_check_evaluations()}
    after = {e.check_name: (e.passed, e.description) for e in again.get_asset_check_evaluations()}
    assert after == before  # the same revision, judged again


def test_damaged_pages_pass_manifest_complete_and_warn_on_the_partition(inbox, instance, resources):
    """cut_off_streams.pdf: every page's content is cut off. The run succeeds and builds the
    month's table; manifest_complete passes (each damaged page is accounted for by its row)
    and pages_drawn_whole warns on the month, naming the pages."""
    inbox("cut_off_streams.pdf")
    result = ui_materialize(instance, resources)
    assert result.success
    by_name = {e.check_name: e for e in result.get_asset_check_evaluations()}
    complete, whole = by_name["manifest_complete"], by_name["pages_drawn_whole"]
    assert complete.passed and complete.metadata["damaged_pages"].value == 3
    assert not whole.passed and whole.severity == dg.AssetCheckSeverity.WARN
    assert (whole.partition, whole.metadata["damaged_pages"].value) == (MONTH, "1, 2, 3")
    assert "page 2 (form (object 11): its data ends early, inside the operator r" in (
        whole.description or ""
    )
    assert materialization(result, "manifest_table")["dagster/row_count"] == 6
    assert materialization(result)["damaged_pages"] == 3
    (record,) = records(instance, "pages_drawn_whole")
    assert (record.status.value, record.partition) == ("FAILED", MONTH)  # a WARN, recorded
