"""The quarantine review in Dagster: `quarantine_review_job` (what the Launchpad runs) and the
daily `quarantine_review_sensor` that WARNs once an item is undecided past the deadline."""

from __future__ import annotations

from datetime import timedelta

import dagster as dg
import pytest

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.model.clock import iso
from report_pipeline.core.review.queue import pending
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.reports.review import quarantine_review_job, quarantine_review_sensor
from report_pipeline_tests.defs.test_month_checks import ui_materialize

pytestmark = pytest.mark.slow


def review(instance, resources, **decision) -> dg.ExecuteInProcessResult:
    config = {"ops": {"decide_quarantined_image": {"config": decision}}}
    return quarantine_review_job.execute_in_process(
        run_config=config, instance=instance, raise_on_error=False,
        resources={**resources, "clock": ClockResource()},
    )  # fmt: skip


def test_the_job_decides_and_records_the_new_revisions_checks(
    inbox, instance, resources, tmp_path, small_report
):
    inbox(small_report)
    assert ui_materialize(instance, resources).success
    store = LocalStore(tmp_path / "store")
    item = {i.reason: i for i in pending(store, ["2026-10"])}["signature_mismatch"]
    result = review(instance, resources, month="2026-10", sequence=item.sequence,
                    decision="accept", reviewer="ops.kim", note="a PNG")  # fmt: skip
    assert result.success
    _, manifest = latest_archived(store, "2026-10")
    assert manifest.previous_revision == item.revision
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["archive_matches_manifest"].passed and checks["quarantine_reviewed"].passed
    assert {e.partition for e in checks.values()} == {"2026-10"}
    assert checks["archive_matches_manifest"].metadata["revision"].value == manifest.parent_revision
    (table,) = [m for m in result.asset_materializations_for_node("decide_quarantined_image")
                if m.asset_key == dg.AssetKey("manifest_table")]  # fmt: skip
    rows = table.metadata["images"].value.records
    decided = [r.data for r in rows if r.data["sequence"] == item.sequence]
    assert table.partition == "2026-10" and decided[0]["review"] == "accepted"
    refused = review(instance, resources, month="2026-10", sequence=item.sequence,
                     decision="reject", reviewer="ops.kim")  # fmt: skip
    assert not refused.success
    (failure,) = [e for e in refused.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "refused (already_decided)" in failure.step_failure_data.error.message


def test_the_job_accepts_a_damaged_page_and_the_months_warning_clears(
    inbox, instance, resources, tmp_path
):
    inbox("cut_off_streams.pdf")
    assert ui_materialize(instance, resources).success
    for page in (1, 2, 3):
        result = review(instance, resources, month="2026-10", page=page, decision="accept",
                        reviewer="ops.kim", note="as printed")  # fmt: skip
        assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    whole = checks["pages_drawn_whole"]
    assert whole.passed and whole.partition == "2026-10" and whole.metadata["accepted"].value == 3
    _, manifest = latest_archived(LocalStore(tmp_path / "store"), "2026-10")
    assert {row.review.reviewer for row in manifest.pages} == {"ops.kim"}
    neither = review(instance, resources, month="2026-10", decision="accept", reviewer="ops.kim")
    assert not neither.success


def test_the_sensor_warns_once_an_item_is_undecided_past_the_deadline(
    inbox, instance, resources, tmp_path, clock, small_report
):
    inbox(small_report)
    assert ui_materialize(instance, resources).success
    later = clock.now + timedelta(days=31)
    sensor_resources = {**resources, "clock": ClockResource(fixed=iso(later))}
    with dg.build_sensor_context(instance=instance, resources=sensor_resources) as context:
        result = quarantine_review_sensor(context)
    (event,) = result.asset_events
    assert (event.check_name, event.passed, event.partition) == ("quarantine_reviewed", False,
                                                                 "2026-10")  # fmt: skip
    assert event.severity == dg.AssetCheckSeverity.WARN and event.metadata["overdue"].value == 2
    with dg.build_sensor_context(
        instance=instance, resources=sensor_resources, cursor=result.cursor
    ) as context:
        assert not quarantine_review_sensor(context).asset_events  # nothing changed
    store = LocalStore(tmp_path / "store")
    for item in pending(store, ["2026-10"]):
        assert review(instance, resources, month="2026-10", sequence=item.sequence,
                      decision="reject", reviewer="ops.kim").success  # fmt: skip
    with dg.build_sensor_context(
        instance=instance, resources=sensor_resources, cursor=result.cursor
    ) as context:
        (event,) = quarantine_review_sensor(context).asset_events
    assert event.passed and event.metadata["decided"].value == 2


@pytest.mark.parametrize(
    ("month", "decision", "said"),
    [("2026-1", "reject", "refused (bad_input): month must look like YYYY-MM, got '2026-1'"),
     ("2026-10", "maybe", "refused (bad_input): decision 'maybe' is not accept or reject"),
     ("2026-10", "reject", "refused (unknown_month): nothing is archived for 2026-10")],
)  # fmt: skip
def test_a_refused_decision_fails_with_one_line_and_its_facts_as_metadata(
    instance, resources, month, decision, said
):
    result = review(instance, resources, month=month, sequence=157, decision=decision,
                    reviewer="josé", note="cut off")  # fmt: skip
    assert not result.success
    (failure,) = result.get_step_failure_events()
    data = failure.step_failure_data
    assert data.user_failure_data.description == said and "\n" not in said
    facts = {k: v.value for k, v in data.user_failure_data.metadata.items()}
    assert facts == {"code": said[9:].split(")")[0], "month": month, "sequence": 157, "page": 0}
    # the one line is the error's whole message: no ReviewError chained under it
    assert data.error.message.rstrip("\n").endswith(f"Failure: {said}")
    assert data.error.cause is None and data.error.context is None
