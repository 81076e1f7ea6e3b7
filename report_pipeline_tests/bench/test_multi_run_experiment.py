"""The multi_run experiment's code location (bench/experiments/multi_run_defs.py), so it does not
rot, and the Dagster 1.13 facts bench.experiments.multi_run reports: a ranged run (what
`BackfillPolicy.multi_run(N)` launches) records one materialization per month with that month's
metadata, carries no `dagster/partition` tag, and stores its one check result without a
partition while the months' check rows stay PLANNED. The dagster dev part runs by hand."""

import dagster as dg
import pytest

from bench.experiments import multi_run_defs
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.live  # every bench test is (conftest.LIVE_FOLDERS)

RANGE = {"dagster/asset_partition_range_start": "2025-01-01",
         "dagster/asset_partition_range_end": "2025-02-01"}  # fmt: skip


def test_a_ranged_run_records_each_month_but_checks_the_range_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MULTI_RUN_REPORT", str(fixture_pdf("repeated_image.pdf")))
    monkeypatch.setenv("MULTI_RUN_SCRATCH", str(tmp_path))
    key = dg.AssetKey("many_per_run_3")
    job = multi_run_defs.defs.resolve_implicit_global_asset_job_def()
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance, tags=RANGE, asset_selection=[key])
        assert result.success
        assert "dagster/partition" not in result.dagster_run.tags  # the per-month guard's key
        materialized = result.asset_materializations_for_node("many_per_run_3")
        assert [m.partition for m in materialized] == ["2025-01-01", "2025-02-01"]
        assert all(m.metadata["counts_archived"].value > 0 for m in materialized)
        check = dg.AssetCheckKey(key, multi_run_defs.CHECK)
        rows = instance.event_log_storage.get_asset_check_execution_history(check, 10)
    assert sorted((r.status.value, r.partition) for r in rows) == [
        ("PLANNED", "2025-01-01"), ("PLANNED", "2025-02-01"), ("SUCCEEDED", None)]  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # each month's store went with it
