"""`new_report_sensor` on a real sqlite instance: what a tick requests, skips and reports, and
that the requested run stages exactly the file intake validated."""

from __future__ import annotations

import dagster as dg
import pytest

from report_pipeline.core.intake.submission import REVISION_TAG
from report_pipeline.defs.reports.sensors import MAX_READS_PER_TICK, new_report_sensor
from report_pipeline_tests.conftest import files_under
from report_pipeline_tests.defs.conftest import events


@pytest.fixture
def tick(instance, resources):
    """Evaluate the sensor like a daemon tick would, carrying the cursor between calls."""
    state = {"cursor": None}

    def evaluate() -> dg.SensorResult:
        context = dg.build_sensor_context(
            instance=instance, cursor=state["cursor"], resources=resources
        )
        result = new_report_sensor(context)
        state["cursor"] = result.cursor
        return result

    return evaluate


def run(defs, instance, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """Execute a run request as the daemon would launch it: its config, tags and partition."""
    return defs.resolve_job_def("extract_report_job").execute_in_process(
        run_config=request.run_config, instance=instance, partition_key=request.partition_key,
        tags={**request.tags, "dagster/run_key": request.run_key}, raise_on_error=False,
    )  # fmt: skip


def test_a_tick_requests_each_months_new_report_and_logs_refusals(tick, drop, capsys):
    drop("no_images.pdf", folder="2026-08")
    drop("repeated_image.pdf", folder="2026-09", name="old.pdf", age=50)
    drop("truncated_jpeg.pdf", folder="2026-09", name="new.pdf")
    drop("encrypted.pdf", folder="2026-10", name="Secret Plans.pdf")
    first = tick()
    assert [(r.partition_key, r.tags["report_pipeline/report_id"]) for r in first.run_requests] == [
        ("2026-08", "inbox-2026-08"), ("2026-09", "inbox-2026-09")
    ]  # fmt: skip
    assert all(r.run_key == r.tags[REVISION_TAG] for r in first.run_requests)
    logged = capsys.readouterr().err  # the tick's log in the UI
    assert "inbox 2026-10: refused (encrypted): PDF is encrypted" in logged
    assert "Secret" not in logged and "new.pdf" not in logged
    assert tick().skip_reason.skip_message == "no new or changed reports"  # reported once


def test_a_tick_with_only_refusals_says_why_it_skipped(tick, drop):
    drop("not_a_pdf.pdf", folder="2026-10", name="Secret Plans.pdf")
    skipped = tick()
    assert skipped.run_requests == []
    assert skipped.skip_reason.skip_message == (
        "inbox 2026-10: refused (not_pdf): file does not start with a %PDF signature"
    )


def test_the_requested_run_stages_exactly_the_validated_file(tick, drop, defs, instance):
    drop("truncated_jpeg.pdf", folder="2026-09", name="validated.pdf")
    (request,) = tick().run_requests
    drop("repeated_image.pdf", folder="2026-09", name="later.pdf", age=-100)  # now the newest
    result = run(defs, instance, request)
    assert result.success
    (event, _table) = result.get_asset_materialization_events()
    assert event.materialization.metadata["revision"].value == request.run_key


def test_identical_bytes_under_any_name_start_nothing_and_a_revision_starts_a_run(tick, drop):
    drop("no_images.pdf", folder="2026-09", name="v1.pdf", age=20)
    (first,) = tick().run_requests
    drop("no_images.pdf", folder="2026-09", name="v1 copy.pdf", age=10)
    assert "same bytes" in tick().skip_reason.skip_message
    drop("repeated_image.pdf", folder="2026-09", name="v2.pdf")
    (revised,) = tick().run_requests
    assert revised.partition_key == "2026-09" and revised.run_key != first.run_key


def test_a_revision_that_already_has_a_run_on_the_instance_is_not_requested(
    tick, drop, defs, instance, resources
):
    drop("no_images.pdf", folder="2026-09")
    (request,) = tick().run_requests
    assert run(defs, instance, request).success
    fresh = dg.build_sensor_context(instance=instance, resources=resources)
    skipped = new_report_sensor(fresh)  # a reset cursor: the instance's runs still dedupe
    assert skipped.run_requests == []
    assert f"revision {request.run_key} already has run" in skipped.skip_reason.skip_message


def test_a_ui_launch_tags_its_run_with_the_revision_so_the_sensor_starts_no_second_run(
    tick, drop, defs, instance
):
    drop("no_images.pdf", folder="2026-09")
    launched = defs.resolve_job_def("extract_report_job").execute_in_process(
        instance=instance, partition_key="2026-09", raise_on_error=False
    )  # as the UI launches a partition: no stage_report config, no intake tags
    assert launched.success
    tags = instance.get_run_by_id(launched.run_id).tags
    (event, _table) = launched.get_asset_materialization_events()
    assert tags[REVISION_TAG] == event.materialization.metadata["revision"].value
    assert tags["report_pipeline/report_id"] == "inbox-2026-09"
    assert tags["report_pipeline/source"] == "inbox"
    skipped = tick()
    assert skipped.run_requests == []
    assert f"already has run {launched.run_id}" in skipped.skip_reason.skip_message


def test_a_file_changed_after_intake_is_refused_by_the_run_and_writes_nothing(
    tick, drop, defs, instance, tmp_path
):
    path = drop("no_images.pdf", folder="2026-09")
    (request,) = tick().run_requests
    path.write_bytes(path.read_bytes() + b"\n% edited after intake\n")
    result = run(defs, instance, request)
    assert not result.success
    (failure,) = events(result, "STEP_FAILURE")
    assert "report refused (changed)" in failure.step_failure_data.error.message
    claim = tmp_path / "store" / "claims" / request.run_key / "000001.json"
    assert files_under(tmp_path / "store") == [claim]  # the sensor's claim, nothing of the report


def test_a_backlog_is_read_a_bounded_number_of_reports_per_tick(tick, drop):
    months = [f"2025-{m:02d}" for m in range(1, 13)]
    for month in months:
        drop("no_images.pdf", folder=month)
    first, second = tick(), tick()
    assert len(first.run_requests) == MAX_READS_PER_TICK
    assert sorted(r.partition_key for r in first.run_requests + second.run_requests) == months
    assert tick().skip_reason.skip_message == "no new or changed reports"
