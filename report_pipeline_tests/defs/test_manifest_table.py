"""manifest_table: the month's manifest as a pandas table, stored privately beside it."""

import io

import dagster as dg
import pandas as pd
import pytest

from report_pipeline.core.archive.table import COLUMNS
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import (
    UI_COLUMNS,
    manifest_table,
    manifest_table_sensor,
)
from report_pipeline.defs.reports.ops import MONTH_GENERATION_TAG, PUBLISHED_MANIFEST_TAG
from report_pipeline_tests.defs.conftest import materialization

pytestmark = pytest.mark.slow

RUNNING = dg.DefaultSensorStatus.RUNNING


def run(instance, resources) -> dg.ExecuteInProcessResult:
    defs = dg.Definitions(
        assets=[report_manifest, manifest_table], jobs=[extract_report_job], resources=resources
    )
    return defs.resolve_job_def("extract_report_job").execute_in_process(
        partition_key="2026-10", instance=instance, raise_on_error=False
    )


def test_one_row_per_image_occurrence_with_schema_and_row_count(
    inbox, instance, resources, tmp_path
):
    inbox("truncated_jpeg.pdf")  # one archived, one quarantined
    result = run(instance, resources)
    assert result.success  # the report job builds the table
    meta = materialization(result, "manifest_table")
    assert meta["dagster/row_count"] == 2 and meta["written"] is True
    schema = meta["dagster/column_schema"]
    assert [c.name for c in schema.columns] == [name for name, _, _ in COLUMNS]
    revision = materialization(result)["revision"]
    assert meta["table_key"].startswith("archive/inbox-2026-10/") and revision in meta["table_key"]
    stored = tmp_path / "store" / meta["table_key"]
    assert stored.stat().st_mode & 0o077 == 0  # private, as every store object
    table = pd.read_csv(io.StringIO(stored.read_text()), keep_default_na=False)
    assert list(table.columns) == [name for name, _, _ in COLUMNS]
    assert sorted(table["state"]) == ["archived", "quarantined"]
    (bad,) = table[table["state"] == "quarantined"].to_dict("records")
    assert bad["reason"] == "truncated" and bad["format"] == ""
    (good,) = table[table["state"] == "archived"].to_dict("records")
    assert good["format"] == "png" and len(good["content_hash"]) == 64 and good["bytes"] > 0
    assert "x" in good["size"] and good["origin"] == "xobject"
    # publish_manifest left where the month stands for the table step (one check, no listings)
    tags = instance.get_run_by_id(result.run_id).tags
    assert tags[PUBLISHED_MANIFEST_TAG] == materialization(result)["manifest_key"]
    assert tags[MONTH_GENERATION_TAG] == "1"


def test_a_rerun_of_the_same_revision_writes_nothing(inbox, instance, resources, tmp_path):
    inbox("repeated_image.pdf")
    first = materialization(run(instance, resources), "manifest_table")
    stored = tmp_path / "store" / first["table_key"]
    before = stored.stat().st_mtime_ns
    again = materialization(run(instance, resources), "manifest_table")
    assert again["written"] is False and again["dagster/row_count"] == 15
    assert stored.stat().st_mtime_ns == before


def test_the_materialization_shows_each_occurrences_row_in_the_ui(inbox, instance, resources):
    inbox("truncated_jpeg.pdf")
    meta = materialization(run(instance, resources), "manifest_table")
    table = meta["images"]
    assert [c.name for c in table.schema.columns] == list(UI_COLUMNS)
    rows = [r.data for r in table.records]
    assert [(r["page"], r["sequence"], r["state"]) for r in rows] == [
        (1, 1, "quarantined"), (1, 2, "archived"),
    ]  # fmt: skip
    assert rows[0]["reason"] == "truncated" and len(rows[1]["content_hash"]) == 12
    assert meta["images_shown"] == "all 2 rows"


def test_past_the_ui_limit_the_first_rows_show_with_a_note(inbox, instance, resources, monkeypatch):
    monkeypatch.setattr("report_pipeline.defs.reports.manifest_table.UI_ROWS", 10)
    inbox("repeated_image.pdf")  # 15 occurrences
    meta = materialization(run(instance, resources), "manifest_table")
    assert len(meta["images"].records) == 10 and meta["dagster/row_count"] == 15
    assert meta["images_shown"].startswith("the first 10 of 15 rows; every row is in the CSV")


def test_a_launch_of_report_manifest_alone_is_followed_by_its_table(inbox, instance, resources):
    """What the asset page and a backfill launch: report_manifest only. The automation condition
    then asks for the same month's table, for an old month too, and for nothing else."""
    defs = dg.Definitions(
        assets=[report_manifest, manifest_table], sensors=[manifest_table_sensor],
        resources=resources,
    )  # fmt: skip
    assert defs.resolve_sensor_def("manifest_table_sensor").default_status == RUNNING
    start = dg.evaluate_automation_conditions(defs=defs, instance=instance)  # the sensor's first
    assert start.total_requested == 0
    inbox("repeated_image.pdf", month="2025-03")
    assert dg.materialize([report_manifest], partition_key="2025-03", instance=instance,
                          resources=resources).success  # fmt: skip
    first = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=start.cursor)
    assert first.get_requested_partitions(manifest_table.key) == {"2025-03"}
    assert dg.materialize([report_manifest, manifest_table], partition_key="2025-03",
                          instance=instance, resources=resources).success  # fmt: skip
    after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert after.total_requested == 0  # built with its manifest: nothing more to do
