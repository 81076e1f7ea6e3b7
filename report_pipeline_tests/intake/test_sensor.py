"""`new_report_sensor` on a real sqlite instance: what a tick requests, skips and reports, and
that the requested run stages exactly the file intake validated."""

from __future__ import annotations

import os
import shutil
import time

import dagster as dg
import pytest

from report_pipeline.core.intake.submission import REVISION_TAG
from report_pipeline.defs.reports.sensors import MAX_READS_PER_TICK, new_report_sensor
from report_pipeline_tests.conftest import files_under
from report_pipeline_tests.defs.conftest import events
from report_pipeline_tests.intake.conftest import PAST

pytestmark = pytest.mark.slow


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


def test_a_tick_requests_each_months_new_report_and_logs_refusals(tick, drop, capsys, tmp_path):
    drop("no_images.pdf", folder="2026-08")
    drop("repeated_image.pdf", folder="2026-09", name="old.pdf", age=50)
    drop("truncated_jpeg.pdf", folder="2026-09", name="new.pdf")
    drop("encrypted.pdf", folder="2026-10", name="Secret Plans.pdf")
    first = tick()
    assert [(r.partition_key, r.tags["report_pipeline/report_id"]) for r in first.run_requests] == [
        ("2026-08", "inbox-2026-08"), ("2026-09", "inbox-2026-09")
    ]  # fmt: skip
    assert all(r.run_key == r.tags[REVISION_TAG] for r in first.run_requests)
    logged = capsys.readouterr().err  # the tick's log in the UI: files by their month folder
    assert "inbox 2026-10/Secret Plans.pdf: refused (encrypted): PDF is encrypted" in logged
    assert "inbox 2026-09/new.pdf: new revision" in logged and str(tmp_path) not in logged
    assert tick().skip_reason.skip_message == "no new or changed reports"  # reported once


def test_a_tick_with_only_refusals_says_why_it_skipped(tick, drop):
    drop("not_a_pdf.pdf", folder="2026-10", name="Secret Plans.pdf")
    skipped = tick()
    assert skipped.run_requests == []
    assert skipped.skip_reason.skip_message == (
        "inbox 2026-10/Secret Plans.pdf: refused (not_pdf): no %PDF- signature within the first "
        "1,024 bytes"
    )


def test_the_requested_run_stages_exactly_the_validated_file(tick, drop, defs, instance):
    drop("truncated_jpeg.pdf", folder="2026-09", name="validated.pdf")
    (request,) = tick().run_requests
    drop("truncated_jpeg.pdf", folder="2026-09", name="copy.pdf", age=-100)  # same bytes, newer
    result = run(defs, instance, request)
    assert result.success
    (event, _table) = result.get_asset_materialization_events()
    assert event.materialization.metadata["revision"].value == request.run_key
    (staged,) = events(result, "STEP_OUTPUT", "stage_report")[:1]
    assert staged.event_specific_data.metadata["source_file"].value == "validated.pdf"


def test_identical_bytes_under_any_name_start_nothing_and_a_revision_starts_a_run(tick, drop):
    drop("no_images.pdf", folder="2026-09", name="v1.pdf", age=20)
    (first,) = tick().run_requests
    drop("no_images.pdf", folder="2026-09", name="v1 copy.pdf", age=10)
    assert tick().skip_reason.skip_message == (
        "inbox 2026-09/v1 copy.pdf: same content as the month's report (v1.pdf)"
    )
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


def test_a_file_overwritten_after_intake_is_a_new_arrival_and_the_old_run_extracts_nothing(
    tick, drop, defs, instance, tmp_path
):
    path = drop("no_images.pdf", folder="2026-09")
    (request,) = tick().run_requests
    path.write_bytes(path.read_bytes() + b"\n% edited after intake\n")
    result = run(defs, instance, request)
    assert result.success and result.get_asset_materialization_events() == []
    (observed,) = [e for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    why = observed.event_specific_data.asset_observation.metadata["not_the_months_report"].value
    assert (
        why.startswith("2026-09/no_images.pdf (sha256 ") and "new content in no_images.pdf" in why
    )
    claim = tmp_path / "store" / "claims" / request.run_key / "000001.json"
    stored = files_under(tmp_path / "store")
    assert claim in stored and all(p == claim or "arrivals" in p.parts for p in stored)
    (revised,) = tick().run_requests  # the new bytes: the month's report, on the next tick
    assert revised.run_key != request.run_key


def test_a_file_overwritten_in_place_is_requested_on_the_next_tick_without_a_sweep(tick, drop):
    path = drop("no_images.pdf", folder="2026-09")
    (first,) = tick().run_requests
    path.write_bytes(path.read_bytes() + b"\n% corrected\n")
    os.utime(path, (PAST, PAST))  # the mtime it had
    (second,) = tick().run_requests
    assert second.run_key != first.run_key and second.partition_key == "2026-09"


def test_a_copy_with_an_older_mtime_is_requested_and_a_superseded_copy_is_named(
    tick, drop, tmp_path
):
    drop("no_images.pdf", folder="2026-09", name="report.pdf")
    (first,) = tick().run_requests
    time.sleep(0.03)  # after the month's first look, on the file system's clock
    corrected = drop("repeated_image.pdf", folder="uploads", name="corrected.pdf", age=1000)
    shutil.copy2(corrected, tmp_path / "inbox" / "2026-09" / "corrected.pdf")  # cp -p
    (second,) = tick().run_requests
    assert second.run_key != first.run_key
    shutil.copy2(tmp_path / "inbox" / "2026-09" / "report.pdf", tmp_path / "report-v0.pdf")
    os.replace(tmp_path / "report-v0.pdf", tmp_path / "inbox" / "2026-09" / "report-v0.pdf")
    skipped = tick()
    assert skipped.run_requests == []
    assert skipped.skip_reason.skip_message.startswith(
        "inbox 2026-09/report-v0.pdf: same content as report.pdf, which arrived earlier ("
    )
    assert skipped.skip_reason.skip_message.endswith("); not the month's report")


def test_a_backlog_is_read_a_bounded_number_of_reports_per_tick(tick, drop):
    months = [f"2025-{m:02d}" for m in range(1, 13)]
    for month in months:
        drop("no_images.pdf", folder=month)
    first, second = tick(), tick()
    assert len(first.run_requests) == MAX_READS_PER_TICK
    assert sorted(r.partition_key for r in first.run_requests + second.run_requests) == months
    assert tick().skip_reason.skip_message == "no new or changed reports"
