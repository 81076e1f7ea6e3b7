"""A monthly partition executed in process on the production instance: the run, its events and
the materialization are in the Postgres database; the archive in the S3 store, the op outputs
and compute logs in the same bucket, every object encrypted."""

from __future__ import annotations

import dagster as dg
import pytest

from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.definitions import build_defs

pytestmark = pytest.mark.live

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
MONTH = "2026-06"  # a month no other test in this folder uses


def test_a_partition_materializes_on_postgres(production_instance, backend, postgres):
    backend.drop("repeated_image.pdf", MONTH)
    job = build_defs("production").resolve_job_def("extract_report_job")
    result = job.execute_in_process(
        partition_key=MONTH, instance=production_instance, run_config=QUIET
    )
    assert result.success
    assert production_instance.get_run_by_id(result.run_id).tags["dagster/partition"] == MONTH
    event = production_instance.get_latest_materialization_event(dg.AssetKey("report_manifest"))
    assert event.run_id == result.run_id and event.dagster_event.partition == MONTH
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks.pop("report_archived_on_time") is False  # MONTH's report is archived late
    assert len(checks) == 7 and all(checks.values()), checks
    (stored,) = postgres.execute(
        f"SELECT count(*) FROM event_logs WHERE run_id = '{result.run_id}'"
    )  # the event log is Postgres's table, not a sqlite file
    assert stored > 10
    key = result.output_for_node("report_manifest").manifest_key
    manifest = read_manifest(backend.store(), key)
    assert manifest.state == "complete" and manifest.counts.distinct_images == 2
    backend.assert_on_s3([result.run_id])
