"""Counts in the sensor's tick messages and the manifest summary read as English: "1 page"."""

from __future__ import annotations

import dagster as dg
import pytest

from report_pipeline.core.archive.manifest import build_manifest, sequenced
from report_pipeline.core.archive.summary import summary
from report_pipeline.core.model.wording import plural
from report_pipeline.defs.reports.sensors import MAX_READS_PER_TICK, new_report_sensor
from report_pipeline_tests.core.test_manifest import DEADLINES, REF, record

pytestmark = pytest.mark.slow


def test_plural_is_singular_for_exactly_one():
    assert [plural(n, "page") for n in (0, 1, 2)] == ["0 pages", "1 page", "2 pages"]
    assert plural(1, "more report", "more reports") == "1 more report"


def test_a_tick_says_1_page_and_1_more_report_waits(drop, instance, resources, capsys):
    drop("truncated_jpeg.pdf", folder="2026-10")  # one page
    for month in range(1, MAX_READS_PER_TICK + 1):
        drop("no_images.pdf", folder=f"2025-{month:02d}")  # three pages each
    context = dg.build_sensor_context(instance=instance, resources=resources)
    result = new_report_sensor(context)
    assert len(result.run_requests) == MAX_READS_PER_TICK
    logged = capsys.readouterr().err
    assert "(3 pages)" in logged and "1 more report waits for the next tick" in logged
    assert "(1 pages)" not in logged and "report(s)" not in logged
    again = new_report_sensor(dg.build_sensor_context(instance=instance, resources=resources,
                                                      cursor=result.cursor))  # fmt: skip
    second = capsys.readouterr().err
    assert "inbox 2026-10/truncated_jpeg.pdf: new revision" in second and "(1 page)" in second
    assert len(again.run_requests) == 1


def test_the_summary_of_demo_and_preview_counts_in_english():
    manifest = build_manifest(REF, {1: 1}, sequenced([record(1, 0)]), DEADLINES, "now")
    lines = summary(manifest, None).splitlines()
    assert lines[3] == "  images archived       1 occurrence, 1 distinct file (10 bytes)"
    assert len(lines) == 7 and not any("manifest" in line for line in lines)  # no location
